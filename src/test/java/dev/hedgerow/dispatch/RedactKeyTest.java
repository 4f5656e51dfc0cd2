package dev.hedgerow.dispatch;

import org.junit.jupiter.api.Test;

import java.nio.charset.StandardCharsets;

import static org.junit.jupiter.api.Assertions.assertEquals;

class RedactKeyTest {

    @Test
    void aProviderErrorQuotingTheKeyIsRedacted() {
        byte[] body = "{\"error\":{\"message\":\"Incorrect API key provided: sk-live-123456789\"}}"
                .getBytes(StandardCharsets.UTF_8);
        assertEquals("{\"error\":{\"message\":\"Incorrect API key provided: [redacted]\"}}",
                new String(ClientOutput.redactKey(body, "sk-live-123456789"), StandardCharsets.UTF_8));
    }

    @Test
    void bodiesWithoutTheKeyPassUnchanged() {
        byte[] body = "{\"error\":{\"message\":\"bad request\"}}".getBytes(StandardCharsets.UTF_8);
        assertEquals(body, ClientOutput.redactKey(body, "sk-live-123456789"));
        assertEquals(body, ClientOutput.redactKey(body, null));
    }
}
