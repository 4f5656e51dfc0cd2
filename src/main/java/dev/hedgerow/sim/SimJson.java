package dev.hedgerow.sim;

import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.databind.DeserializationFeature;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.PropertyNamingStrategies;
import com.fasterxml.jackson.databind.SerializationFeature;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.io.UncheckedIOException;

/**
 * JSON (snake_case) form of the simulator's configuration, scripts and faults, and the OpenAI error envelope.
 * Thread-safe: the shared {@link ObjectMapper} is configured once and never changed.
 */
public final class SimJson {

    static final ObjectMapper MAPPER = new ObjectMapper()
            .setPropertyNamingStrategy(PropertyNamingStrategies.SNAKE_CASE)
            .configure(DeserializationFeature.FAIL_ON_UNKNOWN_PROPERTIES, false)
            .configure(SerializationFeature.FAIL_ON_EMPTY_BEANS, false);

    private SimJson() {
    }

    public static String write(Object value) {
        try {
            return MAPPER.writeValueAsString(value);
        } catch (JsonProcessingException e) {
            throw new UncheckedIOException(e);
        }
    }

    public static ModelScript readScript(String json) {
        return read(json, ModelScript.class);
    }

    public static Fault readFault(String json) {
        return read(json, Fault.class);
    }

    public static SimConfig readConfig(String json) {
        return read(json, SimConfig.class);
    }

    static <T> T read(String json, Class<T> type) {
        try {
            return MAPPER.readValue(json, type);
        } catch (JsonProcessingException e) {
            throw new IllegalArgumentException("invalid " + type.getSimpleName() + " JSON: " + e.getOriginalMessage(), e);
        }
    }

    /** {@code {"error":{"message","type","code","param"}}}. */
    static String errorEnvelope(String message, String type, String code) {
        return errorEnvelope(message, type, code, null);
    }

    /** {@code {"error":{"message","type","code","param"}}}, naming the request field it is about. */
    static String errorEnvelope(String message, String type, String code, String param) {
        ObjectNode root = MAPPER.createObjectNode();
        ObjectNode err = root.putObject("error");
        err.put("message", message);
        err.put("type", type);
        err.put("code", code);
        if (param == null) {
            err.putNull("param");
        } else {
            err.put("param", param);
        }
        return root.toString();
    }
}
