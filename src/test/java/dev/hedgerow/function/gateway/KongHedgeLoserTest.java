package dev.hedgerow.function.gateway;

import com.fasterxml.jackson.databind.JsonNode;
import dev.hedgerow.routing.LearnedModels;
import dev.hedgerow.routing.PeakEwma;
import dev.hedgerow.sim.Fault;
import dev.hedgerow.sim.ModelScript;
import dev.hedgerow.sim.SimConfig;
import dev.hedgerow.sim.SimServer;
import dev.hedgerow.state.MemoryStateStore;
import dev.hedgerow.state.RouteSnapshot;
import dev.hedgerow.testsupport.GatewayHarness;
import dev.hedgerow.testsupport.Sse;
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
import java.util.Collections;
import java.util.List;
import java.util.Map;

import static dev.hedgerow.testsupport.Eventually.eventually;
import static io.restassured.RestAssured.given;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Kong's {@code lowest_latency} (peak EWMA) with hedging on: an attempt that loses the race with no first token, or is
 * abandoned for its silence, still says its answer would have taken at least as long as it waited. The gateway's wall
 * clock (what the peak EWMAs stamp samples with and decay by, τ = 10 s) stands still unless a test moves it, so a
 * seeded cost stays put; latencies are the simulator's scripted first tokens, far apart (5 s against 200 ms), and
 * compared, never timed. Every group's hedge window is 1 s, so that a loser's wait (the window and the winner's
 * answer) stays a second above anything the winning route measures, however slow a loaded host makes one of its
 * answers. The org's hedge budget is generous, so that every window that passes fires its hedge.
 */
class KongHedgeLoserTest {
    static final String YAML = """
            orgs:
              - id: acme
                keys: [{ name: app, key: "k-acme" }]
                hedge_budget: { ratio: 1, min_per_window: 1000 }
                providers:
                  - { id: alpha, base_url: "${SIM_ALPHA_URL}" }
                  - { id: beta, base_url: "${SIM_BETA_URL}" }
                routes:
                  - { id: e-alpha, alias: eshift, provider: alpha, model: m-shift }
                  - { id: e-beta, alias: eshift, provider: beta, model: m-shift }
                  - { id: t-alpha, alias: tshift, provider: alpha, model: m-tpot }
                  - { id: t-beta, alias: tshift, provider: beta, model: m-tpot }
                  - { id: h-alpha, alias: tail, provider: alpha, model: m-tail }
                  - { id: h-beta, alias: tail, provider: beta, model: m-tail }
                groups:
                  eshift: { strategy: lowest_latency, latency_strategy: e2e, first_token_floor: 1s }
                  tshift: { strategy: lowest_latency, latency_strategy: tpot, first_token_floor: 1s }
                  tail: { strategy: lowest_latency, latency_strategy: e2e, first_token_floor: 1s }
            """;

    Vertx vertx;
    Map<String, SimServer> sims;
    final FakeTicker wall = new FakeTicker();
    InstantSource clock;
    GatewayHarness gw;

    @BeforeEach
    void start() {
        vertx = Vertx.vertx();
        // m-shift: alpha, learnt fast (first token 30 ms, 100 ms in all, 2 ms a token), now takes 5 s to its first
        // token; beta answers in 200 ms and then 20 ms a token, as learnt. m-tpot: alpha now takes 5 s to its first
        // token; beta answers all 4 tokens after 200 ms. m-tail: alpha answers in 10 ms but for the request a test
        // stalls; beta takes 300 ms
        ModelScript four = ModelScript.defaults().withLength(4);
        sims = GatewayHarness.startSims(vertx, Map.of(
                "alpha", SimConfig.of(9).withModel("m-shift", four.withLatency(ModelScript.Latency.of(5000, 500)))
                        .withModel("m-tpot", four.withLatency(ModelScript.Latency.of(5000, 0)))
                        .withModel("m-tail", four.withLatency(ModelScript.Latency.of(10, 0))),
                "beta", SimConfig.of(9).withModel("m-shift", four.withLatency(ModelScript.Latency.of(200, 50)))
                        .withModel("m-tpot", four.withLatency(ModelScript.Latency.of(200, 0)))
                        .withModel("m-tail", four.withLatency(ModelScript.Latency.of(300, 0)))));
        Instant base = Instant.now();
        clock = () -> base.plusNanos(wall.nanos());
        gw = GatewayHarness.start(vertx, YAML, sims, new MemoryStateStore(Ticker.system()), clock);
        for (String group : List.of("e", "t")) {
            learnt(group + "-alpha", 30, 100, 2);
            learnt(group + "-beta", 200, 300, 20);
        }
        learnt("h-alpha", 10, 50, 2);
        learnt("h-beta", 300, 300, 2);
    }

