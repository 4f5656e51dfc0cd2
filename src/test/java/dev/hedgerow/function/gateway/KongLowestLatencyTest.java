package dev.hedgerow.function.gateway;

import dev.hedgerow.catalog.Org;
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
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

import static dev.hedgerow.testsupport.Eventually.eventually;
import static io.restassured.RestAssured.given;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Kong's {@code lowest_latency} (peak EWMA of time per output token) through the HTTP API, on a gateway whose wall
 * clock (what the EWMA stamps samples with and decays by, τ = 10 s) is moved by hand: one slow stream makes a route
 * be avoided at once (the peak), and an avoided route's metric decays with idle time until it is tried again.
 * Latencies are the simulator's scripted decode speeds (2 ms against 50 ms a token, far enough apart that a busy
 * host's scheduling delays cannot swap them) and one scripted 2 s pause, compared, never timed.
 */
class KongLowestLatencyTest {
    static final String YAML = """
            orgs:
              - id: acme
                keys: [{ name: app, key: "k-acme" }]
                providers:
                  - { id: sim, base_url: "${SIM_SIM_URL}", api_key: "sk-sim", dialect: vllm }
                routes:
                  - { id: quick, alias: fastest, provider: sim, model: m-quick }
                  - { id: steady, alias: fastest, provider: sim, model: m-steady }
                  - { id: breaks, alias: resumed, provider: sim, model: m-breaks, priority: 1,
                      capabilities: [prefill] }
                  - { id: resumes, alias: resumed, provider: sim, model: m-resumes, priority: 2,
                      capabilities: [prefill] }
                  - { id: quick0, alias: unguarded, provider: sim, model: m-quick }
                  - { id: steady0, alias: unguarded, provider: sim, model: m-steady }
                  - { id: late, alias: short, provider: sim, model: m-late }
                  - { id: early, alias: short, provider: sim, model: m-early }
                  - { id: late1, alias: single, provider: sim, model: m-late }
                  - { id: early1, alias: single, provider: sim, model: m-early }
                groups:
                  fastest: { strategy: lowest_latency, latency_strategy: tpot, hedging: false }
                  unguarded: { strategy: lowest_latency, latency_strategy: tpot, hedging: false,
                               breaker: { max_fails: 0 } }
                  resumed: { strategy: priority, hedging: false }
                  short: { strategy: lowest_latency, latency_strategy: tpot, hedging: false }
                  single: { strategy: lowest_latency, latency_strategy: tpot, hedging: false }
            """;

    Vertx vertx;
    Map<String, SimServer> sims;
    final FakeTicker wall = new FakeTicker();
    GatewayHarness gw;

    @BeforeEach
    void start() {
        vertx = Vertx.vertx();
        ModelScript script = ModelScript.defaults().withLength(8);
        sims = GatewayHarness.startSims(vertx, Map.of("sim", SimConfig.of(7).withApiKey("sk-sim")
                .withModel("m-quick", script.withLatency(ModelScript.Latency.of(0, 500)))
                .withModel("m-steady", script.withLatency(ModelScript.Latency.of(0, 20)))
                // the same text (one seed): a stream broken on m-breaks resumes on m-resumes from where it broke
                .withModel("m-breaks", script.withLength(80).withLatency(ModelScript.Latency.of(0, 1000)))
                .withModel("m-resumes", script.withLength(80).withLatency(ModelScript.Latency.of(500, 25)))
                // a slow first token and fast decode (600 ms, then 2 ms a token) against a quick first token and
                // slower decode (20 ms a token): over 8 tokens ~77 ms against ~18 ms a token in all
                .withModel("m-late", script.withLatency(ModelScript.Latency.of(600, 500)))
                .withModel("m-early", script.withLatency(ModelScript.Latency.of(0, 50)))));
        Instant base = Instant.now();
        InstantSource clock = () -> base.plusNanos(wall.nanos());
        gw = GatewayHarness.start(vertx, YAML, sims, new MemoryStateStore(Ticker.system()), clock);
    }

    @AfterEach
    void stop() {
        gw.close();
        sims.values().forEach(SimServer::close);
        vertx.close().toCompletionStage().toCompletableFuture().join();
    }

    /** One streamed request; returns its route once its time per output token is learnt (so the next one sees it). */
    private String served() {
        return served("fastest");
    }

    /** As {@link #served()}, for {@code alias}. */
    private String served(String alias) {
        return served(alias, "\"stream\":true");
    }

