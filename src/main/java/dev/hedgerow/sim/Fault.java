package dev.hedgerow.sim;

import com.fasterxml.jackson.annotation.JsonSubTypes;
import com.fasterxml.jackson.annotation.JsonTypeInfo;

import java.time.Instant;
import java.time.ZoneOffset;
import java.time.format.DateTimeFormatter;
import java.util.Locale;
import java.util.Map;

/**
 * One injected misbehaviour of the simulated upstream. A fault is either queued as a one-shot for the next
 * request to a model ({@link SimServer#enqueue}, {@code POST /sim/models/{model}/faults}) or rolled with a
 * probability from the model's script. In JSON a fault is an object with a {@code kind} (the names below) and
 * its fields in snake_case, e.g. {@code {"kind":"drop","after_tokens":5,"mid_code_point":true}}.
 *
 * <p>Token counts ({@code afterTokens}) count content deltas: text tokens, or argument pieces of a tool call;
 * reasoning deltas are not counted. Mid-stream faults sent to a non-streaming request act on the whole answer:
 * drops and early EOFs reset the connection, a stall delays the answer, a malformed frame makes the body
 * malformed JSON, an error event becomes a 500. An embeddings request ({@code /v1/embeddings}) takes them the same
 * way, as a whole answer; faults that only shape a stream leave its answer as usual. Immutable.
 */
@JsonTypeInfo(use = JsonTypeInfo.Id.NAME, property = "kind")
@JsonSubTypes({
        @JsonSubTypes.Type(value = Fault.HttpError.class, name = "http_error"),
        @JsonSubTypes.Type(value = Fault.ResetBeforeHeaders.class, name = "reset"),
        @JsonSubTypes.Type(value = Fault.NoResponse.class, name = "no_response"),
        @JsonSubTypes.Type(value = Fault.Drop.class, name = "drop"),
        @JsonSubTypes.Type(value = Fault.EmptyStream.class, name = "empty_stream"),
        @JsonSubTypes.Type(value = Fault.LostContent.class, name = "lost_content"),
        @JsonSubTypes.Type(value = Fault.Refuse.class, name = "refusal"),
        @JsonSubTypes.Type(value = Fault.IgnoreN.class, name = "ignore_n"),
        @JsonSubTypes.Type(value = Fault.NoDone.class, name = "no_done"),
        @JsonSubTypes.Type(value = Fault.HangAfterFinish.class, name = "hang_after_finish"),
        @JsonSubTypes.Type(value = Fault.EofBeforeFinish.class, name = "eof_before_finish"),
        @JsonSubTypes.Type(value = Fault.MalformedFrame.class, name = "malformed_frame"),
        @JsonSubTypes.Type(value = Fault.ErrorEvent.class, name = "error_event"),
        @JsonSubTypes.Type(value = Fault.Stall.class, name = "stall"),
        @JsonSubTypes.Type(value = Fault.StallKeptAlive.class, name = "stall_kept_alive"),
        @JsonSubTypes.Type(value = Fault.DropDuringReasoning.class, name = "drop_in_reasoning"),
        @JsonSubTypes.Type(value = Fault.Html200.class, name = "html_200"),
        @JsonSubTypes.Type(value = Fault.HtmlError.class, name = "html_error"),
        @JsonSubTypes.Type(value = Fault.GiantLine.class, name = "giant_line"),
        @JsonSubTypes.Type(value = Fault.Endless.class, name = "endless"),
        @JsonSubTypes.Type(value = Fault.SlowDrip.class, name = "slow_drip"),
        @JsonSubTypes.Type(value = Fault.Gate.class, name = "gate"),
})
public sealed interface Fault {

    /** 429 with a {@code Retry-After} header of the given seconds (null: no header). */
    static Fault rateLimited(Integer retryAfterSeconds) {
        return new HttpError(429, "rate_limit_exceeded", "rate_limit_exceeded", "Rate limit reached",
                retryAfterSeconds, 0);
    }

    /**
     * 429 whose {@code Retry-After} is an HTTP-date (RFC 9110's IMF-fixdate, e.g. {@code Fri, 31 Dec 1999 23:59:59
     * GMT}): wait until {@code until}, to the second.
     */
    static Fault rateLimitedUntil(Instant until) {
        return rateLimitedWith(Map.of("Retry-After", HTTP_DATE.format(until)));
    }

    /**
     * 429 with {@code retry-after-ms} (what the OpenAI SDKs prefer) of {@code millis}, and a {@code Retry-After} of
     * {@code retryAfterSeconds} beside it (null: none), as OpenAI and Azure OpenAI send them.
     */
    static Fault rateLimitedMillis(long millis, Integer retryAfterSeconds) {
        return new HttpError(429, "rate_limit_exceeded", "rate_limit_exceeded", "Rate limit reached",
                retryAfterSeconds, 0, Map.of("retry-after-ms", Long.toString(millis)));
    }

