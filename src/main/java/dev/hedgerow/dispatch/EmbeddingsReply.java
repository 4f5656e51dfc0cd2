package dev.hedgerow.dispatch;

import com.fasterxml.jackson.core.JsonGenerator;
import com.fasterxml.jackson.core.JsonParser;
import com.fasterxml.jackson.core.JsonToken;
import com.fasterxml.jackson.databind.DeserializationFeature;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectReader;
import dev.hedgerow.api.Json;

import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.util.function.LongSupplier;

/**
 * Relays an upstream's whole embeddings answer to the client: the body as the provider sent it, token by token
 * (vectors as floats or base64 strings, untouched), with {@code model} set to the route's upstream model and a
 * {@code provider} field naming its provider (as chat's answers, OpenRouter's style), and a {@code usage} counted by
 * the gateway when the provider sent none. Streaming from parser to generator, never a tree: an answer of 2048
 * vectors of 3072 floats is over 100 MB of JSON, which a tree of nodes would take several times over. Stateless.
 */
final class EmbeddingsReply {
    /**
     * The largest embeddings answer an attempt buffers: 64 MiB. 2048 inputs of 1536 dimensions in base64 (what the
     * OpenAI SDKs ask for) are about 17 MB, as floats about 60 MB; a larger answer (3072 dimensions as floats) fails
     * the attempt ({@code oversize_body}) rather than filling the heap: ask for base64, or fewer inputs per request.
     */
    static final int MAX_BODY = 64 * 1024 * 1024;

    /**
     * What the client gets, or why the answer is unusable.
     *
     * @param body    the rewritten answer (null when unusable)
     * @param usage   the provider's {@code usage} object, or null when it sent none
     * @param invalid why a 200 is not an embeddings answer (null when it is one)
     * @param error   the provider's {@code error} when a 200 carried one (null otherwise)
     */
    record Relayed(byte[] body, JsonNode usage, String invalid, String error) {
    }

    /** Reads one value inside the answer (the shared mapper refuses what follows a value read from a parser). */
    private static final ObjectReader VALUE = Json.MAPPER.reader()
            .without(DeserializationFeature.FAIL_ON_TRAILING_TOKENS);

    private EmbeddingsReply() {
    }

    /**
     * @param counted the prompt tokens the gateway counts, asked only when the provider sent no usage
     */
    static Relayed relay(byte[] bytes, String model, String provider, LongSupplier counted) {
        ByteArrayOutputStream out = new ByteArrayOutputStream(bytes.length + 256);
        JsonNode usage = null;
        boolean data = false;
        try (JsonParser p = Json.MAPPER.getFactory().createParser(bytes);
             JsonGenerator g = Json.MAPPER.getFactory().createGenerator(out)) {
            if (p.nextToken() != JsonToken.START_OBJECT) {
                return invalid("200 whose body is not a JSON object");
            }
            g.writeStartObject();
            while (p.nextToken() == JsonToken.FIELD_NAME) {
                String name = p.currentName();
                JsonToken value = p.nextToken();
                switch (name) {
                    case "model", "provider" -> p.skipChildren(); // the gateway's own, written below
                    case "usage" -> {
                        JsonNode u = VALUE.readTree(p);
                        if (u != null && u.isObject()) {
                            usage = u;
                        }
                    }
                    case "error" -> {
                        JsonNode e = VALUE.readTree(p);
                        if (e != null && !e.isNull()) {
                            return new Relayed(null, null, null, UpstreamReplies.shorten(e.toString()));
                        }
                    }
                    default -> {
                        if (name.equals("data")) {
                            if (value != JsonToken.START_ARRAY) {
                                return invalid("200 whose 'data' is not an array");
                            }
                            data = true;
                        }
                        g.writeFieldName(name);
                        g.copyCurrentStructureExact(p);
                    }
                }
            }
            if (p.currentToken() != JsonToken.END_OBJECT || p.nextToken() != null) {
                return invalid("200 whose body is not one JSON object");
            }
            if (!data) {
                return invalid("200 without an embeddings list ('data')");
            }
            g.writeStringField("model", model);
            g.writeStringField("provider", provider);
            g.writeFieldName("usage");
            if (usage != null) {
                g.writeTree(usage);
            } else {
                long n = counted.getAsLong();
                g.writeStartObject();
                g.writeNumberField("prompt_tokens", n);
                g.writeNumberField("total_tokens", n);
                g.writeEndObject();
            }
            g.writeEndObject();
        } catch (IOException | RuntimeException e) {
            return invalid("200 whose body is malformed JSON");
        }
        return new Relayed(out.toByteArray(), usage, null, null);
    }

    private static Relayed invalid(String why) {
        return new Relayed(null, null, why, null);
    }
}
