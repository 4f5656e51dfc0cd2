package dev.hedgerow.dispatch;

import com.fasterxml.jackson.core.JsonParser;
import com.fasterxml.jackson.core.JsonToken;
import com.fasterxml.jackson.core.async.ByteArrayFeeder;
import com.fasterxml.jackson.core.io.JsonStringEncoder;
import com.fasterxml.jackson.core.io.NumberOutput;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.util.TokenBuffer;
import dev.hedgerow.api.Json;

import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Base64;
import java.util.List;
import java.util.Objects;
import java.util.function.LongSupplier;

/**
 * Relays an upstream's whole embeddings answer to the client: the body as the provider sent it, byte for byte,
 * without its own {@code model} and {@code provider} and with the route's upstream model and a {@code provider} field
 * naming its provider added (as chat's answers, OpenRouter's style), and a {@code usage} counted by the gateway when
 * the provider sent none. A vector ({@code data[i].embedding}) in the form the client asked for ({@link Vectors}) is
 * relayed untouched; one in the other form, from a provider that ignores {@code encoding_format}, is rewritten in the
 * form asked for, as OpenAI writes it: an array of numbers as the standard, padded base64 of its little-endian float32
 * values, a base64 string as an array of those values (the OpenAI SDKs ask for base64 by default and decode whatever
 * comes as base64, so a provider's floats reached them as empty vectors). The answer is scanned by Jackson's
 * non-blocking parser as its bytes arrive ({@link Scan}), which checks it is one JSON object and finds where each
 * top-level field begins and ends; once it has all come, each field kept is copied as raw bytes: no tree, and no
 * number of a vector in the form asked for is converted. An answer of 2048 vectors of 1536 floats is 36 MB of JSON,
 * which a tree would take several times over, and which copying number by number (each float read exactly and
 * written again) held the event loop for about half a second; scanned whole at the end it still held it for about a
 * tenth of that, and scanned as it arrives each read's share is a small fraction of a millisecond, leaving the end
 * only the copy.
 */
final class EmbeddingsReply {
    /**
     * The largest embeddings answer an attempt buffers: 64 MiB. 2048 inputs of 1536 dimensions in base64 (what the
     * OpenAI SDKs ask for) are about 17 MB, as floats about 36 to 60 MB; a larger answer (3072 dimensions as floats)
     * fails the attempt ({@code oversize_body}) rather than filling the heap: ask for base64, or fewer inputs per
     * request.
     */
    static final int MAX_BODY = 64 * 1024 * 1024;

    /** The vectors' form the client asked for ({@code encoding_format}). */
    enum Vectors {
        FLOAT, BASE64;

        /** The form asked for by {@code encoding_format} {@code base64}, else floats (OpenAI's default). */
        static Vectors asked(boolean base64) {
            return base64 ? BASE64 : FLOAT;
        }
    }

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
     * Relays a whole answer at once (what {@link Scan} does with the answer fed in one piece), its vectors in the
     * form {@code vectors}.
     *
     * @param counted the prompt tokens the gateway counts, asked only when the provider's usage gives none
     */
    static Relayed relay(byte[] bytes, Vectors vectors, String model, String provider, LongSupplier counted) {
        Scan scan = new Scan(vectors);
        scan.feed(bytes);
        return scan.finish(bytes, model, provider, counted);
    }