    /** As {@link #served()}, for {@code alias}, with {@code options} (JSON members) in the request. */
    private String served(String alias, String options) {
        Org org = gw.core().catalog().current().org("acme").orElseThrow();
        Map<String, Long> before = new HashMap<>();
        org.routesOf(alias).forEach(route -> before.put(route.id(), learnt(route.id())));
        Response r = given().baseUri(gw.baseUrl()).auth().oauth2("k-acme").contentType("application/json")
                .body("{\"model\":\"" + alias + "\"," + options + ",\"messages\":[{\"role\":\"user\","
                        + "\"content\":\"go\"}]}")
                .post("/v1/chat/completions");
        assertEquals(200, r.statusCode(), r.asString());
        if (options.contains("\"stream\":true")) {
            assertTrue(r.asString().contains("data: [DONE]"), r.asString());
        }
        String route = r.header("x-hedgerow-route");
        eventually(() -> learnt(route) == before.get(route) + 1, "the sample of " + route + " learnt");
        return route;
    }

    /** The samples route {@code id}'s peak EWMA of time per output token has taken. */
    private long learnt(String id) {
        return pewma(id, LearnedModels.PEWMA_TPOT).count();
    }

    /** Route {@code id}'s peak EWMA {@code name} (time per output token or end to end) as stored. */
    private PeakEwma pewma(String id, String name) {
        RouteSnapshot s = gw.core().store().snapshot(List.of("acme/" + id), Duration.ofMinutes(1))
                .await().atMost(Duration.ofSeconds(5)).get("acme/" + id);
        return s.blob(name).map(b -> PeakEwma.decode(b, 10_000)).orElse(PeakEwma.fresh(10_000));
    }

    private List<String> served(int n) {
        List<String> out = new ArrayList<>();
        for (int i = 0; i < n; i++) {
            out.add(served());
        }
        return out;
    }

    @Test
    void aSlowStreamIsAvoidedAtOnceAndItsRouteIsTriedAgainOnceItsMetricDecayed() {
        // each route is measured once (never measured ranks first), then the quicker decoder takes everything
        List<String> warm = served(8);
        assertEquals(List.of("quick", "steady"), warm.subList(0, 2).stream().sorted().toList(), warm.toString());
        assertEquals(List.of("quick", "quick", "quick", "quick", "quick", "quick"), warm.subList(2, 8));

        // one stream on quick pauses 2 s after its first 2 tokens: ~290 ms a token, which its peak EWMA takes at
        // once (no averaging with its earlier 2 ms), so steady (50 ms) serves from the next request on
        sims.get("sim").enqueue("m-quick", Fault.stall(2, 2000));
        assertEquals("quick", served());
        long quick = sims.get("sim").stats("m-quick").received();
        assertEquals(List.of("steady", "steady", "steady", "steady"), served(4));
        assertEquals(quick, sims.get("sim").stats("m-quick").received());

        // no time passes on the wall clock: quick stays avoided however many requests come
        assertEquals(List.of("steady", "steady", "steady"), served(3));

        // 30 s idle: quick's ~290 ms decays to ~14 ms (e^-3), under steady's 50 ms once steady is measured afresh;
        // quick is tried again, measured at its 2 ms, and takes the traffic back
        wall.advance(Duration.ofSeconds(30));
        List<String> after = served(6);
        assertTrue(after.subList(0, 2).contains("quick"), after.toString());
        assertEquals(List.of("quick", "quick", "quick", "quick"), after.subList(2, 6), after.toString());
    }

    /**
     * Under {@code max_fails: 0} no breaker takes a failing route out, so its peak EWMA must: a failure is learnt as a
     * latency penalty (a token gap of the group's stall_floor), which the peak takes at once. A route that decodes
     * fastest but has just failed is passed over until the penalty decayed; before, it was tried first again on every
     * request, each one paying a failed attempt.
     */
    @Test
    void withoutABreakerAFailureIsALatencyPenaltyThatKeepsTheFailingRouteFromRankingFirst() {
        List<String> warm = new ArrayList<>();
        for (int i = 0; i < 4; i++) {
            warm.add(served("unguarded"));
        }
        assertEquals(List.of("quick0", "steady0"), warm.subList(0, 2).stream().sorted().toList(), warm.toString());
        assertEquals(List.of("quick0", "quick0"), warm.subList(2, 4));

        sims.get("sim").enqueue("m-quick", Fault.status(500));
        assertEquals("steady0", served("unguarded"), "failed over");
        long quick = sims.get("sim").stats("m-quick").received();
        List<String> after = new ArrayList<>();
        for (int i = 0; i < 4; i++) {
            after.add(served("unguarded"));
        }
        assertEquals(List.of("steady0", "steady0", "steady0", "steady0"), after);
        assertEquals(quick, sims.get("sim").stats("m-quick").received(), "the failed route was not tried first again");
        assertTrue(pewma("quick0", LearnedModels.PEWMA_TPOT).cost() >= 5_000, "penalty: stall_floor, 5 s a token");
        assertTrue(pewma("quick0", LearnedModels.PEWMA_E2E).cost() >= 60_000, "penalty: read_timeout, 60 s");

        // two idle minutes: the penalty decays (e^-12) below steady's measured cost, quick0 is tried again, measured at
        // its 2 ms a token, and takes the traffic back
        wall.advance(Duration.ofMinutes(2));
        List<String> recovered = new ArrayList<>();
        for (int i = 0; i < 6; i++) {
            recovered.add(served("unguarded"));
        }
        assertTrue(recovered.subList(0, 2).contains("quick0"), recovered.toString());
        assertEquals(List.of("quick0", "quick0", "quick0", "quick0"), recovered.subList(2, 6), recovered.toString());
    }

