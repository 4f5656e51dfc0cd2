package dev.hedgerow.prober;

import dev.hedgerow.function.prober.VertxMetricsSource;
import dev.hedgerow.routing.LearnedModels;
import dev.hedgerow.routing.PeakEwma;
import dev.hedgerow.sim.Fault;
import dev.hedgerow.sim.ModelScript;
import dev.hedgerow.sim.SimConfig;
import dev.hedgerow.sim.SimServer;
import dev.hedgerow.state.MemoryStateStore;
import dev.hedgerow.state.RouteSnapshot;
import dev.hedgerow.testsupport.GatewayHarness;
import dev.hedgerow.time.FakeTicker;
import dev.hedgerow.time.Ticker;
import io.restassured.response.Response;
import io.vertx.core.Vertx;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

import java.time.Duration;
import java.time.Instant;
import java.time.InstantSource;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

import static io.restassured.RestAssured.given;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * What the prober learns counts in Kong's {@code lowest_latency} as live traffic does: a failed probe is the same
 * latency penalty on the route's peak EWMAs as a failed live attempt (a token gap of {@code stall_floor}, an answer of
 * {@code read_timeout}), and a probe with no first token in its time is the lower bound a hedge race's loser is (the
 * whole answer took at least that wait; each of the probe's at most 32 tokens at least that wait over them). The groups
 * have no breaker ({@code max_fails: 0}), so only the ranking can pass a failing route over; which route the gateway
 * then picks is read over HTTP. The gateway's wall clock (what the peak EWMAs stamp and decay by) stands still, so the
 * learnt costs stay as seeded until a sample above them; probes go to real simulators, latencies are scripted far
 * apart and compared, never timed.
 */
class KongProbePenaltyTest {
    static final String YAML = """
            orgs:
              - id: acme
                keys: [{ name: app, key: "k-acme" }]
                providers:
                  - { id: alpha, base_url: "${SIM_ALPHA_URL}" }
                  - { id: beta, base_url: "${SIM_BETA_URL}" }
                routes:
                  - { id: e-alpha, alias: kong-e2e, provider: alpha, model: a-e }
                  - { id: e-beta, alias: kong-e2e, provider: beta, model: b-e }
                  - { id: t-alpha, alias: kong-tpot, provider: alpha, model: a-t }
                  - { id: t-beta, alias: kong-tpot, provider: beta, model: b-t }
                groups:
                  kong-e2e: { strategy: lowest_latency, latency_strategy: e2e, breaker: { max_fails: 0 } }
                  kong-tpot: { strategy: lowest_latency, latency_strategy: tpot, breaker: { max_fails: 0 } }
            """;

    /** beta: first token after 5 ms, then 400 tokens/s: a 24-token answer in ~63 ms, 2.5 ms a token. */
    static final ModelScript QUICK = ModelScript.defaults().withLength(24).withLatency(ModelScript.Latency.of(5, 400));

    Vertx vertx;
    Map<String, SimServer> sims;
    final FakeTicker wall = new FakeTicker();
    InstantSource clock;
    GatewayHarness gw;
    VertxMetricsSource metrics;

    @BeforeEach
    void start() {
        vertx = Vertx.vertx();
        Map<String, SimConfig> cfg = new LinkedHashMap<>();
        // alpha: a 24-token answer in ~160 ms (e2e group), 10 ms a token (tpot group)
        cfg.put("alpha", SimConfig.of(3)
                .withModel("a-e", QUICK.withLatency(ModelScript.Latency.of(100, 400)))
                .withModel("a-t", QUICK.withLatency(ModelScript.Latency.of(5, 100))));
        cfg.put("beta", SimConfig.of(3).withModel("b-e", QUICK).withModel("b-t", QUICK));
        sims = GatewayHarness.startSims(vertx, cfg);
        Instant base = Instant.now();
        clock = () -> base.plusNanos(wall.nanos());
        gw = GatewayHarness.start(vertx, YAML, sims, new MemoryStateStore(Ticker.system()), clock);
        metrics = new VertxMetricsSource(vertx);
        // what earlier traffic taught: beta the fastest by both measures
        learnt("e-alpha", LearnedModels.PEWMA_E2E, 160);
        learnt("e-beta", LearnedModels.PEWMA_E2E, 63);
        learnt("t-alpha", LearnedModels.PEWMA_TPOT, 10);
        learnt("t-beta", LearnedModels.PEWMA_TPOT, 2.5);
    }

    @AfterEach
    void stop() {
        gw.close();
        metrics.close();
        sims.values().forEach(SimServer::close);
        vertx.close().toCompletionStage().toCompletableFuture().join();
    }

    void learnt(String id, String pewma, double ms) {
        gw.core().store().putRouteBlob("acme/" + id, pewma, new PeakEwma(10_000, ms, clock.millis(), 40).encode(),
                null).await().atMost(Duration.ofSeconds(5));
    }

    RoundReport round(Duration probeTimeout) {
        return gw.proberRound(metrics,
                ProberConfig.defaults().withProbeTimeout(probeTimeout).withMinInterval(Duration.ZERO));
    }

    static String outcome(RoundReport r, String route) {
        return r.routes().stream().filter(x -> x.route().equals(route)).findFirst().orElseThrow().outcome();
    }

    PeakEwma pewma(String id, String name) {
        RouteSnapshot s = gw.core().store().snapshot(List.of("acme/" + id), Duration.ofMinutes(1))
                .await().atMost(Duration.ofSeconds(5)).get("acme/" + id);
        return s.blob(name).map(b -> PeakEwma.decode(b, 10_000)).orElse(PeakEwma.fresh(10_000));
    }

