package dev.hedgerow.dispatch;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.hedgerow.api.ChatRequest;
import dev.hedgerow.api.Json;
import dev.hedgerow.api.Text;
import dev.hedgerow.dispatch.Attempt.Failure;

import java.io.IOException;
import java.math.BigDecimal;
import java.math.RoundingMode;
import java.time.Duration;
import java.time.Instant;
import java.time.ZonedDateTime;
import java.time.format.DateTimeFormatter;
import java.time.format.DateTimeParseException;
import java.util.List;
import java.util.Map;
import java.util.regex.Pattern;

/**
 * Reads what an upstream answers in the chat completions format: a streamed chunk's first choice, an error event's
 * message, whether a whole answer is one, an error body's code and the wait a provider asks for
 * ({@code retry-after-ms}, {@code Retry-After}). Stateless. Public for the prober, which reads its probes' chunks by
 * the same rules ({@link #firstChoice}).
 */
public final class UpstreamReplies {
    private UpstreamReplies() {
    }

    /**
     * The first choice of a streamed chunk.
     *
     * @param toolCalls the delta's {@code tool_calls}, as sent (null when absent)
     * @param other      a refusal, a legacy {@code function_call} or audio ({@link #holdsOther})
     * @param otherChars the chars of that refusal, function call or audio (its data and transcript), for the guard
     * @param finish     the choice's {@code finish_reason}, or null
     */
    public record Delta(String content, String reasoning, JsonNode toolCalls, boolean hasTools, boolean other,
                        int otherChars, String finish) {
        /** Content, reasoning, a tool call, a refusal, a function call or audio: what the client is waiting for. */
        public boolean substantive() {
            return !content.isEmpty() || !reasoning.isEmpty() || hasTools || other;
        }

        /**
         * Content, reasoning, or a refusal, function call or audio: one generated token (the output guard's and a
         * continuation's count). Without the others an endless refusal was relayed past {@code max_tokens} and the
         * output limit (found by review7).
         */
        boolean carriesText() {
            return !content.isEmpty() || !reasoning.isEmpty() || other;
        }

        /** Content, a refusal, a function call or audio: one token of the answer (the output guard's count). */
        boolean answerToken() {
            return !content.isEmpty() || other;
        }

        /** The chars of the answer this delta delivers: all but its reasoning. */
        int answerChars() {
            return content.length() + (hasTools ? toolCalls.toString().length() : 0) + otherChars;
        }
    }

    /** The streamed chunk's first choice, or null when the chunk has no choices (a usage-only chunk, say). */
    public static Delta firstChoice(JsonNode chunk) {
        JsonNode choices = chunk.get("choices");
        if (choices == null || !choices.isArray() || choices.isEmpty()) {
            return null;
        }
        return choice(choices.get(0));
    }

    /** One choice of a streamed chunk. */
    static Delta choice(JsonNode choice) {
        JsonNode delta = choice.path("delta");
        String content = text(delta.get("content"));
        String reasoning = reasoning(delta);
        JsonNode toolCalls = delta.get("tool_calls");
        boolean hasTools = toolCalls != null && toolCalls.isArray() && !toolCalls.isEmpty();
        String finish = finishReason(choice);
        boolean other = holdsOther(delta);
        return new Delta(content, reasoning, toolCalls, hasTools, other, other ? otherChars(delta) : 0, finish);
    }

    /**
     * A choice's {@code finish_reason}, or null while it has none: a blank one counts as none (SGLang 0.4.3 and
     * Ollama sent {@code ""} on every chunk; taken for a finish, a stream that then broke or stalled was relayed as
     * a whole answer, with no resume and no error; found by hunt17).
     */
    static String finishReason(JsonNode choice) {
        JsonNode f = choice.get("finish_reason");
        return f == null || f.isNull() || f.asText().isBlank() ? null : f.asText();
    }

