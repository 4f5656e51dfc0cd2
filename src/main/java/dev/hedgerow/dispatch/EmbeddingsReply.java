package dev.hedgerow.dispatch;

import com.fasterxml.jackson.core.JsonParser;
import com.fasterxml.jackson.core.JsonToken;
import com.fasterxml.jackson.core.async.ByteArrayFeeder;
import com.fasterxml.jackson.core.io.JsonStringEncoder;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.util.TokenBuffer;
import dev.hedgerow.api.Json;

import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.function.LongSupplier;

/**
 * Relays an upstream's whole embeddings answer to the client: the body as the provider sent it, byte for byte
 * (vectors as floats or base64 strings, untouched), without its own {@code model} and {@code provider} and with the
 * route's upstream model and a {@code provider} field naming its provider added (as chat's answers, OpenRouter's
 * style), and a {@code usage} counted by the gateway when the provider sent none. The answer is scanned by Jackson's
 * non-blocking parser as its bytes arrive ({@link Scan}), which checks it is one JSON object and finds where each
 * top-level field begins and ends; once it has all come, each field kept is copied as raw bytes: no tree, and no
 * number is converted. An answer of 2048 vectors of 1536 floats is 36 MB of JSON, which a tree would take several
 * times over, and which copying number by number (each float read exactly and written again) held the event loop
 * for about half a second; scanned whole at the end it still held it for about a tenth of that, and scanned as it
 * arrives each read's share is a small fraction of a millisecond, leaving the end only the copy.
 */
final class EmbeddingsReply {
    /**
     * The largest embeddings answer an attempt buffers: 64 MiB. 2048 inputs of 1536 dimensions in base64 (what the
     * OpenAI SDKs ask for) are about 17 MB, as floats about 36 to 60 MB; a larger answer (3072 dimensions as floats)
     * fails the attempt ({@code oversize_body}) rather than filling the heap: ask for base64, or fewer inputs per
     * request.
     */
    static final int MAX_BODY = 64 * 1024 * 1024;

    /**
     * What the client gets, or why the answer is unusable.
     *
     * @param body         the rewritten answer (null when unusable)
     * @param promptTokens what the answer bills: the provider's {@code usage.prompt_tokens}, else the gateway's count
     * @param invalid      why a 200 is not an embeddings answer (null when it is one)
     * @param error        the provider's {@code error} when a 200 carried one (null otherwise)
     */
    record Relayed(byte[] body, long promptTokens, String invalid, String error) {
    }

    private EmbeddingsReply() {
    }

    /**
     * Relays a whole answer at once (what {@link Scan} does with the answer fed in one piece).
     *
     * @param counted the prompt tokens the gateway counts, asked only when the provider's usage gives none
     */
    static Relayed relay(byte[] bytes, String model, String provider, LongSupplier counted) {
        Scan scan = new Scan();
        scan.feed(bytes);
        return scan.finish(bytes, model, provider, counted);
    }

    /**
     * One answer's scan, fed its bytes as they arrive. It keeps no bytes of its own: {@link #finish} is given the
     * whole answer, all that was fed, in order. The first thing wrong (malformed JSON, a root that is not an object,
     * a {@code data} that is not an array, an {@code error} the provider put in its 200) ends the scan and is what
     * {@link #finish} reports. Not thread-safe: an attempt feeds it under its dispatch's lock.
     */
    static final class Scan {
        private final JsonParser parser;
        private final ByteArrayFeeder feeder;
        /**
         * The top-level fields kept so far, in order: where each one's name and the token after its value (the next
         * name, or the root's end) begin, as the parser reports them ({@link #nameStart}), and 1 when that token is
         * a name, else 0.
         */
        private final List<long[]> kept = new ArrayList<>();
        /** Nesting depth after the last token: 0 outside the root object, 1 inside it. */
        private int depth;
        /** The top-level field whose value is being read (null between fields), and where its name begins. */
        private String field;
        private long fieldFrom;
        /** The field name was the last token: the next one is its value's first. */
        private boolean valueNext;
        private boolean rootEnded;
        private boolean data;
        private JsonNode usage;
        /** The tokens of the {@code usage} or {@code error} value being read, or null for any other field. */
        private TokenBuffer captured;
        private Relayed failed;