    /** The route the gateway serves one streamed request of {@code alias} from. */
    String picked(String alias) {
        Response r = given().baseUri(gw.baseUrl()).auth().oauth2("k-acme").contentType("application/json")
                .body("{\"model\":\"" + alias + "\",\"stream\":true,\"messages\":[{\"role\":\"user\","
                        + "\"content\":\"go\"}]}")
                .post("/v1/chat/completions");
        assertEquals(200, r.statusCode(), r.asString());
        return r.header("x-hedgerow-route");
    }

    /** Before the round: beta, learnt the fastest, takes the traffic. */
    void measured() {
        assertEquals("e-beta", picked("kong-e2e"), costs(LearnedModels.PEWMA_E2E, "e"));
        assertEquals("t-beta", picked("kong-tpot"), costs(LearnedModels.PEWMA_TPOT, "t"));
    }

    String costs(String name, String group) {
        return group + "-alpha " + pewma(group + "-alpha", name) + ", " + group + "-beta " + pewma(group + "-beta", name);
    }

    /**
     * Before, only live failures added the penalty: a route whose probes failed kept its fast costs and stayed first
     * (with no breaker, every request paid a failed attempt before it was failed over).
     */
    @Test
    void aFailedProbeIsTheLatencyPenaltyALiveFailureIs() {
        measured();
        sims.get("beta").enqueue("b-e", Fault.status(500));
        sims.get("beta").enqueue("b-t", Fault.status(500));

        RoundReport r = round(Duration.ofSeconds(5));

        assertTrue(outcome(r, "e-beta").startsWith("failed: "), r.toString());
        assertTrue(outcome(r, "t-beta").startsWith("failed: "), r.toString());
        assertTrue(pewma("e-beta", LearnedModels.PEWMA_E2E).cost() >= 60_000, "penalty: read_timeout, 60 s");
        double tpot = pewma("t-beta", LearnedModels.PEWMA_TPOT).cost();
        assertTrue(tpot >= 5_000, "penalty: stall_floor, 5 s a token");
        // and no more: read_timeout (60 s) a token kept a failed route avoided for a minute more (untested; found by
        // hunt25's mutation testing)
        assertTrue(tpot < 10_000, "a token's penalty is stall_floor, not read_timeout: " + tpot);
        assertEquals("e-alpha", picked("kong-e2e"), costs(LearnedModels.PEWMA_E2E, "e"));
        assertEquals("t-alpha", picked("kong-tpot"), costs(LearnedModels.PEWMA_TPOT, "t"));
    }

    /**
     * beta turns slow: no first token within the probe's 2 s. Before, that wait taught the peak EWMAs nothing and beta
     * stayed first; now its whole answer is known to take at least 2 s (above alpha's ~160 ms) and each of its at most
     * 32 tokens at least 62 ms (above alpha's 10 ms). No breaker failure: it is slow, not broken.
     */
    @Test
    void aProbeWithNoFirstTokenInItsTimeIsALowerBoundAsALiveLosersWaitIs() {
        measured();
        ModelScript slowed = QUICK.withLatency(ModelScript.Latency.of(5_000, 400));
        sims.get("beta").script("b-e", slowed);
        sims.get("beta").script("b-t", slowed);

        RoundReport r = round(Duration.ofSeconds(2));

        assertEquals("slow: no first token within 2000 ms", outcome(r, "e-beta"), r.toString());
        assertEquals("slow: no first token within 2000 ms", outcome(r, "t-beta"), r.toString());
        double e2e = pewma("e-beta", LearnedModels.PEWMA_E2E).cost();
        double tpot = pewma("t-beta", LearnedModels.PEWMA_TPOT).cost();
        assertTrue(e2e >= 2_000 && e2e < 10_000, "the wait, no failure's penalty (60 s): " + e2e);
        assertTrue(tpot >= 62 && tpot < 1_000, "the wait over 32 tokens, no failure's penalty (5 s): " + tpot);
        sims.get("beta").script("b-e", QUICK);
        sims.get("beta").script("b-t", QUICK);
        assertEquals("e-alpha", picked("kong-e2e"), costs(LearnedModels.PEWMA_E2E, "e"));
        assertEquals("t-alpha", picked("kong-tpot"), costs(LearnedModels.PEWMA_TPOT, "t"));
    }

    /**
     * beta's answer begins late (2 s) and is still being written, 50 ms a token, when the probe's 3 s run out. Its
     * rhythm so far is no time per output token (an answer's latency over its completion tokens, the first token's
     * wait included): before, its gaps taught the tpot EWMA ~50 ms, below alpha's 70 ms, and beta stayed first; now its
     * wait over the at most 32 tokens the probe asked for bounds it, ~94 ms a token, as a probe's with no first token.
     */
    @Test
    void anUnfinishedProbesWaitBoundsItsTimePerOutputToken() {
        learnt("t-alpha", LearnedModels.PEWMA_TPOT, 70);
        measured();
        sims.get("beta").script("b-t", QUICK.withLength(64).withLatency(ModelScript.Latency.of(2_000, 20)));

        RoundReport r = round(Duration.ofSeconds(3));

        assertTrue(outcome(r, "t-beta").matches("slow: \\d+ token\\(s\\), answer not finished within \\d+ ms"),
                r.toString());
        double tpot = pewma("t-beta", LearnedModels.PEWMA_TPOT).cost();
        assertTrue(tpot >= 93 && tpot < 1_000, "the wait over 32 tokens, no failure's penalty (5 s): " + tpot);
        sims.get("beta").script("b-t", QUICK);
        assertEquals("t-alpha", picked("kong-tpot"), costs(LearnedModels.PEWMA_TPOT, "t"));
    }
}
