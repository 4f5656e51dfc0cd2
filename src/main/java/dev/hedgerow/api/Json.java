package dev.hedgerow.api;

import com.fasterxml.jackson.core.JsonParser;
import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.core.StreamReadConstraints;
import com.fasterxml.jackson.core.json.JsonWriteFeature;
import com.fasterxml.jackson.databind.DeserializationFeature;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.ObjectReader;
import com.fasterxml.jackson.databind.json.JsonMapper;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;

/** The one shared Jackson mapper of the wire format, with nesting and size limits. Thread-safe. */
public final class Json {
    /** Deeper JSON is refused: no legitimate chat request nests this far. */
    public static final int MAX_DEPTH = 64;

    public static final ObjectMapper MAPPER = JsonMapper.builder()
            // emoji and other supplementary characters go out as UTF-8, not as \\uD83C\\uDF0D escape pairs
            .enable(JsonWriteFeature.COMBINE_UNICODE_SURROGATES_IN_UTF8)
            // "{...} xx" or "{...}{}" is not one JSON document: refused, not read up to its first value
            .enable(DeserializationFeature.FAIL_ON_TRAILING_TOKENS)
            .build();

    static {
        MAPPER.getFactory().setStreamReadConstraints(StreamReadConstraints.builder()
                .maxNestingDepth(MAX_DEPTH).maxStringLength(32 * 1024 * 1024).build());
    }

    private Json() {
    }

    public static JsonNode parse(byte[] bytes) throws IOException {
        return MAPPER.readTree(bytes);
    }

    public static JsonNode parse(String s) throws IOException {
        return MAPPER.readTree(s);
    }

    /** As {@link #parse(byte[])}, refusing an object that names a field twice. */
    public static JsonNode parseWithoutDuplicates(byte[] bytes) throws IOException {
        return NO_DUPLICATES.readTree(bytes);
    }

    private static final ObjectReader NO_DUPLICATES = MAPPER.reader()
            .withFeatures(JsonParser.Feature.STRICT_DUPLICATE_DETECTION);

    public static String write(Object node) {
        try {
            return MAPPER.writeValueAsString(node);
        } catch (JsonProcessingException e) {
            throw new UncheckedIOException(e);
        }
    }

    public static byte[] bytes(Object node) {
        try {
            return MAPPER.writeValueAsBytes(node);
        } catch (JsonProcessingException e) {
            throw new UncheckedIOException(e);
        }
    }

    public static String utf8(byte[] b) {
        return new String(b, StandardCharsets.UTF_8);
    }
}
