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
    /**
     * How many more tokens than deltas the answer's text held at the breaks so far, by the gateway's tokenizer
     * ({@link #counted}): a provider that streams several tokens a chunk (Anthropic's and Gemini's OpenAI endpoints,
     * vLLM's speculative decoding or stream interval) delivers more tokens than deltas, and a resume asked for the
     * rest by deltas ran past max_tokens (found by hunt19 and hunt20).
     */
    int deltaUndercount;

    /** The answer's tokens delivered, reasoning not counted: its deltas, and the undercount the breaks found. */
    int answerTokens() {
        return deltas - reasoningDeltas + deltaUndercount;
    }

    /** The answer's text and deltas the last break counted up to ({@link #counted}). */
    private int countedChars;
    private int countedDeltas;

    /**
     * At a break: counts the answer's text delivered since the last break with {@code tokens} and adds how far its
     * deltas fall short of that, when that part holds at least {@value #SEVERAL} tokens a delta. Part by part, as each
     * came from one route: counted over the whole text, a first route's one-token deltas hid a resuming route's
     * three-token chunks, and a second resume asked for 7 tokens where 1 was left (26 tokens delivered for
     * {@code max_tokens: 20}; found by hunt29-b). The gateway's tokenizer is not the provider's, and counts some text
     * a little differently (Chinese text about 8 % more): a count near the deltas is the mismatch, and believing it
     * ended a resumed answer short of max_tokens (hunt18); several tokens a chunk count twice the deltas or more. A
     * count under the deltas is never believed (one delta is at least one token).
     */
    void counted(java.util.function.ToIntFunction<String> tokens) {
        int answerDeltas = deltas - reasoningDeltas;
        int partDeltas = answerDeltas - countedDeltas;
        if (content.length() > countedChars && partDeltas >= 0) {
            int part = tokens.applyAsInt(content.substring(countedChars));
            if (part >= SEVERAL * partDeltas && part - partDeltas >= MIN_UNDERCOUNT) {
                deltaUndercount += part - partDeltas;
            }
        }
        countedChars = content.length();
        countedDeltas = answerDeltas;
    }

    /**
     * The fewest tokens a part's count must exceed its deltas by to be believed ({@link #counted}): a short part of
     * two CJK words, one token each to the provider and two to the gateway's tokenizer, counts twice its deltas, and
     * the next resume was asked for 2 tokens too few (review29).
     */
    static final int MIN_UNDERCOUNT = 3;

    /** Tokens a delta from which a stream is taken to send several tokens a chunk ({@link #counted}). */
    static final double SEVERAL = 1.5;
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