    /** 429 with these extra response headers, sent as given (any value, malformed ones included). */
    static Fault rateLimitedWith(Map<String, String> headers) {
        return new HttpError(429, "rate_limit_exceeded", "rate_limit_exceeded", "Rate limit reached", null, 0,
                headers);
    }

    /** RFC 9110's IMF-fixdate, the preferred HTTP-date form (two-digit day, always GMT). */
    DateTimeFormatter HTTP_DATE = DateTimeFormatter.ofPattern("EEE, dd MMM yyyy HH:mm:ss 'GMT'", Locale.US)
            .withZone(ZoneOffset.UTC);

    /** A bare error status (500, 502, 503, 504, 529, ...) with an OpenAI error envelope. */
    static Fault status(int status) {
        String type = switch (status) {
            case 529 -> "overloaded_error";
            case 503 -> "service_unavailable";
            case 504 -> "timeout";
            default -> status >= 500 ? "server_error" : "invalid_request_error";
        };
        return new HttpError(status, type, null, "Simulated upstream error " + status, null, 0);
    }

    /** 400 {@code context_length_exceeded}. */
    static Fault contextLengthExceeded() {
        return new HttpError(400, "invalid_request_error", "context_length_exceeded",
                "This model's maximum context length is exceeded", null, 0);
    }

    /** 400 content-filter refusal. */
    static Fault contentFilter() {
        return new HttpError(400, "invalid_request_error", "content_filter",
                "The response was filtered due to the prompt triggering the content management policy", null, 0);
    }

    static Fault reset() {
        return new ResetBeforeHeaders();
    }

    static Fault noResponse() {
        return new NoResponse();
    }

    static Fault dropAfter(int tokens) {
        return new Drop(tokens, false);
    }

    static Fault dropMidCodePoint(int afterTokens) {
        return new Drop(afterTokens, true);
    }

    static Fault dropInReasoning(int afterReasoningTokens) {
        return new DropDuringReasoning(afterReasoningTokens);
    }

    static Fault stall(int afterTokens, long ms) {
        return new Stall(afterTokens, ms);
    }

    static Fault stallForever(int afterTokens) {
        return new Stall(afterTokens, -1);
    }

    /** After {@code afterTokens} tokens the generation hangs for good behind a keep-alive comment every {@code everyMs}. */
    static Fault stallKeptAlive(int afterTokens, long everyMs) {
        return new StallKeptAlive(afterTokens, everyMs, false);
    }

    /** As {@link #stallKeptAlive}, but the heartbeat is a chunk with an empty delta. */
    static Fault stallKeptAliveByEmptyChunks(int afterTokens, long everyMs) {
        return new StallKeptAlive(afterTokens, everyMs, true);
    }

    /** After {@code afterTokens} tokens the stream waits at the gate {@code name} until it is opened. */
    static Fault gate(int afterTokens, String name) {
        return new Gate(afterTokens, name, -1);
    }

    /** As {@link #gate(int, String)}, but the stream goes on by itself after {@code timeoutMs} at the latest. */
    static Fault gate(int afterTokens, String name, long timeoutMs) {
        return new Gate(afterTokens, name, timeoutMs);
    }

    static Fault hangAfterFinish() {
        return new HangAfterFinish();
    }

    /**
     * An HTTP error answer in the OpenAI envelope, sent {@code delayMs} after the request arrived.
     *
     * @param retryAfterSeconds value of the {@code Retry-After} header; null sends none
     * @param headers           more response headers, sent as given (e.g. {@code retry-after-ms},
     *                          {@code x-should-retry}, a {@code Retry-After} HTTP-date); in JSON an object
     */
    record HttpError(int status, String type, String code, String message, Integer retryAfterSeconds, long delayMs,
                     Map<String, String> headers) implements Fault {
        public HttpError {
            headers = headers == null ? Map.of() : Map.copyOf(headers);
        }

        public HttpError(int status, String type, String code, String message, Integer retryAfterSeconds,
                         long delayMs) {
            this(status, type, code, message, retryAfterSeconds, delayMs, Map.of());
        }
    }

    /** The connection is reset (TCP RST) before any response header. */
    record ResetBeforeHeaders() implements Fault {
    }

    /** The request is accepted and never answered. */
    record NoResponse() implements Fault {
    }

    /**
     * The connection is reset after {@code afterTokens} content tokens. With {@code midCodePoint} the reset comes
     * in the middle of a multi-byte UTF-8 character: the frame of the first token at or after {@code afterTokens}
     * that holds a non-ASCII character is written up to half of that character's bytes (if no later token holds
     * one, the reset comes after the last token).
     */
    record Drop(int afterTokens, boolean midCodePoint) implements Fault {
    }

    /** 200 and SSE headers, the role-only chunk when {@code roleChunk}, then a clean end with no content. */
    record EmptyStream(boolean roleChunk) implements Fault {
    }

