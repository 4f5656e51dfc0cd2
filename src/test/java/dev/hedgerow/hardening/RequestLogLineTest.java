package dev.hedgerow.hardening;

import com.fasterxml.jackson.databind.JsonNode;
import dev.hedgerow.api.Json;
import dev.hedgerow.sim.ModelScript;
import dev.hedgerow.sim.SimConfig;
import dev.hedgerow.testsupport.GatewayHarness;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.util.List;
import java.util.Map;
import java.util.Optional;

import static dev.hedgerow.testsupport.Eventually.eventually;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * The request log through the HTTP API: every request the gateway dispatched gets one INFO line on
 * {@code dev.hedgerow.request} naming the request id the client got, the
 * org, alias, final status, winning route and the attempt trail as JSON.
 */
class RequestLogLineTest {
    static final String YAML = """
            orgs:
              - id: acme
                keys: [{ name: app, key: "k-acme" }]
                providers:
                  - { id: alpha, base_url: "${SIM_ALPHA_URL}", api_key: "sk-alpha" }
                  - { id: wrong, base_url: "${SIM_ALPHA_URL}", api_key: "sk-wrong" }
                routes:
                  - { alias: chat, provider: alpha, model: m }
                  - { alias: denied, provider: wrong, model: m }
            """;
    static GatewayHarness gw;
    static final HttpClient CLIENT = HttpClient.newHttpClient();

    @BeforeAll
    static void start() {
        gw = GatewayHarness.start(YAML, Map.of("alpha", SimConfig.of(1).withApiKey("sk-alpha")
                .withModel("m", ModelScript.defaults().withLength(6).withLatency(ModelScript.Latency.of(0, 0)))));
    }

    @AfterAll
    static void stop() {
        gw.close();
    }

    /** Sends a chat request; the request id the gateway answered with. */
    static String chat(String alias, boolean stream, int expectStatus) throws Exception {
        HttpResponse<String> r = CLIENT.send(HttpRequest.newBuilder(URI.create(gw.baseUrl() + "/v1/chat/completions"))
                .header("content-type", "application/json").header("authorization", "Bearer k-acme")
                .POST(HttpRequest.BodyPublishers.ofString("{\"model\":\"" + alias + "\",\"stream\":" + stream
                        + ",\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}]}"))
                .build(), HttpResponse.BodyHandlers.ofString());
        assertEquals(expectStatus, r.statusCode(), r.body());
        return r.headers().firstValue("x-hedgerow-request-id").orElseThrow();
    }

    static Optional<String> lineOf(LogCapture capture, String requestId) {
        return capture.lines().stream().filter(l -> l.startsWith("dev.hedgerow.request INFO request " + requestId + " "))
                .findFirst();
    }

    @Test
    void eachDispatchedRequestGetsOneLineWithItsIdStatusRouteAndTrail() throws Exception {
        try (LogCapture capture = new LogCapture()) {
            String ok = chat("chat", false, 200);
            String streamed = chat("chat", true, 200);
            String refused = chat("denied", false, 401);
            for (String id : List.of(ok, streamed, refused)) {
                eventually(() -> lineOf(capture, id).isPresent(), "the request log line of " + id);
            }

            String line = lineOf(capture, ok).orElseThrow();
            assertTrue(line.contains(" org=acme alias=chat status=200 route=acme/chat-alpha attempts="), line);
            JsonNode attempts = Json.parse(line.substring(line.indexOf("attempts=") + "attempts=".length()));
            assertEquals(1, attempts.size(), line);
            assertEquals("primary", attempts.get(0).get("kind").asText());
            assertEquals("success", attempts.get(0).get("outcome").asText());

            assertTrue(lineOf(capture, streamed).orElseThrow().contains(" status=200 "));

            String denied = lineOf(capture, refused).orElseThrow();
            assertTrue(denied.contains(" alias=denied status=401 "), denied);
            JsonNode failed = Json.parse(denied.substring(denied.indexOf("attempts=") + "attempts=".length()));
            assertEquals(401, failed.get(0).get("status").asInt(), denied);
            assertEquals(1, capture.lines().stream().filter(l -> l.contains(" request " + ok + " ")).count(),
                    "one line per request");
        }
    }
}
