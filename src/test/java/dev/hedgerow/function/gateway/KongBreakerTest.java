package dev.hedgerow.function.gateway;

import dev.hedgerow.sim.Fault;
import dev.hedgerow.sim.ModelScript;
import dev.hedgerow.sim.SimConfig;
import dev.hedgerow.sim.SimServer;
import dev.hedgerow.state.MemoryStateStore;
import dev.hedgerow.state.RouteSnapshot;
import dev.hedgerow.testsupport.GatewayHarness;
import dev.hedgerow.time.FakeTicker;
import io.restassured.response.Response;
import io.vertx.core.Vertx;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

import java.time.Duration;
import java.util.List;
import java.util.Map;

import static io.restassured.RestAssured.given;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Kong's circuit breaker ({@code max_fails: 3, fail_timeout: 10s}) through the HTTP API, on a gateway whose state
 * store runs on a fake ticker: total (not consecutive) failures, a reset only on a success after fail_timeout since
 * the last failure, exclusion at max_fails until fail_timeout has passed, then reconsideration. Route "main" is
 * always tried first; "spare" (weight 0) serves only as the failover. The memory store applies each breaker update
 * when dispatch issues it, before the response is written, so every read below sees it.
 */
class KongBreakerTest {
    static final String YAML = """
            orgs:
              - id: acme
                keys: [{ name: app, key: "k-acme" }]
                providers:
                  - { id: sim, base_url: "${SIM_SIM_URL}", api_key: "sk-sim" }
                routes:
                  - { id: main, alias: kb, provider: sim, model: m-main, weight: 100 }
                  - { id: spare, alias: kb, provider: sim, model: m-spare, weight: 0 }
                  - { id: main0, alias: kb0, provider: sim, model: m-main, weight: 100 }
                  - { id: spare0, alias: kb0, provider: sim, model: m-spare, weight: 0 }
                  - { id: main1, alias: kb1, provider: sim, model: m-main, weight: 100 }
                  - { id: spare1, alias: kb1, provider: sim, model: m-spare, weight: 0 }
                groups:
                  kb: { strategy: weighted, hedging: false, breaker: { max_fails: 3, fail_timeout: 10s } }
                  kb0: { strategy: weighted, hedging: false, balancer: { max_fails: 0, fail_timeout: 10000 } }
                  kb1: { strategy: weighted, hedging: false, breaker: { max_fails: 1, fail_timeout: 10s } }
            """;

    Vertx vertx;
    Map<String, SimServer> sims;
    FakeTicker ticker;
    MemoryStateStore store;
    GatewayHarness gw;

    @BeforeEach
    void start() {
        vertx = Vertx.vertx();
        ModelScript instant = ModelScript.defaults().withLength(4).withLatency(ModelScript.Latency.INSTANT);
        sims = GatewayHarness.startSims(vertx, Map.of("sim", SimConfig.of(9).withApiKey("sk-sim")
                .withModel("m-main", instant).withModel("m-spare", instant)));
        ticker = new FakeTicker();
        store = new MemoryStateStore(ticker);
        gw = GatewayHarness.start(vertx, YAML, sims, store);
    }

    @AfterEach
    void stop() {
        gw.close();
        sims.values().forEach(SimServer::close);
        vertx.close().toCompletionStage().toCompletableFuture().join();
    }

    private String send() {
        return send("kb");
    }

    private String send(String alias) {
        Response r = given().baseUri(gw.baseUrl()).auth().oauth2("k-acme").contentType("application/json")
                .body("{\"model\":\"" + alias + "\",\"messages\":[{\"role\":\"user\",\"content\":\"breaker\"}]}")
                .post("/v1/chat/completions");
        assertEquals(200, r.statusCode(), r.asString());
        return r.header("x-hedgerow-route");
    }

    /** One request whose attempt on "main" fails with a 500 and fails over to "spare". */
    private void failOnMain() {
        sims.get("sim").enqueue("m-main", Fault.status(500));
        assertEquals("spare", send());
    }

    private RouteSnapshot main() {
        return route("main");
    }

    private RouteSnapshot route(String id) {
        return store.snapshot(List.of("acme/" + id), Duration.ofMinutes(1)).await().atMost(Duration.ofSeconds(5))
                .get("acme/" + id);
    }

    /** A request to {@code alias} that every attempt fails (each route answers 500 three times over). */
    private Response exhausted(String alias) {
        for (int i = 0; i < 3; i++) {
            sims.get("sim").enqueue("m-main", Fault.status(500));
            sims.get("sim").enqueue("m-spare", Fault.status(500));
        }
        Response r = given().baseUri(gw.baseUrl()).auth().oauth2("k-acme").contentType("application/json")
                .body("{\"model\":\"" + alias + "\",\"messages\":[{\"role\":\"user\",\"content\":\"breaker\"}]}")
                .post("/v1/chat/completions");
        sims.get("sim").clearFaults();
        return r;
    }

    private long mainReceived() {
        return sims.get("sim").stats("m-main").received();
    }

