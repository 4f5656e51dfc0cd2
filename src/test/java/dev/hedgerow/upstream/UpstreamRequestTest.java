package dev.hedgerow.upstream;

import org.junit.jupiter.api.Test;

import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.List;
import java.util.Map;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;

/** How every caller addresses a provider: URL joining, standard headers, the key only when there is one. */
class UpstreamRequestTest {
    static final byte[] BODY = "{}".getBytes(StandardCharsets.UTF_8);

    @Test
    void joinsThePathAfterDroppingEveryTrailingSlash() {
        for (String base : List.of("http://p:1/v1", "http://p:1/v1/", "http://p:1/v1///")) {
            assertEquals("http://p:1/v1/chat/completions",
                    UpstreamRequest.post(base, "/chat/completions", null, false, BODY, Duration.ofSeconds(1)).url());
        }
    }

    @Test
    void streamedRequestsAcceptAnEventStreamAndCarryTheKeyThenTheExtras() {
        UpstreamRequest r = UpstreamRequest.post("http://p/v1", "/chat/completions", "sk-1", true, BODY,
                Duration.ofSeconds(2), "x-request-id", "req-1");
        assertEquals(List.of("content-type", "accept", "authorization", "x-request-id"),
                List.copyOf(r.headers().keySet()));
        assertEquals(Map.of("content-type", "application/json", "accept", "text/event-stream",
                "authorization", "Bearer sk-1", "x-request-id", "req-1"), r.headers());
        assertEquals(Duration.ofSeconds(2), r.connectTimeout());
        assertArrayEquals(BODY, r.body());
    }

    @Test
    void noAuthorizationWithoutAKeyAndJsonForWholeAnswers() {
        for (String key : new String[] {null, ""}) {
            UpstreamRequest r = UpstreamRequest.post("http://p/v1", "/embeddings", key, false, BODY,
                    Duration.ofSeconds(1));
            assertFalse(r.headers().containsKey("authorization"));
            assertEquals("application/json", r.headers().get("accept"));
        }
    }

    @Test
    void extraHeadersComeInPairsAndTheKeyNeverAppearsInToString() {
        assertThrows(IllegalArgumentException.class, () -> UpstreamRequest.post("http://p/v1", "/x", null, false,
                BODY, Duration.ofSeconds(1), "lonely"));
        UpstreamRequest r = UpstreamRequest.post("http://p/v1", "/x", "sk-secret", false, BODY, Duration.ofSeconds(1));
        assertFalse(r.toString().contains("sk-secret"));
    }
}
