package dev.hedgerow.function;

import dev.hedgerow.testsupport.LogCapture;
import io.quarkus.test.common.QuarkusTestResourceLifecycleManager;
import io.quarkus.test.junit.QuarkusTest;
import io.quarkus.test.junit.QuarkusTestProfile;
import io.quarkus.test.junit.TestProfile;
import org.junit.jupiter.api.Test;

import java.util.List;
import java.util.Map;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

import static dev.hedgerow.testsupport.Eventually.eventually;
import static io.restassured.RestAssured.given;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * The real application on the bundled demo (no {@code HEDGEROW_CONFIG}, no Redis), as {@code scripts/run} starts it:
 * its simulated providers are real HTTP servers in the same process, yet Quarkus' {@code http_server_requests}
 * counts only the gateway's own requests (an embeddings request to the demo's {@code embed} among them), and
 * starting them logs no "already registered" gauge warning.
 */
@QuarkusTest
@TestProfile(DemoMetricsTest.Demo.class)
class DemoMetricsTest {
    public static class Demo implements QuarkusTestProfile {
        @Override
        public Map<String, String> getConfigOverrides() {
            return Map.of("hedgerow.config", "", "redis.url", "");
        }

        @Override
        public boolean disableGlobalTestResources() { // no catalog file, no Redis: the demo as a first run sees it
            return true;
        }

        @Override
        public List<TestResourceEntry> testResources() {
            return List.of(new TestResourceEntry(StartupLog.class));
        }
    }

    /** The process's log from before the app starts (the demo's simulators start with it) until it stops. */
    public static class StartupLog implements QuarkusTestResourceLifecycleManager {
        static volatile LogCapture capture;

        @Override
        public Map<String, String> start() {
            capture = new LogCapture();
            return Map.of();
        }

        @Override
        public void stop() {
            capture.close();
        }
    }

    private static final Pattern SERIES = Pattern.compile(
            "^http_server_requests_seconds_count\\{(.*)} ([0-9.eE+-]+)$");

    /** {@code http_server_requests_seconds_count} per label set of the scrape. */
    private static Map<String, Double> requestCounts() {
        String scrape = given().get("/q/metrics").then().statusCode(200).extract().asString();
        Map<String, Double> out = new java.util.TreeMap<>();
        for (String line : scrape.split("\n")) {
            Matcher m = SERIES.matcher(line);
            if (m.matches()) {
                out.put(m.group(1), Double.parseDouble(m.group(2)));
            }
        }
        return out;
    }

    private static double total(Map<String, Double> counts) {
        return counts.values().stream().mapToDouble(Double::doubleValue).sum();
    }

    @Test
    void httpServerRequestsCountOnlyTheGatewaysOwnRequestsAndNoGaugeWarning() {
        List<String> lines = StartupLog.capture.lines();
        assertTrue(lines.stream().anyMatch(l -> l.contains("demo catalog on simulated providers")),
                "the capture saw the demo start:\n" + String.join("\n", lines));
        assertTrue(lines.stream().noneMatch(l -> l.contains("already registered")), String.join("\n", lines));

        given().auth().oauth2("hr-demo-key").get("/v1/models").then().statusCode(200);
        int chats = 4;
        for (int i = 0; i < chats; i++) {
            given().auth().oauth2("hr-demo-key").contentType("application/json")
                    .body("{\"model\":\"kimi3\",\"max_tokens\":2,\"stream\":" + (i % 2 == 0)
                            + ",\"messages\":[{\"role\":\"user\",\"content\":\"demo " + i + "\"}]}")
                    .post("/v1/chat/completions").then().statusCode(200);
        }
        // the demo's embeddings alias answers POST /v1/embeddings, as the README's demo paragraph says
        given().auth().oauth2("hr-demo-key").contentType("application/json")
                .body("{\"model\":\"embed\",\"input\":[\"hello\",\"world\"]}").post("/v1/embeddings").then()
                .statusCode(200).body("data.size()", org.hamcrest.Matchers.equalTo(2))
                .body("model", org.hamcrest.Matchers.equalTo("BAAI/bge-base-en-v1.5"))
                .body("provider", org.hamcrest.Matchers.equalTo("together"));
        int sent = chats + 2;
        eventually(() -> total(requestCounts()) >= sent, "the gateway's requests are counted");
        Map<String, Double> counts = requestCounts();
        assertEquals(sent, total(counts), "only the gateway's own requests: " + counts);
        double chatCount = counts.entrySet().stream().filter(e -> e.getKey().contains("uri=\"/v1/chat/completions\""))
                .mapToDouble(Map.Entry::getValue).sum();
        assertEquals(chats, chatCount, counts.toString());
        assertTrue(counts.keySet().stream().noneMatch(k -> k.contains("uri=\"/sim") || k.contains("uri=\"/metrics")),
                counts.toString());

    }
}
