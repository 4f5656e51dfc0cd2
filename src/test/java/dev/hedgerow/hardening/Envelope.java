package dev.hedgerow.hardening;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;

import java.io.IOException;

/** Asserts the OpenAI error envelope {@code {"error":{"message","type","code","param"}}} on a 4xx answer. */
final class Envelope {
    private static final ObjectMapper JSON = new ObjectMapper();

    private Envelope() {
    }

    /** Fails unless {@code status} is a 4xx and {@code body} is the envelope; returns the error object. */
    static JsonNode assert4xx(int status, String body, String what) {
        if (status < 400 || status >= 500) {
            throw new AssertionError("expected a 4xx for " + what + " but got " + status + ": " + body);
        }
        return assertShape(body, what + " (" + status + ")");
    }

    static JsonNode assertShape(String body, String what) {
        JsonNode root;
        try {
            root = JSON.readTree(body);
        } catch (IOException e) {
            throw new AssertionError("not JSON for " + what + ": " + body, e);
        }
        JsonNode err = root == null ? null : root.get("error");
        if (err == null || !err.isObject() || !err.path("message").isTextual() || err.path("message").asText().isEmpty()
                || !err.path("type").isTextual() || !err.has("code") || !err.has("param")) {
            throw new AssertionError("not the OpenAI error envelope for " + what + ": " + body);
        }
        return err;
    }
}
