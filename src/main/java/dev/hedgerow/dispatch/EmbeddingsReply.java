package dev.hedgerow.dispatch;

import com.fasterxml.jackson.core.JsonParser;
import com.fasterxml.jackson.core.JsonToken;
import com.fasterxml.jackson.core.io.JsonStringEncoder;
import com.fasterxml.jackson.databind.DeserializationFeature;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectReader;
import dev.hedgerow.api.Json;

import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.util.function.LongSupplier;

/**
 * Relays an upstream's whole embeddings answer to the client: the body as the provider sent it, byte for byte
 * (vectors as floats or base64 strings, untouched), without its own {@code model} and {@code provider} and with the
 * route's upstream model and a {@code provider} field naming its provider added (as chat's answers, OpenRouter's
 * style), and a {@code usage} counted by the gateway when the provider sent none. The answer is scanned once by the
 * streaming parser, which checks it is one JSON object and finds where each top-level field begins and ends, and each
 * field kept is copied as raw bytes: no tree, and no number is converted. An answer of 2048 vectors of 1536 floats is
 * 36 MB of JSON, which a tree would take several times over, and which copying number by number (each float read
 * exactly and written again) held the event loop for about half a second; the scan takes a fraction of that.
 * Stateless.
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

    /** Reads one value inside the answer (the shared mapper refuses what follows a value read from a parser). */
    private static final ObjectReader VALUE = Json.MAPPER.reader()
            .without(DeserializationFeature.FAIL_ON_TRAILING_TOKENS);

    private EmbeddingsReply() {
    }

    /**
     * @param counted the prompt tokens the gateway counts, asked only when the provider's usage gives none
     */
    static Relayed relay(byte[] bytes, String model, String provider, LongSupplier counted) {
        ByteArrayOutputStream out = new ByteArrayOutputStream(bytes.length + 256);
        JsonNode usage = null;
        boolean data = false;
        try (JsonParser p = Json.MAPPER.getFactory().createParser(bytes)) {
            if (p.nextToken() != JsonToken.START_OBJECT) {
                return invalid("200 whose body is not a JSON object");
            }
            out.write('{');
            boolean first = true;
            JsonToken t = p.nextToken();
            while (t == JsonToken.FIELD_NAME) {
                String name = p.currentName();
                int from = offset(p);
                JsonToken value = p.nextToken();
                switch (name) {
                    case "usage" -> {
                        JsonNode u = VALUE.readTree(p);
                        if (u != null && u.isObject()) {
                            usage = u;
                        }
                    }
                    case "error" -> {
                        JsonNode e = VALUE.readTree(p);
                        if (e != null && !e.isNull()) {
                            return new Relayed(null, 0, null, UpstreamReplies.shorten(e.toString()));
                        }
                    }
                    case "data" -> {
                        if (value != JsonToken.START_ARRAY) {
                            return invalid("200 whose 'data' is not an array");
                        }
                        data = true;
                        p.skipChildren();
                    }
                    default -> p.skipChildren();
                }
                t = p.nextToken();
                if (name.equals("model") || name.equals("provider") || name.equals("usage")) {
                    continue; // the gateway writes its own, below
                }
                // the field's bytes, from its name to the next token: less the separator and whitespace before it
                int to = offset(p);
                while (to > from && isSpaceOrComma(bytes[to - 1])) {
                    to--;
                }
                if (!first) {
                    out.write(',');
                }
                out.write(bytes, from, to - from);
                first = false;
            }
            if (t != JsonToken.END_OBJECT || p.nextToken() != null) {
                return invalid("200 whose body is not one JSON object");
            }
            if (!data) {
                return invalid("200 without an embeddings list ('data')");
            }
            field(out, first, "model");
            string(out, model);
            field(out, false, "provider");
            string(out, provider);
            field(out, false, "usage");
            long prompt;
            if (usage != null) {
                out.write(Json.bytes(usage));
                JsonNode given = usage.path("prompt_tokens");
                prompt = given.canConvertToLong() ? given.asLong() : counted.getAsLong();
            } else {
                prompt = counted.getAsLong();
                out.write(("{\"prompt_tokens\":" + prompt + ",\"total_tokens\":" + prompt + "}")
                        .getBytes(StandardCharsets.US_ASCII));
            }
            out.write('}');
            return new Relayed(out.toByteArray(), prompt, null, null);
        } catch (IOException | RuntimeException e) {
            return invalid("200 whose body is malformed JSON");
        }
    }

    /** Where the parser's current token begins in the answer's bytes. */
    private static int offset(JsonParser p) {
        return (int) p.currentTokenLocation().getByteOffset();
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