    @AfterEach
    void stop() {
        gw.close();
        sims.values().forEach(SimServer::close);
        vertx.close().toCompletionStage().toCompletableFuture().join();
    }

    /** Stores what 40 answers taught route {@code id}: its TTFT line and its peak EWMAs, stamped now. */
    void learnt(String id, double ttftMs, double e2eMs, double tpotMs) {
        String route = "acme/" + id;
        GroupKit.learntTtft(gw.core().store(), route, ttftMs);
        gw.core().store().putRouteBlob(route, LearnedModels.PEWMA_E2E,
                new PeakEwma(10_000, e2eMs, clock.millis(), 40).encode(), null).await().atMost(Duration.ofSeconds(5));
        gw.core().store().putRouteBlob(route, LearnedModels.PEWMA_TPOT,
                new PeakEwma(10_000, tpotMs, clock.millis(), 40).encode(), null).await().atMost(Duration.ofSeconds(5));
    }

    PeakEwma pewma(String id, String name) {
        RouteSnapshot s = gw.core().store().snapshot(List.of("acme/" + id), Duration.ofMinutes(1))
                .await().atMost(Duration.ofSeconds(5)).get("acme/" + id);
        return s.blob(name).map(b -> PeakEwma.decode(b, 10_000)).orElse(PeakEwma.fresh(10_000));
    }

    /** Sends one streamed request and returns its attempt trail. */
    JsonNode trail(String alias, String prompt) {
        String out = given().baseUri(gw.baseUrl()).auth().oauth2("k-acme").contentType("application/json")
                .body("{\"model\":\"" + alias + "\",\"stream\":true,\"messages\":[{\"role\":\"user\",\"content\":\""
                        + prompt + "\"}]}")
                .post("/v1/chat/completions").then().statusCode(200).extract().asString();
        return Sse.trail(out);
    }

    /** Eight requests to {@code alias} whose routes are {@code slowed} and {@code other}; their primaries. */
    List<String> slowdown(String alias, String slowed, String other) {
        List<String> primaries = new ArrayList<>();
        for (int i = 0; i < 8; i++) {
            JsonNode trail = trail(alias, "q" + i);
            primaries.add(GroupKit.primary(trail));
            if (GroupKit.primary(trail).equals(slowed)) {
                assertEquals("lost_race", GroupKit.outcome(trail, slowed), trail.toString());
                assertEquals("success", GroupKit.outcome(trail, other), trail.toString());
            }
        }
        return primaries;
    }

    /**
     * Ranked by end-to-end latency: every attempt on the slowed route is cancelled by a hedge that wins, so it never
     * answers. Before its losers taught the peak EWMA anything it stayed first for every request (8 of 8 primaries
     * on e-alpha, each paying the hedge window). Its loser's wait (the 1 s window and beta's 200 ms first token) is
     * a lower bound of its end-to-end time far above its 100 ms: the peak takes it at once, a second above beta's
     * ~260 ms answers. (With a 200 ms window the wait was ~400 ms: one of beta's answers 150 ms late on a loaded host
     * would have put e-alpha first again.)
     */
    @Test
    void byEndToEndLatencyARouteThatTurnsSlowLosesThePickThoughHedgesWinEveryRace() {
        List<String> primaries = slowdown("eshift", "e-alpha", "e-beta");
        assertEquals("e-alpha", primaries.get(0), "learnt fastest: " + primaries);
        assertTrue(Collections.frequency(primaries, "e-alpha") <= 2, "still picked first after turning slow: "
                + primaries);
        assertEquals(Collections.nCopies(6, "e-beta"), primaries.subList(2, 8), primaries.toString());
    }

