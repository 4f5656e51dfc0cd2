package dev.hedgerow.dispatch;

import com.fasterxml.jackson.databind.JsonNode;

/**
 * What the client has received so far: the exact content and reasoning text, whether a tool call is in
 * progress, and the finish reason. Resume continues from exactly this. Confined to its dispatch (guarded by it).
 */
final class Transcript {
    final StringBuilder content = new StringBuilder();
    final StringBuilder reasoning = new StringBuilder();
    /**
     * The tool calls' names and argument text the client received, and refusal and function-call text: billed with
     * the text when no usage is relayed.
     */
    final StringBuilder toolCalls = new StringBuilder();
    boolean toolCallStarted;
    /**
     * A refusal, legacy function call or audio reached the client: another route cannot continue it, so the stream
     * is not resumed after it; its refusal and function-call text is billed with the tool calls'.
     */
    boolean otherStarted;
    boolean roleSent;
    String finishReason;
    /**
     * Content and reasoning deltas delivered: the tokens generated so far (a stream sends one token a delta; the
     * pieces an inexact resume held while trimming its overlap count one each, though they go out as one).
     */
    int deltas;
    /** Of {@link #deltas}, those of reasoning alone: a resume's {@code max_tokens} counts the answer's only. */
    int reasoningDeltas;
    /** The field the client got reasoning in first ({@code reasoning_content} or {@code reasoning}), or null. */
    String reasoningField;

    /** The field reasoning goes to the client in: the one it first came in, else {@code reasoning_content}. */
    String reasoningField() {
        return reasoningField == null ? "reasoning_content" : reasoningField;
    }

    /**
     * A chunk's tool-call deltas reached the client: a call is under way, and its names and arguments are recorded
     * ({@code null} or not an array: nothing to record).
     */
    void toolCallsSent(JsonNode calls) {
        toolCallStarted = true;
        UpstreamReplies.toolCallText(calls, toolCalls);
    }

    /** A delta's refusal, function call or audio reached the client ({@link #otherStarted}). */
    void otherSent(JsonNode delta) {
        otherStarted = true;
        toolCalls.append(UpstreamReplies.otherText(delta));
    }

    boolean isEmpty() {
        return content.length() == 0 && reasoning.length() == 0 && !toolCallStarted && !otherStarted;
    }

    /** True while the stream is still in its reasoning phase (no visible content yet). */
    boolean inReasoning() {
        return content.length() == 0 && reasoning.length() > 0;
    }
}
