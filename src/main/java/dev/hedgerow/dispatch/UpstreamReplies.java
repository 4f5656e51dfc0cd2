package dev.hedgerow.dispatch;

import com.fasterxml.jackson.databind.JsonNode;
import dev.hedgerow.api.Json;
import dev.hedgerow.dispatch.Attempt.Failure;

import java.io.IOException;

/**
 * Reads what an upstream answers in the chat completions format: a streamed chunk's first choice, an error event's
 * message, whether a whole answer is one, an error body's code and a {@code retry-after}. Stateless.
 */
final class UpstreamReplies {
    private UpstreamReplies() {
    }

    /**
     * The first choice of a streamed chunk.
     *
     * @param toolCalls the delta's {@code tool_calls}, as sent (null when absent)
     * @param finish    the choice's {@code finish_reason}, or null
     */
    record Delta(String content, String reasoning, JsonNode toolCalls, boolean hasTools, String finish) {
        /** Content, reasoning or a tool call: text the client is waiting for. */
        boolean substantive() {
            return !content.isEmpty() || !reasoning.isEmpty() || hasTools;
        }

        /** Content or reasoning text: one generated token (the output guard's and a continuation's count). */
        boolean carriesText() {
            return !content.isEmpty() || !reasoning.isEmpty();
        }

        /** The text this delta delivers, in chars, for the output guard. */
        int chars() {
            return content.length() + reasoning.length() + (hasTools ? toolCalls.toString().length() : 0);
        }
    }

    /** The streamed chunk's first choice, or null when the chunk has no choices (a usage-only chunk, say). */
    static Delta firstChoice(JsonNode chunk) {
        JsonNode choices = chunk.get("choices");
        if (choices == null || !choices.isArray() || choices.isEmpty()) {
            return null;
        }
        JsonNode choice = choices.get(0);
        JsonNode delta = choice.path("delta");
        String content = text(delta.get("content"));
        String reasoning = delta.hasNonNull("reasoning_content") ? text(delta.get("reasoning_content"))
                : text(delta.get("reasoning"));
        JsonNode toolCalls = delta.get("tool_calls");
        boolean hasTools = toolCalls != null && toolCalls.isArray() && !toolCalls.isEmpty();
        String finish = choice.hasNonNull("finish_reason") ? choice.get("finish_reason").asText() : null;
        return new Delta(content, reasoning, toolCalls, hasTools, finish);
    }

    /** The SSE event's data as JSON, or null when it does not parse. */
    static JsonNode parse(String data) {
        try {
            return Json.parse(data);
        } catch (IOException e) {
            return null;
        }
    }

    /** The message of a streamed {@code error} object (or the error itself when it is not an object). */
    static String errorMessage(JsonNode err) {
        return err.isObject() ? err.path("message").asText("upstream error event") : err.asText();
    }

    /**
     * Why a 200 body is not a usable chat completion (malformed, an error, no content and no finish), or null when
     * it is one.
     */
    static Failure unusableWhole(JsonNode node) {
        if (node == null || !node.isObject() || !node.path("choices").isArray() || node.path("choices").isEmpty()) {
            return Failure.invalid("malformed_body", "200 without a chat completion");
        }
        if (node.hasNonNull("error")) {
            return Failure.transport("upstream_error_body", node.get("error").toString());
        }
        JsonNode msg = node.path("choices").path(0).path("message");
        boolean empty = text(msg.get("content")).isEmpty() && !msg.path("tool_calls").isArray()
                && text(msg.get("reasoning_content")).isEmpty();
        if (empty && node.path("choices").path(0).path("finish_reason").isNull()) {
            return Failure.invalid("zero_content", "200 with no content");
        }
        return null;
    }

    /** The whole body as JSON, or null when it does not parse. */
    static JsonNode parseWhole(byte[] bytes) {
        try {
            return Json.parse(bytes);
        } catch (IOException e) {
            return null;
        }
    }

    /** An error body's {@code error.code}, or null. */
    static String errorCode(byte[] bytes) {
        try {
            JsonNode n = Json.parse(bytes);
            return n.path("error").path("code").asText(null);
        } catch (IOException | RuntimeException e) {
            return null;
        }
    }

    static long parseRetryAfter(String v) {
        if (v == null) {
            return 0;
        }
        try {
            return Math.max(0, Long.parseLong(v.trim()));
        } catch (NumberFormatException e) {
            return 0;
        }
    }

    static String shorten(String s) {
        return s.length() > 300 ? s.substring(0, 300) : s;
    }

    /** A JSON text field as a string: empty when absent or null. */
    static String text(JsonNode n) {
        return n == null || n.isNull() ? "" : n.asText("");
    }
}