        Scan() {
            try {
                parser = Json.MAPPER.getFactory().createNonBlockingByteArrayParser();
            } catch (IOException e) {
                throw new IllegalStateException(e);
            }
            feeder = (ByteArrayFeeder) parser.getNonBlockingInputFeeder();
        }

        /** Scans the answer's next bytes (read at once: the array is not kept). */
        void feed(byte[] bytes) {
            if (failed != null || bytes.length == 0) {
                return;
            }
            try {
                feeder.feedInput(bytes, 0, bytes.length);
                drain();
            } catch (IOException | RuntimeException e) {
                failed = invalid("200 whose body is malformed JSON");
            }
        }

        /** Reads every token the input fed so far completes. */
        private void drain() throws IOException {
            for (JsonToken t = parser.nextToken(); t != null && t != JsonToken.NOT_AVAILABLE && failed == null;
                 t = parser.nextToken()) {
                token(t);
            }
        }

        private void token(JsonToken t) throws IOException {
            if (rootEnded) {
                failed = invalid("200 whose body is not one JSON object");
                return;
            }
            if (depth == 0) {
                if (t != JsonToken.START_OBJECT) {
                    failed = invalid("200 whose body is not a JSON object");
                    return;
                }
                depth = 1;
                return;
            }
            if (depth == 1 && (t == JsonToken.FIELD_NAME || t == JsonToken.END_OBJECT)) {
                endField(offset(), t == JsonToken.FIELD_NAME);
                if (t == JsonToken.END_OBJECT) {
                    depth = 0;
                    rootEnded = true;
                    return;
                }
                field = parser.currentName();
                fieldFrom = offset();
                valueNext = true;
                captured = field.equals("usage") || field.equals("error") ? new TokenBuffer(Json.MAPPER, false)
                        : null;
                return;
            }
            if (captured != null) {
                captured.copyCurrentEvent(parser);
            }
            if (valueNext) {
                valueNext = false;
                if (field.equals("data")) {
                    if (t != JsonToken.START_ARRAY) {
                        failed = invalid("200 whose 'data' is not an array");
                        return;
                    }
                    data = true;
                }
            }
            if (t == JsonToken.START_OBJECT || t == JsonToken.START_ARRAY) {
                depth++;
            } else if (t == JsonToken.END_OBJECT || t == JsonToken.END_ARRAY) {
                depth--;
            }
        }

        /**
         * The field being read ends where the next top-level token begins ({@code to}), less the separator and
         * whitespace before that (trimmed by {@link #finish}); {@code usage} and {@code error} are read from their
         * tokens (a few), the rest kept as ranges.
         */
        private void endField(long to, boolean toName) throws IOException {
            if (field == null) {
                return;
            }
            String name = field;
            field = null;
            JsonNode value = null;
            if (captured != null) {
                value = Json.MAPPER.readTree(captured.asParser());
                captured = null;
            }
            if (name.equals("error") && value != null && !value.isNull()) {
                failed = new Relayed(null, 0, null, UpstreamReplies.shorten(value.toString()));
            } else if (name.equals("usage")) {
                if (value != null && value.isObject()) {
                    usage = value;
                }
            } else if (!name.equals("model") && !name.equals("provider")) {
                // the gateway writes its own model, provider and usage
                kept.add(new long[]{fieldFrom, to, toName ? 1 : 0});
            }
        }

        /** Where the parser's current token begins in the answer's bytes. */
        private long offset() {
            return parser.currentTokenLocation().getByteOffset();
        }