    @Test
    void twoFailuresThenOneSuccessInsideFailTimeoutLeaveTheCounterAtTwo() {
        failOnMain();
        ticker.advance(Duration.ofSeconds(1));
        failOnMain();
        ticker.advance(Duration.ofSeconds(1));
        assertEquals("main", send());
        assertEquals(2, main().fails());
        assertFalse(main().coolingDown());
    }

    @Test
    void failuresCountInTotalSoAThirdOneAfterASuccessExcludesTheTarget() {
        failOnMain();
        failOnMain();
        assertEquals("main", send());
        failOnMain();
        assertEquals(3, main().fails());
        assertTrue(main().coolingDown());
        long before = mainReceived();
        assertEquals("spare", send());
        assertEquals(before, mainReceived(), "an excluded target receives nothing");
    }

    @Test
    void theCounterResetsOnlyOnASuccessAfterFailTimeoutSinceTheLastFailure() {
        failOnMain();
        failOnMain();
        ticker.advance(Duration.ofSeconds(9));
        assertEquals("main", send());
        assertEquals(2, main().fails(), "9 s after the last failure: no reset");
        ticker.advance(Duration.ofSeconds(2));
        assertEquals("main", send());
        assertEquals(0, main().fails(), "11 s after the last failure: reset");
    }

    @Test
    void anExcludedTargetIsReconsideredAfterFailTimeoutAndAFailureExcludesItAgain() {
        failOnMain();
        failOnMain();
        failOnMain();
        long before = mainReceived();
        ticker.advance(Duration.ofSeconds(9));
        assertEquals("spare", send());
        assertEquals(before, mainReceived(), "still excluded at 9 s");

        ticker.advance(Duration.ofSeconds(2));
        failOnMain();   // reconsidered: the probe fails
        assertEquals(before + 1, mainReceived());
        assertEquals(4, main().fails());
        assertTrue(main().coolingDown(), "excluded again");
        assertEquals("spare", send());
        assertEquals(before + 1, mainReceived());
    }

    @Test
    void anExcludedTargetIsReconsideredAfterFailTimeoutAndASuccessMakesItHealthy() {
        failOnMain();
        failOnMain();
        failOnMain();
        ticker.advance(Duration.ofSeconds(11));
        assertEquals("main", send(), "reconsidered after fail_timeout");
        assertEquals(0, main().fails());
        assertFalse(main().coolingDown());
        assertEquals("main", send());
        assertEquals("main", send());
    }

    @Test
    void withMaxFailsZeroAFailingTargetIsFailedOverButNeverExcluded() {
        // Kong (as nginx) reads max_fails 0 as "no circuit breaker"
        for (int i = 0; i < 5; i++) {
            long before = mainReceived();
            sims.get("sim").enqueue("m-main", Fault.status(500));
            assertEquals("spare0", send("kb0"), "failed over, request " + i);
            assertEquals(before + 1, mainReceived(), "main0 is still tried first, request " + i);
        }
        RouteSnapshot main0 = store.snapshot(List.of("acme/main0"), Duration.ofMinutes(1))
                .await().atMost(Duration.ofSeconds(5)).get("acme/main0");
        assertFalse(main0.coolingDown(), "never excluded");
        assertEquals("main0", send("kb0"));
    }

    /**
     * A request every attempt failed is told to wait fail_timeout only when its failures opened the breaker of every
     * route it could use; with max_fails 3 one request's failures (main twice, spare once) open none, and both routes
     * serve at once, so waiting 10 s (the SDKs wait what Retry-After says) would be for nothing.
     */
    @Test
    void anExhaustedRequestIsToldToWaitFailTimeoutOnlyWhenItOpenedEveryBreaker() {
        Response r = exhausted("kb");
        assertEquals(502, r.statusCode(), r.asString());
        assertFalse(main().coolingDown());
        assertFalse(route("spare").coolingDown());
        assertEquals("1", r.header("Retry-After"));
        assertEquals("1000", r.header("retry-after-ms"));
        assertTrue(r.jsonPath().getString("error.message").endsWith("Retry after 1 s."), r.asString());

        Response opened = exhausted("kb1");
        assertEquals(502, opened.statusCode(), opened.asString());
        assertTrue(route("main1").coolingDown());
        assertTrue(route("spare1").coolingDown());
        assertEquals("10", opened.header("Retry-After"));
    }

    @Test
    void withMaxFailsZeroAnExhaustedRequestIsToldToRetryAfterOneSecondNotFailTimeout() {
        // nothing was cooled down, so fail_timeout (10 s here) is no reason to wait
        for (int i = 0; i < 3; i++) {
            sims.get("sim").enqueue("m-main", Fault.status(500));
            sims.get("sim").enqueue("m-spare", Fault.status(500));
        }
        Response r = given().baseUri(gw.baseUrl()).auth().oauth2("k-acme").contentType("application/json")
                .body("{\"model\":\"kb0\",\"messages\":[{\"role\":\"user\",\"content\":\"breaker\"}]}")
                .post("/v1/chat/completions");
        assertEquals(502, r.statusCode(), r.asString());
        assertEquals("1", r.header("Retry-After"));
        assertTrue(r.jsonPath().getString("error.message").endsWith("Retry after 1 s."), r.asString());
    }
}
