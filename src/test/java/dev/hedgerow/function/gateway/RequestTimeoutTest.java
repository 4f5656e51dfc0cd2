package dev.hedgerow.function.gateway;

import com.fasterxml.jackson.databind.JsonNode;
import dev.hedgerow.api.Json;
import dev.hedgerow.sim.Fault;
import dev.hedgerow.sim.ModelScript;
import dev.hedgerow.sim.SimConfig;
import dev.hedgerow.sim.SimServer;
import dev.hedgerow.testsupport.GatewayHarness;
import dev.hedgerow.testsupport.RedisServer;
import dev.hedgerow.testsupport.RedisStores;
import dev.hedgerow.testsupport.Sse;
import io.restassured.response.Response;
import io.vertx.core.Vertx;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

import java.io.IOException;
import java.util.List;
import java.util.Map;

import static io.restassured.RestAssured.given;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Kong's "requests must not hang longer than 3 seconds" through the HTTP API, on a real Redis and a simulator whose
 * slow models are scripted: a group with {@code request_timeout} reads Kong's {@code read_timeout} as Kong does (a
 * non-streamed answer's whole wait, a stream's first token), so a slow member fails over to a fast one, and when
 * every member is slow the client gets 504 {@code request_timeout} once its answer made no progress for the whole
 * {@code request_timeout}. Outcomes are asserted on the attempt trail and the error's shape, never on elapsed time.
 */
class RequestTimeoutTest {
    static final String YAML = """
            orgs:
              - id: acme
                keys: [{ name: app, key: "k-acme" }]
                providers:
                  - { id: sim, base_url: "${SIM_SIM_URL}", api_key: "sk-sim" }
                routes:
                  - { id: slow-a, alias: failsover, provider: sim, model: m-slow-a, weight: 100 }
                  - { id: fast-a, alias: failsover, provider: sim, model: m-fast-a, weight: 0 }
                  - { id: slow-b1, alias: allslow, provider: sim, model: m-slow-b1, weight: 100 }
                  - { id: slow-b2, alias: allslow, provider: sim, model: m-slow-b2, weight: 0 }
                  - { id: slow-s1, alias: streamslow, provider: sim, model: m-slow-s1, weight: 100 }
                  - { id: slow-s2, alias: streamslow, provider: sim, model: m-slow-s2, weight: 0 }
                  - { id: gap, alias: gappy, provider: sim, model: m-gap }
                groups:
                  failsover: { strategy: weighted, hedging: false, read_timeout: 1000, request_timeout: 4s }
                  allslow:
                    strategy: weighted
                    hedging: false
                    request_timeout: 3s
                    balancer: { read_timeout: 2000 }
                  streamslow: { strategy: weighted, hedging: false, read_timeout: 2000, request_timeout: 3s }
                  gappy: { hedging: false, read_timeout: 10000, request_timeout: 1s }
            """;

    static RedisServer redis;
    static Vertx vertx;
    static Map<String, SimServer> sims;
    static GatewayHarness gw;

    @BeforeAll
    static void start() {
        redis = RedisServer.start();
        vertx = Vertx.vertx();
        // slow: the whole answer (or a stream's first token) 8 s after the request, far past every bound below
        ModelScript slow = ModelScript.defaults().withLength(4).withLatency(ModelScript.Latency.of(8_000, 0));
        ModelScript fast = ModelScript.defaults().withLength(4).withLatency(ModelScript.Latency.INSTANT);
        ModelScript steady = ModelScript.defaults().withLength(6).withLatency(ModelScript.Latency.of(0, 50));
        sims = GatewayHarness.startSims(vertx, Map.of("sim", SimConfig.of(29).withApiKey("sk-sim")
                .withModel("m-slow-a", slow).withModel("m-fast-a", fast)
                .withModel("m-slow-b1", slow).withModel("m-slow-b2", slow)
                .withModel("m-slow-s1", slow).withModel("m-slow-s2", slow)
                .withModel("m-gap", steady)));
        gw = GatewayHarness.start(vertx, YAML, sims, RedisStores.standalone(vertx, redis.url()));
    }

    @AfterAll
    static void stop() {
        if (gw != null) {
            gw.close();
        }
        if (sims != null) {
            sims.values().forEach(SimServer::close);
        }
        if (vertx != null) {
            vertx.close().toCompletionStage().toCompletableFuture().join();
        }
        if (redis != null) {
            redis.close();
        }
    }