        /**
         * The client's answer, or why there is none, once {@code bytes} (everything fed, in order) is the whole
         * answer.
         *
         * @param counted the prompt tokens the gateway counts, asked only when the provider's usage gives none
         */
        Relayed finish(byte[] bytes, String model, String provider, LongSupplier counted) {
            if (failed == null) {
                try {
                    feeder.endOfInput();
                    drain();
                } catch (IOException | RuntimeException e) {
                    failed = invalid("200 whose body is malformed JSON");
                }
            }
            if (failed != null) {
                return failed;
            }
            if (!rootEnded) {
                return invalid(depth == 0 ? "200 whose body is not a JSON object"
                        : "200 whose body is not one JSON object");
            }
            if (!data) {
                return invalid("200 without an embeddings list ('data')");
            }
            // the fields kept, trimmed, then the gateway's own: sized first, so the answer is copied once
            int[] from = new int[kept.size()];
            int[] to = new int[kept.size()];
            int size = 1;
            // the parser skips a UTF-8 byte order mark before the root and counts its offsets after it
            int bom = bytes.length >= 3 && (bytes[0] & 0xff) == 0xef && (bytes[1] & 0xff) == 0xbb
                    && (bytes[2] & 0xff) == 0xbf ? 3 : 0;
            for (int i = 0; i < kept.size(); i++) {
                long[] range = kept.get(i);
                from[i] = nameStart(bytes, bom + (int) range[0]);
                to[i] = range[2] == 1 ? nameStart(bytes, bom + (int) range[1]) : bom + (int) range[1];
                while (to[i] > from[i] && isSpaceOrComma(bytes[to[i] - 1])) {
                    to[i]--;
                }
                size += to[i] - from[i] + 1;
            }
            ByteArrayOutputStream tail = new ByteArrayOutputStream(256);
            field(tail, kept.isEmpty(), "model");
            string(tail, model);
            field(tail, false, "provider");
            string(tail, provider);
            field(tail, false, "usage");
            long prompt;
            // the provider's usage is relayed when its counts are counts written as integers; otherwise the client is
            // shown the count billed (the provider's prompt count when it is one, 12.0 as 12, else the gateway's):
            // a negative or absurd figure is neither billed nor shown as the bill
            JsonNode given = usage == null ? null : usage.get("prompt_tokens");
            if (wholeCount(given) && (!usage.has("total_tokens") || wholeCount(usage.get("total_tokens")))) {
                tail.writeBytes(Json.bytes(usage));
                prompt = given.asLong();
            } else {
                prompt = Billing.count(given) ? given.asLong() : counted.getAsLong();
                tail.writeBytes(("{\"prompt_tokens\":" + prompt + ",\"total_tokens\":" + prompt + "}")
                        .getBytes(StandardCharsets.US_ASCII));
            }
            tail.write('}');
            byte[] end = tail.toByteArray();
            byte[] out = new byte[size - (kept.isEmpty() ? 0 : 1) + end.length];
            out[0] = '{';
            int at = 1;
            for (int i = 0; i < from.length; i++) {
                if (i > 0) {
                    out[at++] = ',';
                }
                System.arraycopy(bytes, from[i], out, at, to[i] - from[i]);
                at += to[i] - from[i];
            }
            System.arraycopy(end, 0, out, at, end.length);
            return new Relayed(out, prompt, null, null);
        }
    }

    /** A count as relayed: {@link Billing#count}, and written as an integer (12, not 12.0). */
    private static boolean wholeCount(JsonNode n) {
        return Billing.count(n) && n.isIntegralNumber();
    }

    /**
     * Where the field name the parser reported at {@code reported} begins: its opening quote. Jackson's non-blocking
     * parser (2.20) reports a name's location one byte late, past that quote, where its blocking parser reports the
     * quote itself; either is read right, as the byte before a name's opening quote is never a quote (a '{', a ','
     * or whitespace) and the byte after it is one only for the empty name, whose closing quote has another quote
     * before it.
     */
    private static int nameStart(byte[] bytes, int reported) {
        return reported > 0 && bytes[reported - 1] == '"' ? reported - 1 : reported;
    }

    private static boolean isSpaceOrComma(byte b) {
        return b == ',' || b == ' ' || b == '\n' || b == '\r' || b == '\t';
    }

    private static void field(ByteArrayOutputStream out, boolean first, String name) {
        if (!first) {
            out.write(',');
        }
        string(out, name);
        out.write(':');
    }

    private static void string(ByteArrayOutputStream out, String s) {
        out.write('"');
        out.writeBytes(JsonStringEncoder.getInstance().quoteAsUTF8(s));
        out.write('"');
    }

    private static Relayed invalid(String why) {
        return new Relayed(null, 0, why, null);
    }
}
