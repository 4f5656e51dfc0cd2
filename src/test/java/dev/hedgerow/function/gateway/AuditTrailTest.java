package dev.hedgerow.function.gateway;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.hedgerow.sim.Fault;
import dev.hedgerow.state.StateStore;
import dev.hedgerow.testsupport.GatewayHarness;
import io.restassured.response.Response;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

import java.util.List;
import java.util.Map;

import static dev.hedgerow.function.gateway.GroupKit.chat;
import static io.restassured.RestAssured.given;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static dev.hedgerow.testsupport.Eventually.eventually;

/**
 * Nothing fails silently: every attempt is in the trail (header, final chunk, request log in the audit stream),
 * and every refusal is exactly one blocked audit event with its reason.
 */
class AuditTrailTest {
    static final String YAML = GroupKit.yaml("""
                  - { alias: kimi3, provider: openrouter, model: kimi-k2 }
                  - { alias: kimi3, provider: digitalocean, model: kimi-k2 }
                  - { alias: plain, provider: fireworks, model: kimi-k2, capabilities: [] }
            """, """
                  kimi3: { strategy: rr_health, hedging: false }
            """);

    static GatewayHarness gw;
    static StateStore store;

    @BeforeAll
    static void start() {
        gw = GatewayHarness.start(YAML, GroupKit.sims(GroupKit.quick(6), "kimi-k2"));
        store = gw.core().store();
    }

    @AfterAll
    static void stop() {
        gw.close();
    }

    @BeforeEach
    void reset() {
        GroupKit.reset(gw);
    }

    @Test
    void everyAttemptIsInTheTrailHeaderAndInTheRequestLog() throws Exception {
        gw.sim("digitalocean").enqueue("kimi-k2", Fault.status(502));
        Response r = chat(gw, "kimi3", "trail me", false, "{\"order\":[\"digitalocean\"]}");
        assertEquals(200, r.statusCode());
        JsonNode t = GroupKit.trail(r);
        assertEquals(2, t.size());
        for (JsonNode a : t) {
            for (String f : List.of("attempt", "route", "provider", "kind", "outcome", "status", "error", "start_ms",
                    "ttft_ms", "duration_ms")) {
                assertTrue(a.has(f), f + " in " + a);
            }
        }
        assertEquals("digitalocean", t.get(0).path("provider").asText());
        assertEquals(502, t.get(0).path("status").asInt());
        assertEquals("http_502", t.get(0).path("error").asText());
        assertEquals("failed", t.get(0).path("outcome").asText());
        assertEquals("success", t.get(1).path("outcome").asText());
        String requestId = r.header("x-hedgerow-request-id");
        // the request log is written once the response has ended
        eventually(() -> GroupKit.audit(store, "request").stream()
                .anyMatch(e -> requestId.equals(e.get("request_id"))), "the request log event");
        Map<String, String> logged = GroupKit.audit(store, "request").stream()
                .filter(e -> requestId.equals(e.get("request_id"))).findFirst().orElseThrow();
        assertEquals(t, new ObjectMapper().readTree(logged.get("attempt_trail")));
        assertEquals("200", logged.get("status"));
    }

    /** Sends a request and checks it added exactly one blocked event, with this reason, and no other. */
    static void assertOneBlocked(String reason, String body, int status) {
        assertOneBlocked(reason, body, status, "/v1/chat/completions", modelOf(body));
    }

    static String modelOf(String body) {
        try {
            return new ObjectMapper().readTree(body).path("model").asText("");
        } catch (java.io.IOException e) {
            return "";
        }
    }

    /** The same, sent to {@code path}, and the event is filed under {@code alias} ("" when none was named). */
    static void assertOneBlocked(String reason, String body, int status, String path, String alias) {
        long all = GroupKit.audit(store, "blocked").size();
        long before = GroupKit.blocked(store, reason);
        Response r = given().baseUri(gw.baseUrl()).auth().oauth2(GroupKit.KEY).contentType("application/json")
                .body(body).post(path);
        assertEquals(status, r.statusCode(), r.asString());
        assertEquals(before + 1, GroupKit.blocked(store, reason), reason);
        assertEquals(all + 1, GroupKit.audit(store, "blocked").size(), "exactly one event for " + reason);
        Map<String, String> e = GroupKit.audit(store, "blocked").get(0);
        assertEquals(reason, e.get("reason"));
        assertEquals("acme", e.get("org"));
        assertEquals(alias, e.get("alias"), e.toString());
        assertTrue(!e.get("time").isEmpty());
    }

    @Test
    void everyRefusalIsExactlyOneBlockedEventWithItsReason() {
        assertOneBlocked("provider_not_in_group", GroupKit.body("kimi3", "x", false, "{\"only\":[\"nope\"]}"), 400);
        assertOneBlocked("provider_excluded_all", GroupKit.body("kimi3", "x", false,
                "{\"ignore\":[\"openrouter\",\"digitalocean\"]}"), 400);
        assertOneBlocked("model_not_found", GroupKit.body("nosuch", "x", false, null), 404);
        assertOneBlocked("no_capable_provider", "{\"model\":\"plain\",\"messages\":[{\"role\":\"user\","
                + "\"content\":\"x\"}],\"tools\":[{\"type\":\"function\",\"function\":{\"name\":\"f\","
                + "\"parameters\":{\"type\":\"object\"}}}]}", 400);
        assertOneBlocked("invalid_request", GroupKit.body("kimi3", "x", false, "{\"sort\":\"fastest\"}"), 400);
        // refused while the body was checked: still filed under the alias it named, or the path's
        assertOneBlocked("invalid_request", "{\"model\":\"kimi3\",\"messages\":[{\"role\":\"user\","
                + "\"content\":\"x\"}],\"temperature\":7}", 400);
        assertOneBlocked("invalid_json", "{\"model\":", 400, "/models/kimi3/v1/chat/completions", "kimi3");
        assertOneBlocked("invalid_json", "{\"model\":", 400, "/v1/chat/completions", "");
        gw.sim("openrouter").enqueue("kimi-k2", Fault.status(500));
        gw.sim("digitalocean").enqueue("kimi-k2", Fault.status(500));
        assertEquals(502, chat(gw, "kimi3", "all fail").statusCode());
        assertOneBlocked("no_healthy_provider", GroupKit.body("kimi3", "x", false, null), 503);
    }
}