    /**
     * The text lost on the way (the Trifrost failure): 200, the role-only chunk, then the {@code stop} finish and the
     * usage (when asked for) counting every planned token, as if the answer had been sent, and [DONE]. Non-streaming:
     * a completion whose content is empty, its usage as planned (as {@link EmptyStream}).
     */
    record LostContent() implements Fault {
    }

    /**
     * The model refuses, as OpenAI's structured outputs do: its planned text comes as {@code delta.refusal} pieces
     * (streamed) or as {@code message.refusal} with {@code content: null} (whole), and it finishes {@code stop}. With
     * {@code dropAfter} at 0 or more, the stream is reset after that many pieces (no finish).
     */
    record Refuse(int dropAfter) implements Fault {
    }

    /** The model ignores {@code n}, as some servers do: it answers one choice, index 0, whatever was asked. */
    record IgnoreN() implements Fault {
    }

    /** The stream ends cleanly after the {@code finish_reason} chunk (and usage) without {@code [DONE]}. */
    record NoDone() implements Fault {
    }

    /**
     * The whole answer, its {@code finish_reason} chunk (and usage), then neither {@code [DONE]} nor the end of the
     * stream: the connection stays open until the caller hangs up. (Non-streaming: answered as usual.)
     */
    record HangAfterFinish() implements Fault {
    }

    /** The stream ends cleanly after {@code afterTokens} tokens: no {@code finish_reason}, no {@code [DONE]}. */
    record EofBeforeFinish(int afterTokens) implements Fault {
    }

    /** After {@code afterTokens} tokens a non-JSON {@code data:} frame is sent; the stream then goes on. */
    record MalformedFrame(int afterTokens) implements Fault {
    }

    /** After {@code afterTokens} tokens an error event {@code data: {"error":{...}}} is sent and the stream ends. */
    record ErrorEvent(int afterTokens, String message, String code) implements Fault {
    }

    /**
     * The connection is reset after {@code afterReasoningTokens} reasoning deltas, before any content (at the end
     * of the reasoning when the answer has fewer). A non-streaming request is reset at that moment.
     */
    record DropDuringReasoning(int afterReasoningTokens) implements Fault {
    }

    /** After {@code afterTokens} tokens nothing is sent for {@code ms} milliseconds (negative: forever). */
    record Stall(int afterTokens, long ms) implements Fault {
    }

    /**
     * After {@code afterTokens} tokens the generation stops for good while the connection is kept alive: a
     * keep-alive comment (with {@code emptyChunks}, a chunk whose delta is empty) every {@code everyMs}, forever, as
     * a proxy or server heartbeat goes on in front of a hung generation. Non-streaming: the answer never comes.
     */
    record StallKeptAlive(int afterTokens, long everyMs, boolean emptyChunks) implements Fault {
        public StallKeptAlive {
            if (everyMs < 1) {
                throw new IllegalArgumentException("every_ms must be at least 1");
            }
        }
    }

    /**
     * A proxy's HTML error page with status 200 and {@code text/html}, sent {@code delayMs} after the request
     * arrived, for streaming and non-streaming requests alike.
     */
    record Html200(long delayMs) implements Fault {
    }

    /** A proxy's HTML error page with an error {@code status} (e.g. a 404 or 403 from a load balancer), at once. */
    record HtmlError(int status) implements Fault {
    }

    /**
     * After {@code afterTokens} tokens one well-formed content frame whose text is {@code bytes} long (a single SSE
     * line of that size), then the stream goes on. Non-streaming: the answer's content is that text.
     */
    record GiantLine(int afterTokens, int bytes) implements Fault {
    }

    /**
     * After {@code afterTokens} tokens the stream never finishes: content tokens (the answer's text, over and over)
     * keep coming at the model's pace, at least one frame per millisecond, until the client hangs up.
     * Non-streaming: a chunked body that never ends.
     */
    record Endless(int afterTokens) implements Fault {
    }

    /**
     * After {@code afterTokens} tokens a frame is begun and then dripped one byte every {@code everyMs} forever:
     * bytes keep arriving but no event ever completes. Non-streaming: the body drips the same way.
     */
    record SlowDrip(int afterTokens, long everyMs) implements Fault {
    }

    /**
     * A latch a test holds the stream at: after {@code afterTokens} tokens nothing is sent until the gate
     * {@code name} is opened ({@link SimServer#openGate}, {@code POST /sim/gates/{name}}; at once if it already is),
     * or, with {@code timeoutMs} at 0 or more, until that time passed; then the stream goes on where it stopped, at
     * its pace. {@link SimServer#gate} tells who waits at a gate and who went past it, so a test can see where the
     * upstream is without timing it. Non-streaming: the whole answer waits the same way. An embeddings answer comes
     * as usual.
     */
    record Gate(int afterTokens, String name, long timeoutMs) implements Fault {
        public Gate {
            if (name == null || name.isBlank()) {
                throw new IllegalArgumentException("a gate needs a name");
            }
        }
    }
}