    /*
     * The margins are a second wide on each side, so that a loaded machine cannot change the trail: in allslow and
     * streamslow the first attempt ends at its 2 s read_timeout, the deadline comes at 3 s, a second before the
     * second attempt's own read_timeout would (at 4 s) and five before the slow models answer (8 s).
     */

    static Response send(String alias, boolean stream) {
        return given().baseUri(gw.baseUrl()).auth().oauth2("k-acme").contentType("application/json")
                .body("{\"model\":\"" + alias + "\"" + (stream ? ",\"stream\":true" : "")
                        + ",\"messages\":[{\"role\":\"user\",\"content\":\"hello\"}]}")
                .post("/v1/chat/completions");
    }

    static JsonNode json(String text) {
        try {
            return Json.parse(text.getBytes());
        } catch (IOException e) {
            throw new AssertionError(text, e);
        }
    }

    /** The 504 request_timeout envelope, naming the group's bound. */
    static void assertRequestTimeout(JsonNode envelope, long boundMs) {
        JsonNode error = envelope.path("error");
        assertEquals("request_timeout", error.path("code").asText(), envelope.toString());
        assertEquals("server_error", error.path("type").asText(), envelope.toString());
        assertTrue(error.path("param").isNull(), envelope.toString());
        assertTrue(error.path("message").asText().contains("request_timeout of " + boundMs + " ms"),
                envelope.toString());
    }

    /**
     * Without request_timeout the slow member's answer (8 s) would be waited for, read_timeout notwithstanding (its
     * head comes only with the answer); with it, read_timeout (1000, Kong's milliseconds) ends that attempt and the
     * request fails over to the fast member well within the bound.
     */
    @Test
    void aSlowNonStreamedMemberFailsOverToAFastOneWithinTheBound() {
        Response r = send("failsover", false);
        assertEquals(200, r.statusCode(), r.asString());
        assertEquals(List.of("slow-a:failed:timeout_read", "fast-a:success"), KongRetryTest.trail(r));
        assertEquals("fast-a", r.header("x-hedgerow-route"));
    }

    /**
     * Every member slow: the first attempt ends at read_timeout (written in Kong's balancer block) and fails over,
     * the second is stopped by the request deadline, and the client gets 504 request_timeout with retry advice.
     */
    @Test
    void whenEveryNonStreamedMemberIsSlowTheClientGetsTheTimeoutError() {
        Response r = send("allslow", false);
        assertEquals(504, r.statusCode(), r.asString());
        assertRequestTimeout(json(r.asString()), 3000);
        assertEquals(List.of("slow-b1:failed:timeout_read", "slow-b2:failed:timeout_request"),
                KongRetryTest.trail(r));
        assertNotNull(r.header("retry-after-ms"), r.headers().toString());
    }

    /**
     * A stream's first token: the head comes at once, but no content; read_timeout abandons the first attempt (not
     * the first-token ceiling of 30 s), and the deadline stops the second. The head was still held, so the client
     * gets a plain 504.
     */
    @Test
    void whenEveryStreamedMemberIsSilentTheClientGetsTheTimeoutErrorBeforeAnyContent() {
        Response r = send("streamslow", true);
        assertEquals(504, r.statusCode(), r.asString());
        assertRequestTimeout(json(r.asString()), 3000);
        assertEquals(List.of("slow-s1:failed:timeout_first_token", "slow-s2:failed:timeout_request"),
                KongRetryTest.trail(r));
    }

    /**
     * Between tokens: the stream has begun and then stops for 20 s. The stall watchdog would allow it its floor
     * (5 s) and a last hope read_timeout (10 s); the request deadline, which runs from the last content, ends it after
     * 1 s with a request_timeout error event.
     */
    @Test
    void aStreamSilentBetweenTokensForTheBoundEndsWithTheTimeoutErrorEvent() {
        gw.sim("sim").enqueue("m-gap", Fault.stall(2, 20_000));
        Response r = send("gappy", true);
        assertEquals(200, r.statusCode(), r.asString());
        String body = r.asString();
        assertTrue(!Sse.content(body).isEmpty(), body);
        List<JsonNode> events = Sse.events(body);
        JsonNode last = events.get(events.size() - 1);
        assertRequestTimeout(last, 1000);
        assertTrue(last.path("error").path("message").asText().startsWith("The stream of 'gappy' made no progress"),
                last.toString());
        assertEquals(List.of("gap:failed:timeout_request"), KongRetryTest.streamTrail(r));
        assertTrue(Sse.endsWithDone(body), body);
    }
}