    /**
     * Whether a streamed chunk's first choice cannot be read as one: not an object ({@code "choices":[null]}), or its
     * {@code delta} present but not an object (null counts as absent). Such a chunk is a malformed frame.
     */
    static boolean malformedChoice(JsonNode chunk) {
        JsonNode choices = chunk.get("choices");
        if (choices == null || !choices.isArray() || choices.isEmpty()) {
            return false;
        }
        JsonNode choice = choices.get(0);
        JsonNode delta = choice.get("delta");
        return !choice.isObject() || delta != null && !delta.isNull() && !delta.isObject();
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
     * Why a 200 body is not a usable chat completion (malformed, an error, no content and no finish, or no content
     * while its usage counts more than {@code ending} tokens beyond its reasoning: {@link #lostContent}), or null when
     * it is one. {@code ending} is asked only of an answer with nothing in it (it tokenizes the request's stops).
     */
    static Failure unusableWhole(JsonNode node, java.util.function.IntSupplier ending) {
        if (node == null || !node.isObject() || !node.path("choices").isArray() || node.path("choices").isEmpty()) {
            return Failure.invalid("malformed_body", "200 without a chat completion");
        }
        if (node.hasNonNull("error")) {
            return Failure.transport("upstream_error_body", node.get("error").toString());
        }
        JsonNode msg = node.path("choices").path(0).path("message");
        boolean empty = text(msg.get("content")).isEmpty() && !msg.path("tool_calls").isArray()
                && reasoning(msg).isEmpty();
        String finish = finishReason(node.path("choices").path(0));
        boolean unfinished = finish == null;
        if (unfinished ? empty : nothingIn(node.path("choices"))
                && lostContent(finish, node.get("usage"), ending.getAsInt())) {
            return Failure.invalid("zero_content", "200 with no content");
        }
        return null;
    }

    /**
     * Whether no choice of a whole answer holds anything: no text (a string, or content parts), reasoning, tool or
     * function call, refusal (OpenAI's structured-outputs refusal comes with content null) or audio.
     */
    private static boolean nothingIn(JsonNode choices) {
        for (JsonNode choice : choices) {
            if (!holdsNothing(choice.path("message"))) {
                return false;
            }
        }
        return true;
    }

    /** Whether no chunk's first choice holds anything ({@link #holdsNothing}): the chunks held before a finish. */
    static boolean nothingIn(List<ObjectNode> chunks) {
        for (ObjectNode chunk : chunks) {
            if (!holdsNothing(chunk.path("choices").path(0).path("delta"))) {
                return false;
            }
        }
        return true;
    }

    /**
     * Whether a message or a streamed delta holds what is neither text nor a tool call: a refusal (OpenAI's structured
     * outputs), a legacy {@code function_call} (the {@code functions} parameter) or audio. Streamed, each is the
     * answer as much as text is (found by hunt6: they were held as content-less chunks, cut after 64, and dropped
     * once text had begun).
     */
    static boolean holdsOther(JsonNode m) {
        return !text(m.get("refusal")).isEmpty() || m.hasNonNull("function_call") || m.hasNonNull("audio");
    }

    /** The chars a delta's refusal, function call and audio deliver (the output guard's count). */
    private static int otherChars(JsonNode m) {
        JsonNode audio = m.path("audio");
        return otherText(m).length() + text(audio.get("data")).length() + text(audio.get("transcript")).length();
    }

    /** The text of a delta's refusal and function call (name and arguments): what it delivers to be billed. */
    static String otherText(JsonNode m) {
        JsonNode f = m.path("function_call");
        return text(m.get("refusal")) + text(f.get("name")) + text(f.get("arguments"));
    }

    /**
     * Whether a message, or a streamed delta, holds nothing: no text (a string, or content parts), reasoning, tool or
     * function call, refusal or audio.
     */
    static boolean holdsNothing(JsonNode m) {
        return ChatRequest.contentText(m.get("content")).isEmpty() && reasoning(m).isEmpty()
                && !(m.path("tool_calls").isArray() && !m.path("tool_calls").isEmpty()) && !holdsOther(m);
    }

    /**
     * Whether an answer that finished with nothing in it (no content, reasoning or tool call) lost its text on the
     * way: its finish announces a call ({@link #announcesCall}), or it says it stopped ({@code stop}, not {@code length}, where a model that reasons in hidden can use every
     * token thinking) and its own usage counts more completion tokens than its reasoning and {@code ending}: the
     * tokens a server may count for ending an answer that wrote nothing (an end-of-sequence token, 1, as vLLM counts;
     * a resume that only finishes, the text it continues being whole, may count a few more, a template's end tokens
     * after the prefill, {@link #RESUME_ENDING}; and the stop sequence it matched, Dispatch's stopTokens). A 200 with
     * zero content, the Trifrost failure, then fails over as a truncation would; a model that truly answered nothing
     * (0 tokens, or no usage to tell) stays an empty but complete answer.
     */
    public static boolean lostContent(String finishReason, JsonNode usage, int ending) {
        if (announcesCall(finishReason)) {
            return true;
        }
        if (!"stop".equals(finishReason) || usage == null || !Billing.count(usage.get("completion_tokens"))) {
            return false;
        }
        JsonNode reasoning = usage.path("completion_tokens_details").get("reasoning_tokens");
        long thought = Billing.count(reasoning) ? reasoning.asLong() : 0;
        return usage.get("completion_tokens").asLong() > thought + ending;
    }

    /**
     * Whether a finish says the answer is a call ({@code tool_calls}, the legacy {@code function_call}): one with no call
     * in it lost the call on the way, whatever its usage counts (a tool loop given an empty turn; found by hunt20).
     */
    public static boolean announcesCall(String finishReason) {
        return "tool_calls".equals(finishReason) || "function_call".equals(finishReason);
    }

    /** The tokens a resume that only finishes may count for its ending before its finish counts as lost text. */
    static final int RESUME_ENDING = 8;

    /** The whole body as JSON, or null when it does not parse. */
    static JsonNode parseWhole(byte[] bytes) {
        try {
            return Json.parse(bytes);
        } catch (IOException e) {
            return null;
        }
    }

    /** The field the gateway adds to every streamed call ({@code include_usage}) that some servers refuse. */
    public static final String STREAM_OPTIONS = "stream_options";

    /**
     * The request field a provider's error body says it refuses: its {@code param}, else {@code max_tokens},
     * {@code temperature} or {@code stream_options} when its message names one (a server that words it without a
     * param); null for none. The error is read from OpenAI's envelope ({@code {"error": {...}}}) or, as vLLM answers
     * a request its schema refuses, from the body itself ({@code {"object": "error", "message": "[{'type':
     * 'extra_forbidden', 'loc': ('body', 'stream_options'), ...}]", "param": null, "code": 400}}); Azure OpenAI's
     * older API versions say {@code Unrecognized request argument supplied: stream_options}. The prober's rule (which
     * probe field to adapt) and the dispatcher's (whether to send a stream again without {@code stream_options}).
     */
    public static String refusedField(byte[] body) {
        JsonNode root;
        try {
            root = Json.parse(body);
        } catch (IOException | RuntimeException e) {
            return null;
        }
        JsonNode err = root.path("error").isObject() ? root.get("error") : root;
        if (err.hasNonNull("param") && err.get("param").isTextual() && !err.get("param").asText().isBlank()) {
            return err.get("param").asText();
        }
        // "Use 'max_completion_tokens' instead" names the field that would be taken, not the one refused
        String message = err.path("message").asText("").replace("max_completion_tokens", "");
        if (message.contains("max_tokens")) {
            return "max_tokens";
        }
        if (message.contains("temperature")) {
            return "temperature";
        }
        return message.contains(STREAM_OPTIONS) ? STREAM_OPTIONS : null;
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

    /**
     * The hold a provider's wait puts on the route: the wait of a capacity refusal (429 rate limited, 503
     * unavailable or overloaded, 529 Anthropic's overloaded), for which RFC 9110 gives Retry-After its meaning (how
     * long the service expects to be unable to serve); none on any other status.
     */
    static long holdMillis(int status, long retryAfterMillis) {
        return status == 429 || status == 503 || status == 529 ? retryAfterMillis : 0;
    }

    /**
     * The hold a provider's answer puts on its route, from its status and head ({@code headers}' names lower-cased):
     * {@link #holdMillis(int, long)} of the wait {@link #retryAfterMillis} reads there. The prober's rule as the
     * dispatcher's.
     */
    public static long holdMillis(int status, Map<String, String> headers, Instant now) {
        return holdMillis(status, retryAfterMillis(headers.get("retry-after-ms"), headers.get("retry-after"), now));
    }

    /** The longest wait a provider's retry headers are honoured for: a longer one (a later date) counts as this. */
    static final long LONGEST_RETRY_AFTER_MILLIS = Duration.ofDays(1).toMillis();

    /** A non-negative decimal number, as the OpenAI SDKs read both headers (floats); no sign, no exponent. */
    private static final Pattern DECIMAL = Pattern.compile("[0-9]+(\\.[0-9]*)?|\\.[0-9]+");

    /**
     * The wait a provider's answer asks for, in milliseconds (0: none), as the OpenAI SDKs read it: {@code
     * retry-after-ms} when it is a non-negative number, else {@code Retry-After} as delay-seconds or as an HTTP-date
     * (RFC 9110 section 10.2.3) relative to {@code now}. A fraction of a millisecond counts as a whole one (never
     * early); a date already passed is 0; anything over {@link #LONGEST_RETRY_AFTER_MILLIS} counts as that. A value
     * that is none of these (negative, not a number, a date in an obsolete form) is ignored.
     *
     * @param retryAfterMs the {@code retry-after-ms} header, or null
     * @param retryAfter   the {@code Retry-After} header, or null
     * @param now          the gateway's clock, what an HTTP-date is relative to
     */
    static long retryAfterMillis(String retryAfterMs, String retryAfter, Instant now) {
        BigDecimal ms = decimal(retryAfterMs);
        if (ms != null) {
            return clampedMillis(ms);
        }
        BigDecimal seconds = decimal(retryAfter);
        if (seconds != null) {
            return clampedMillis(seconds.movePointRight(3));
        }
        Instant date = httpDate(retryAfter);
        if (date == null) {
            return 0;
        }
        // the parser takes four-digit years only, so the difference cannot overflow
        return Math.max(0, Math.min(LONGEST_RETRY_AFTER_MILLIS, Duration.between(now, date).toMillis()));
    }

    private static BigDecimal decimal(String v) {
        if (v == null) {
            return null;
        }
        String t = v.trim();
        return DECIMAL.matcher(t).matches() ? new BigDecimal(t) : null;
    }

    private static long clampedMillis(BigDecimal ms) {
        BigDecimal whole = ms.setScale(0, RoundingMode.CEILING);
        return whole.compareTo(BigDecimal.valueOf(LONGEST_RETRY_AFTER_MILLIS)) >= 0 ? LONGEST_RETRY_AFTER_MILLIS
                : whole.longValueExact();
    }

    /**
     * An HTTP-date in its preferred form, IMF-fixdate ({@code Fri, 31 Dec 1999 23:59:59 GMT}), read by the JDK's RFC
     * 1123 parser (which also takes a one-digit day or a numeric zone, and refuses a day of the week that does not
     * match the date); null for anything else. The obsolete RFC 850 and asctime forms are not read (no provider
     * sends them, though RFC 9110 asks a recipient to accept them): they hold nothing.
     */
    private static Instant httpDate(String v) {
        if (v == null || v.length() > 64) {
            return null;
        }
        try {
            return ZonedDateTime.parse(v.trim(), DateTimeFormatter.RFC_1123_DATE_TIME).toInstant();
        } catch (DateTimeParseException e) {
            return null;
        }
    }

    static String shorten(String s) {
        return Text.clip(s, 300);
    }

    /**
     * A message's or delta's reasoning text: {@code reasoning_content} (DeepSeek, vLLM, Fireworks) or, without it,
     * {@code reasoning} (OpenRouter, NanoGPT); empty when neither.
     */
    static String reasoning(JsonNode messageOrDelta) {
        return messageOrDelta.hasNonNull("reasoning_content") ? text(messageOrDelta.get("reasoning_content"))
                : text(messageOrDelta.get("reasoning"));
    }

    /**
     * What tool calls bill: each call's function name and arguments, as the text a model generated (ids, types and
     * JSON punctuation are not its output); appended to {@code out}. Nothing for {@code null} or a non-array.
     */
    static StringBuilder toolCallText(JsonNode calls, StringBuilder out) {
        if (calls != null && calls.isArray()) {
            for (JsonNode call : calls) {
                JsonNode f = call.path("function");
                if (f.path("name").isTextual()) {
                    out.append(f.get("name").asText());
                }
                if (f.path("arguments").isTextual()) {
                    out.append(f.get("arguments").asText());
                }
            }
        }
        return out;
    }

    /** A JSON text field as a string: empty when absent or null. */
    static String text(JsonNode n) {
        return n == null || n.isNull() ? "" : n.asText("");
    }
}