    /**
     * One answer's scan, fed its bytes as they arrive. It keeps no bytes of its own: {@link #finish} is given the
     * whole answer, all that was fed, in order. The first thing wrong (malformed JSON, a root that is not an object,
     * a {@code data} that is not an array, an {@code error} the provider put in its 200) ends the scan and is what
     * {@link #finish} reports. A vector to rewrite is rewritten as it is read (an array's numbers gathered as
     * float32 bytes, a base64 string decoded) and only its new bytes are kept, with where its field's name begins,
     * for {@link #finish} to put in place of the old; a vector already in the form asked for costs the scan a name
     * comparison. Not thread-safe: an attempt feeds it under its dispatch's lock.
     */
    static final class Scan {
        /** Depth of a {@code data} item's fields (root 1, {@code data} 2, its item 3), and of a vector's numbers. */
        private static final int ITEM = 3;
        private final JsonParser parser;
        private final ByteArrayFeeder feeder;
        private final Vectors vectors;
        /**
         * The vectors rewritten so far, in order: where each one's {@code embedding} name begins, as the parser
         * reports it, and the value that {@link #finish} puts in place of its own.
         */
        private final List<Rewrite> rewrites = new ArrayList<>();
        /** The bytes {@link #rewrites} hold: bounded so that floats written out of base64 cannot fill the heap. */
        private long rewritten;
        /** The last token was a data item's {@code embedding} name: the next one is its vector's first. */
        private boolean vectorNext;
        private long vectorName;
        /** A vector of numbers is being gathered as little-endian float32 (base64 asked for) in {@link #floats}. */
        private boolean gathering;
        /** The float32 bytes of the vector being gathered: one buffer, grown as needed, for every vector. */
        private ByteBuffer floats;
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