    /**
     * Kong's time per output token is an answer's latency over its completion tokens, the wait for the first token
     * included. Before, an answer's sample was its decode rhythm only (the gaps after the first token): the route
     * with a 600 ms first token and 2 ms gaps looked ten times faster than the one with an instant first token and
     * 20 ms gaps, and took every short request though each of its answers took four times as long.
     */
    @Test
    void aSlowFirstTokenCountsInTheTimePerOutputTokenOfAShortAnswer() {
        List<String> picks = new ArrayList<>();
        for (int i = 0; i < 6; i++) {
            picks.add(served("short"));
        }
        assertEquals(List.of("early", "late"), picks.subList(0, 2).stream().sorted().toList(), picks.toString());
        assertEquals(List.of("early", "early", "early", "early"), picks.subList(2, 6), picks.toString());
        // late's one answer: at least its 600 ms first token over its 8 tokens (a busy host only adds)
        double late = pewma("late", LearnedModels.PEWMA_TPOT).cost();
        assertTrue(late >= 75, "late's time per output token: " + late + " ms");
    }

    /**
     * A non-streamed answer's time per output token is its whole latency over the usage's completion tokens, as a
     * stream's is. Before, it was counted over the gaps between its tokens (tokens - 1), and an answer of one token,
     * having none, taught nothing: both routes stayed never measured and took turns, the one with the 600 ms answer
     * half the requests.
     */
    @Test
    void aNonStreamedAnswerOfOneTokenIsMeasuredByItsWholeLatency() {
        List<String> picks = new ArrayList<>();
        for (int i = 0; i < 6; i++) {
            picks.add(served("single", "\"max_tokens\":1"));
        }
        assertEquals(List.of("early1", "late1"), picks.subList(0, 2).stream().sorted().toList(), picks.toString());
        assertEquals(List.of("early1", "early1", "early1", "early1"), picks.subList(2, 6), picks.toString());
        double late = pewma("late1", LearnedModels.PEWMA_TPOT).cost();
        assertTrue(late >= 600, "late1's one token took its whole answer: " + late + " ms");
    }

    @Test
    void aResumingRouteIsMeasuredByItsOwnTokensAndTimeOnly() {
        // 60 of 80 tokens come from "breaks" (1 ms each), then it drops; "resumes" answers its resume request after
        // 500 ms and writes the last 20 tokens at 40 ms each
        sims.get("sim").enqueue("m-breaks", Fault.dropAfter(60));
        Response r = given().baseUri(gw.baseUrl()).auth().oauth2("k-acme").contentType("application/json")
                .body("{\"model\":\"resumed\",\"stream\":true,\"messages\":[{\"role\":\"user\",\"content\":\"go\"}]}")
                .post("/v1/chat/completions");
        assertEquals(200, r.statusCode(), r.asString());
        assertTrue(r.asString().contains("data: [DONE]") && r.asString().contains("\"kind\":\"resume\""),
                r.asString());
        eventually(() -> pewma("resumes", LearnedModels.PEWMA_TPOT).isMeasured(), "the resuming route's tpot learnt");
        // its own latency (its request sent to its last token: 500 ms + 19 gaps of 40 ms) over its own 20 tokens,
        // ~63 ms a token; neither its gaps alone (40 ms) nor its time spread over all 80 tokens the client got (~16 ms).
        // Bounded at 45: a loaded host once saw the continuation count 23 tokens for the same time (54.9 ms a token)
        double tpot = pewma("resumes", LearnedModels.PEWMA_TPOT).cost();
        assertTrue(tpot >= 45, "time per output token of the resuming route: " + tpot + " ms");
        // and its time is no end-to-end latency: the answer began on the other route
        assertEquals(0, pewma("resumes", LearnedModels.PEWMA_E2E).count());
    }
}
