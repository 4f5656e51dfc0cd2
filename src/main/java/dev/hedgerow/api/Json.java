package dev.hedgerow.api;

import com.fasterxml.jackson.core.JsonLocation;
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
import java.util.regex.Pattern;

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

    /**
     * A parse error told to a client: what is wrong and where (line, column), without the parser's own class, feature
     * and constraint names (Jackson's text advises "enable `JsonReadFeature.ALLOW_NON_NUMERIC_NUMBERS` to allow",
     * which is no advice to a client of an API). A message that still names one after the known phrasings are taken
     * out is replaced by a plain one.
     */
    public static String describe(JsonProcessingException e) {
        String m = e.getOriginalMessage() == null ? "" : e.getOriginalMessage();
        int nl = m.indexOf('\n');
        m = nl >= 0 ? m.substring(0, nl) : m;
        m = PARSER_ADVICE.matcher(m).replaceAll("");
        m = CONSTRAINT.matcher(m).replaceAll("($1)");
        m = SOURCE.matcher(m).replaceAll("line $1, column $2");
        if (m.isBlank() || INTERNAL.matcher(m).find()) {
            m = "The body is not well-formed JSON";
        }
        JsonLocation at = e.getLocation();
        String where = at != null && at.getLineNr() > 0
                ? " (line " + at.getLineNr() + ", column " + at.getColumnNr() + ")" : "";
        return Text.clip(m.strip(), 200) + where;
    }

    /** Advice to switch a parser feature on, and the databind type a value was read as. */
    private static final Pattern PARSER_ADVICE = Pattern.compile(
            ":? ?(?:enable|not allowed as per) `[^`]*`(?: to allow)?"
                    + "| \\(not recognized as one since Feature '[A-Z_]+' not enabled for parser\\)"
                    + "| \\(bound as `[^`]*`\\)");
    /** "(1000, from `StreamReadConstraints.getMaxNumberLength()`)": the limit stays. */
    private static final Pattern CONSTRAINT = Pattern.compile("\\(([0-9]+), from `[^`]*`\\)");
    /** A location inside the message ("start marker at [Source: REDACTED (...); line: 1, column: 28]"). */
    private static final Pattern SOURCE = Pattern.compile("\\[Source: .*?; line: (\\d+), column: (\\d+)\\]");
    private static final Pattern INTERNAL = Pattern.compile("`|Feature|Constraints|com\\.fasterxml|jackson",
            Pattern.CASE_INSENSITIVE);
}