        Scan(Vectors vectors) {
            this.vectors = Objects.requireNonNull(vectors);
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
            if (gathering) {
                vectorToken(t);
                if (t == JsonToken.END_ARRAY) {
                    depth--;
                }
                return;
            }
            if (vectorNext) {
                vectorNext = false;
                vectorValue(t);
            } else if (data && depth == ITEM && t == JsonToken.FIELD_NAME && "data".equals(field)
                    && parser.currentName().equals("embedding")) {
                vectorNext = true;
                vectorName = offset();
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

        /** A data item's {@code embedding} value begins with {@code t}: rewritten if it is in the other form. */
        private void vectorValue(JsonToken t) throws IOException {
            if (t == JsonToken.START_ARRAY && vectors == Vectors.BASE64) {
                gathering = true;
                if (floats == null) {
                    floats = ByteBuffer.allocate(4 * 1024).order(ByteOrder.LITTLE_ENDIAN);
                }
                floats.clear();
            } else if (t == JsonToken.VALUE_STRING && vectors == Vectors.FLOAT) {
                byte[] raw;
                try {
                    raw = base64(parser.getText());
                } catch (IllegalArgumentException e) {
                    failed = invalid("200 whose embedding is neither numbers nor base64");
                    return;
                }
                if (raw.length % Float.BYTES != 0) {
                    failed = invalid("200 whose base64 embedding is not whole float32 values");
                    return;
                }
                ByteBuffer in = ByteBuffer.wrap(raw).order(ByteOrder.LITTLE_ENDIAN);
                ByteArrayOutputStream out = new ByteArrayOutputStream(raw.length * 3 + 2);
                out.write('[');
                for (int i = 0; in.hasRemaining(); i++) {
                    float f = in.getFloat();
                    if (!Float.isFinite(f)) {
                        failed = invalid("200 whose base64 embedding holds a value that is not a finite number");
                        return;
                    }
                    if (i > 0) {
                        out.write(',');
                    }
                    out.writeBytes(NumberOutput.toString(f, true).getBytes(StandardCharsets.US_ASCII));
                }
                out.write(']');
                rewrite(out.toByteArray());
            }
        }

        /**
         * A vector's bytes from its base64: the standard alphabet (OpenAI's and the SDKs'), also with line breaks (as
         * MIME encoders wrap it) or in the URL-safe alphabet, each unambiguous; padding optional.
         */
        static byte[] base64(String text) {
            String s = text.indexOf('\n') >= 0 || text.indexOf('\r') >= 0
                    ? text.replace("\r", "").replace("\n", "") : text;
            boolean urlSafe = s.indexOf('-') >= 0 || s.indexOf('_') >= 0;
            return (urlSafe ? Base64.getUrlDecoder() : Base64.getDecoder()).decode(s);
        }

        /** The next token of a vector of numbers being gathered for base64. */
        private void vectorToken(JsonToken t) throws IOException {
            if (t == JsonToken.VALUE_NUMBER_FLOAT || t == JsonToken.VALUE_NUMBER_INT) {
                if (floats.remaining() < Float.BYTES) {
                    floats = ByteBuffer.allocate(floats.capacity() * 2).order(ByteOrder.LITTLE_ENDIAN)
                            .put(floats.flip());
                }
                float f = parser.getFloatValue();
                if (!Float.isFinite(f)) {
                    // 1e39 is no float32: refused as the other way round refuses a non-finite value (review7)
                    failed = invalid("200 whose embedding holds a number out of float32's range");
                    return;
                }
                floats.putFloat(f);
            } else if (t == JsonToken.END_ARRAY) {
                byte[] encoded = Base64.getEncoder().encode(Arrays.copyOf(floats.array(), floats.position()));
                gathering = false;
                byte[] out = new byte[encoded.length + 2];
                out[0] = '"';
                System.arraycopy(encoded, 0, out, 1, encoded.length);
                out[out.length - 1] = '"';
                rewrite(out);
            } else {
                failed = invalid("200 whose embedding is not a list of numbers");
            }
        }

        private void rewrite(byte[] value) {
            rewritten += value.length;
            if (rewritten > MAX_BODY) {
                failed = invalid("200 whose vectors, rewritten in the form asked for, exceed " + (MAX_BODY >> 20)
                        + " MiB: ask for base64, or send fewer inputs per request");
                return;
            }
            rewrites.add(new Rewrite(vectorName, value));
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
            // each rewritten vector's place: from its name's opening quote, past the name and the colon, to the end
            // of its value (an array of numbers holds no ']' but its own; a base64 string no escaped quote)
            int[] rFrom = new int[rewrites.size()];
            int[] rTo = new int[rewrites.size()];
            for (int i = 0; i < rFrom.length; i++) {
                Rewrite w = rewrites.get(i);
                int at = skipString(bytes, nameStart(bytes, bom + (int) w.name()));
                while (bytes[at] != '[' && bytes[at] != '"') {
                    at++; // whitespace and the colon
                }
                rFrom[i] = at;
                rTo[i] = (bytes[at] == '[' ? indexOf(bytes, (byte) ']', at) : skipString(bytes, at) - 1) + 1;
                size += w.value().length - (rTo[i] - rFrom[i]);
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
            int r = 0;
            for (int i = 0; i < from.length; i++) {
                if (i > 0) {
                    out[at++] = ',';
                }
                int copied = from[i];
                // the vectors rewritten in this field (only data's): its bytes up to each, then the vector's new value
                for (; r < rFrom.length && rFrom[r] < to[i]; r++) {
                    System.arraycopy(bytes, copied, out, at, rFrom[r] - copied);
                    at += rFrom[r] - copied;
                    byte[] value = rewrites.get(r).value();
                    System.arraycopy(value, 0, out, at, value.length);
                    at += value.length;
                    copied = rTo[r];
                }
                System.arraycopy(bytes, copied, out, at, to[i] - copied);
                at += to[i] - copied;
            }
            System.arraycopy(end, 0, out, at, end.length);
            return new Relayed(out, prompt, null, null);
        }
    }

    /**
     * A vector rewritten in the form asked for: where its {@code embedding} name begins, as the parser reported it,
     * and its new value's bytes.
     */
    private record Rewrite(long name, byte[] value) {
    }

    /** Where the JSON string whose opening quote is at {@code quote} ends: just past its closing quote. */
    private static int skipString(byte[] bytes, int quote) {
        for (int at = quote + 1; ; at++) {
            if (bytes[at] == '\\') {
                at++;
            } else if (bytes[at] == '"') {
                return at + 1;
            }
        }
    }

    private static int indexOf(byte[] bytes, byte b, int from) {
        for (int at = from; ; at++) {
            if (bytes[at] == b) {
                return at;
            }
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