    /**
     * The same slowdown with non-streamed requests (of 4 tokens at most, so that the hedge window, which allows for
     * writing the whole answer, stays short): a hedge's answer comes whole and wins; the loser's wait is a lower bound
     * of its whole answer's time as a stream's is (though no time to first token). Before, 8 of 8 on e-alpha.
     */
    @Test
    void byEndToEndLatencyANonStreamedLoserTeachesToo() {
        List<String> primaries = new ArrayList<>();
        for (int i = 0; i < 8; i++) {
            Response r = given().baseUri(gw.baseUrl()).auth().oauth2("k-acme").contentType("application/json")
                    .body("{\"model\":\"eshift\",\"max_tokens\":4,\"messages\":[{\"role\":\"user\",\"content\":\"n" + i + "\"}]}")
                    .post("/v1/chat/completions");
            assertEquals(200, r.statusCode(), r.asString());
            JsonNode trail = GroupKit.trail(r);
            primaries.add(GroupKit.primary(trail));
            if (GroupKit.primary(trail).equals("e-alpha")) {
                assertEquals("lost_race", GroupKit.outcome(trail, "e-alpha"), trail.toString());
            }
        }
        assertEquals("e-alpha", primaries.get(0), "learnt fastest: " + primaries);
        assertTrue(Collections.frequency(primaries, "e-alpha") <= 2, "still picked first after turning slow: "
                + primaries);
        assertEquals(Collections.nCopies(6, "e-beta"), primaries.subList(2, 8), primaries.toString());
    }

    /**
     * Ranked by time per output token (an answer's latency over its completion tokens), which a loser (no token at
     * all) cannot measure: its wait spread over the answer the winner gave (the 4 tokens it would have had to write,
     * the whole answer then taking at least the ~1.2 s it waited: the group's 1 s window and beta's 200 ms) is a lower
     * bound of it, ~300 ms a token, far above beta's 20 ms learnt and ~50 ms measured (its 200 ms answer over 4
     * tokens). The window is long so that the bound stays far above what beta measures although beta's first token
     * now counts in it: only a stall of a loaded machine past a second in one of beta's answers would cross it.
     * Before, it stayed first for every request (8 of 8 on t-alpha).
     */
    @Test
    void byTimePerOutputTokenARouteThatTurnsSlowLosesThePickThoughHedgesWinEveryRace() {
        List<String> primaries = slowdown("tshift", "t-alpha", "t-beta");
        assertEquals("t-alpha", primaries.get(0), "learnt fastest: " + primaries);
        assertTrue(Collections.frequency(primaries, "t-alpha") <= 2, "still picked first after turning slow: "
                + primaries);
        assertEquals(Collections.nCopies(6, "t-beta"), primaries.subList(2, 8), primaries.toString());
    }

    /**
     * A fast route's one slow first token that loses to a hedge counts as the slow answer it is a lower bound of, no
     * more: the peak takes its wait (~1.3 s, the 1 s window and beta's 300 ms) at once, as Kong's peak EWMA takes any
     * sample above the average, so the route is avoided (a second above beta's 300 ms answers), and only until that
     * wait decayed with idle time below the others' cost: 30 idle seconds later it is tried again, measured at its
     * 10 ms, and takes the traffic back.
     */
    @Test
    void aFastRoutesSlowLoserCountsAsTheSlowAnswerItBoundsAndDecaysLikeOne() {
        assertEquals("h-alpha", GroupKit.primary(trail("tail", "t0")));
        gw.sim("alpha").enqueue("m-tail", Fault.stall(0, 10_000));
        JsonNode slow = trail("tail", "t1");
        assertEquals("h-alpha", GroupKit.primary(slow));
        assertEquals("lost_race", GroupKit.outcome(slow, "h-alpha"), slow.toString());
        eventually(() -> pewma("h-alpha", LearnedModels.PEWMA_E2E).cost() > 1000, "the loser's wait learnt");
        double cost = pewma("h-alpha", LearnedModels.PEWMA_E2E).cost();
        assertTrue(cost < 5_000, "the wait itself (~1.3 s), no failure's penalty (read_timeout, 60 s): " + cost);
        assertEquals(List.of("h-beta", "h-beta", "h-beta"), List.of(GroupKit.primary(trail("tail", "t2")),
                GroupKit.primary(trail("tail", "t3")), GroupKit.primary(trail("tail", "t4"))));

        wall.advance(Duration.ofSeconds(30));
        List<String> after = new ArrayList<>();
        for (int i = 0; i < 5; i++) {
            after.add(GroupKit.primary(trail("tail", "a" + i)));
        }
        assertTrue(after.subList(0, 2).contains("h-alpha"), after.toString());
        assertEquals(Collections.nCopies(3, "h-alpha"), after.subList(2, 5), after.toString());
    }
}
