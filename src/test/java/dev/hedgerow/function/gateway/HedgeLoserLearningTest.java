package dev.hedgerow.function.gateway;

import com.fasterxml.jackson.databind.JsonNode;
import dev.hedgerow.api.Json;
import dev.hedgerow.routing.Ewma;
import dev.hedgerow.routing.LearnedModels;
import dev.hedgerow.routing.TokenCounter;
import dev.hedgerow.routing.TtftPredictor;
import dev.hedgerow.sim.Fault;
import dev.hedgerow.sim.ModelScript;
import dev.hedgerow.sim.SimConfig;
import dev.hedgerow.testsupport.GatewayHarness;
import dev.hedgerow.testsupport.Sse;
import io.restassured.RestAssured;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Map;

import static dev.hedgerow.testsupport.Eventually.eventually;
import static io.restassured.RestAssured.given;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * With hedging on, an attempt that loses the race without a first token still saw something: its route's first token
 * would have taken at least as long as it waited. That lower bound is learnt (only upwards, clipped as any sample), so
 * a route learnt fast that turned slow loses the pick within a few requests although every one of its attempts is
 * cancelled by a hedge that wins, while a fast route's occasional slow loser (a heavy tail) is only a tail. A loser
 * that waited past the group's first-token target is an SLO miss. The org's hedge budget is generous, so that every
 * window that passes fires its hedge.
 */
class HedgeLoserLearningTest {
    static final String YAML = """
            orgs:
              - id: acme
                keys: [{ name: app, key: "k-acme" }]
                hedge_budget: { ratio: 1, min_per_window: 1000 }
                providers:
                  - { id: alpha, base_url: "${SIM_ALPHA_URL}" }
                  - { id: beta, base_url: "${SIM_BETA_URL}" }
                routes:
                  - { id: s-alpha, alias: shift, provider: alpha, model: m-shift }
                  - { id: s-beta, alias: shift, provider: beta, model: m-shift }
                  - { id: t-alpha, alias: tail, provider: alpha, model: m-tail }
                  - { id: t-beta, alias: tail, provider: beta, model: m-tail }
                  - { id: q-alpha, alias: strict, provider: alpha, model: m-strict }
                  - { id: q-beta, alias: strict, provider: beta, model: m-strict }
                  - { id: l-alpha, alias: lshift, provider: alpha, model: m-lshift }
                  - { id: l-beta, alias: lshift, provider: beta, model: m-lshift }
                  - { id: w-alpha, alias: lwhole, provider: alpha, model: m-shift }
                  - { id: w-beta, alias: lwhole, provider: beta, model: m-shift }
                groups:
                  shift: { first_token_floor: 200ms }
                  tail: { first_token_floor: 200ms }
                  strict: { first_token_floor: 1200ms, slo: { first_token: 1s } }
                  lshift: { strategy: least_latency, first_token_floor: 500ms }
                  lwhole: { strategy: least_latency, first_token_floor: 200ms }
            """;

    static GatewayHarness gw;

    static ModelScript ttft(long ms) {
        return ModelScript.defaults().withLength(4).withLatency(ModelScript.Latency.of(ms, 0));
    }

    @BeforeAll
    static void start() {
        gw = GatewayHarness.start(YAML, Map.of(
                // shift: alpha learnt at 30 ms now takes 1.5 s; beta learnt at 200 ms still takes 200 ms.
                // tail: alpha answers in 10 ms but for the requests a test slows; beta takes 1 s.
                // strict: alpha learnt at 30 ms now takes 5 s; beta takes 100 ms, far under the 1 s target
                // lshift: alpha learnt at 30 ms now takes 1.5 s; beta learnt at 120 ms takes 60 ms
                "alpha", SimConfig.of(9).withModel("m-shift", ttft(1500)).withModel("m-tail", ttft(10))
                        .withModel("m-strict", ttft(5000)).withModel("m-lshift", ttft(1500)),
                "beta", SimConfig.of(9).withModel("m-shift", ttft(200)).withModel("m-tail", ttft(1000))
                        .withModel("m-strict", ttft(100)).withModel("m-lshift", ttft(60))));
        RestAssured.baseURI = gw.baseUrl();
        learnt("acme/s-alpha", 30);
        learnt("acme/s-beta", 200);
        learnt("acme/t-alpha", 10);
        learnt("acme/t-beta", 1000);
        learnt("acme/q-alpha", 30);
        learnt("acme/q-beta", 100);
        learnt("acme/l-alpha", 30);
        learnt("acme/l-beta", 120);
        emaLearnt("acme/l-alpha", 30);
        emaLearnt("acme/l-beta", 120);
        learnt("acme/w-alpha", 30);
        learnt("acme/w-beta", 200);
        emaLearnt("acme/w-alpha", 30);
        emaLearnt("acme/w-beta", 200);
    }

    /** Trifrost's EMA latency ({@code least_latency}) of a route, as 20 first tokens of {@code ms} taught it. */
    static void emaLearnt(String route, double ms) {
        Ewma e = Ewma.fresh(0.3);
        for (int i = 0; i < 20; i++) {
            e = e.observe(ms);
        }
        gw.core().store().putRouteBlob(route, LearnedModels.EMA, e.encode(), null).await()
                .atMost(Duration.ofSeconds(5));
    }

    @AfterAll
    static void stop() {
        gw.close();
    }

    static void learnt(String route, double ttftMs) {
        GroupKit.learntTtft(gw.core().store(), route, ttftMs);
    }

    static String body(String alias, String prompt) {
        return "{\"model\":\"" + alias + "\",\"stream\":true,\"messages\":[{\"role\":\"user\",\"content\":\""
                + prompt + "\"}]}";
    }

    /** Sends one streamed request and returns its attempt trail. */
    static JsonNode trail(String alias, String prompt) {
        String out = given().auth().oauth2("k-acme").contentType("application/json").body(body(alias, prompt))
                .post("/v1/chat/completions").then().statusCode(200).extract().asString();
        return Sse.trail(out);
    }

    static TtftPredictor ttftInStore(String route) {
        return gw.core().store().snapshot(List.of(route), Duration.ofMinutes(1)).await().atMost(Duration.ofSeconds(5))
                .get(route).blob(LearnedModels.TTFT).map(e -> TtftPredictor.decode(e, TtftPredictor.Prior.defaults()))
                .orElseThrow();
    }

    /**
     * Every attempt on the slowed route is cancelled by a hedge that wins, so it never answers. Before the losers
     * taught anything it stayed first for every request (8 of 8 primaries on s-alpha, each paying the hedge window);
     * now its losers' waits, far above its 30 ms line three times in a row, are a changed route, as late answers are.
     */
    @Test
    void aRouteThatTurnsSlowLosesThePickWithinAFewRequestsThoughHedgesWinEveryRace() {
        List<String> primaries = new ArrayList<>();
        for (int i = 0; i < 8; i++) {
            JsonNode trail = trail("shift", "q" + i);
            primaries.add(GroupKit.primary(trail));
            if (GroupKit.primary(trail).equals("s-alpha")) {
                assertEquals("lost_race", GroupKit.outcome(trail, "s-alpha"), trail.toString());
                assertEquals("success", GroupKit.outcome(trail, "s-beta"), trail.toString());
            }
        }
        assertEquals("s-alpha", primaries.get(0), "learnt fastest: " + primaries);
        assertTrue(Collections.frequency(primaries, "s-alpha") <= 4, "still picked first after turning slow: "
                + primaries);
        assertEquals(List.of("s-beta", "s-beta", "s-beta", "s-beta"), primaries.subList(4, 8), primaries.toString());
    }

    /**
     * A fast route (10 ms) whose every fourth request is slow: each slow one loses to a hedge on beta (1 s) after about
     * 1.2 s, far above its line. Clipped as a late answer would be, and never three in a row, the losers leave it
     * first for every request and its hedge window at the floor. Learnt unclipped, three such waits would put its
     * mean past 100 ms, ten times what it answers in.
     */
    @Test
    void aFastRoutesOccasionalSlowLosersAreATailNotASlowdown() throws Exception {
        List<String> primaries = new ArrayList<>();
        int prompt = TokenCounter.shared().countRequest(Json.parse(body("tail", "t0")));
        for (int i = 0; i < 12; i++) {
            boolean slow = i % 4 == 1;
            if (slow) {
                gw.sim("alpha").enqueue("m-tail", Fault.stall(0, 10_000));
            }
            JsonNode trail = trail("tail", "t" + i);
            primaries.add(GroupKit.primary(trail));
            assertEquals(slow ? "lost_race" : "success", GroupKit.outcome(trail, "t-alpha"), i + ": " + trail);
            if (slow) {
                assertEquals("success", GroupKit.outcome(trail, "t-beta"), trail.toString());
            }
        }
        assertEquals(Collections.nCopies(12, "t-alpha"), primaries, "the fast route kept the pick");
        // 40 learnt, 9 answers and 3 losers' waits (before, the losers taught nothing: 49)
        eventually(() -> ttftInStore("acme/t-alpha").samples() == 52, "every answer and loser learnt");
        TtftPredictor.Prediction p = ttftInStore("acme/t-alpha").predict(prompt);
        assertTrue(p.p90Ms() < 200, "the window stays at the 200 ms floor: " + p);
        assertTrue(p.meanMs() < 80, "still a fast route: " + p);
    }

    /**
     * The group's first-token target is 1 s; alpha's attempt loses to a hedge fired at the 1.2 s floor, so its
     * first token would have come after the target if at all: a miss, and alpha (its SLO never measured before)
     * falls below the targets at once and beta, meeting them, takes the pick from the next request on. Its TTFT line
     * alone would have kept it first for three more. A wait under the target would not count: it is no success.
     */
    @Test
    void aLoserThatWaitedPastTheFirstTokenTargetIsAnSloMiss() {
        List<String> primaries = new ArrayList<>();
        for (int i = 0; i < 4; i++) {
            primaries.add(GroupKit.primary(trail("strict", "s" + i)));
        }
        assertEquals(List.of("q-alpha", "q-beta", "q-beta", "q-beta"), primaries);
    }

    /**
     * The same slowdown under {@code least_latency}, which ranks by Trifrost's EMA latency: every attempt on the slowed
     * route loses to a hedge, and before the losers taught that EMA anything it stayed first for every request (8 of
     * 8 primaries on l-alpha). Its losers' waits, each a lower bound above its 30 ms, move it past beta's 120 ms.
     * The margins are wide on purpose, so that a loaded machine cannot reorder the two: a loser waits the 500 ms floor
     * and beta's 60 ms, so one loser takes alpha's EMA (alpha 0.3) from 30 to at least 189 ms, while beta, learnt at
     * 120 ms and answering in 60, would have to be measured above 350 ms to climb past that.
     */
    @Test
    void leastLatencyLearnsFromLosersToo() {
        List<String> primaries = new ArrayList<>();
        for (int i = 0; i < 8; i++) {
            JsonNode trail = trail("lshift", "l" + i);
            primaries.add(GroupKit.primary(trail));
            if (GroupKit.primary(trail).equals("l-alpha")) {
                assertEquals("lost_race", GroupKit.outcome(trail, "l-alpha"), trail.toString());
            }
        }
        assertEquals("l-alpha", primaries.get(0), "learnt fastest: " + primaries);
        assertTrue(Collections.frequency(primaries, "l-alpha") <= 3, "still picked first after turning slow: "
                + primaries);
        assertEquals(Collections.nCopies(4, "l-beta"), primaries.subList(4, 8), primaries.toString());
    }

    /**
     * The same with non-streamed requests (of 4 tokens at most, so that the hedge window, which allows for writing the
     * whole answer, stays short), whose EMA is the whole answer's latency: a loser's wait is a lower bound of it too.
     * Before, 8 of 8 primaries on w-alpha.
     */
    @Test
    void leastLatencyLearnsFromNonStreamedLosers() {
        List<String> primaries = new ArrayList<>();
        for (int i = 0; i < 8; i++) {
            io.restassured.response.Response r = given().auth().oauth2("k-acme").contentType("application/json")
                    .body("{\"model\":\"lwhole\",\"max_tokens\":4,\"messages\":[{\"role\":\"user\",\"content\":\"w"
                            + i + "\"}]}")
                    .post("/v1/chat/completions");
            assertEquals(200, r.statusCode(), r.asString());
            JsonNode trail = GroupKit.trail(r);
            primaries.add(GroupKit.primary(trail));
            if (GroupKit.primary(trail).equals("w-alpha")) {
                assertEquals("lost_race", GroupKit.outcome(trail, "w-alpha"), trail.toString());
            }
        }
        assertEquals("w-alpha", primaries.get(0), "learnt fastest: " + primaries);
        assertTrue(Collections.frequency(primaries, "w-alpha") <= 3, "still picked first after turning slow: "
                + primaries);
        assertEquals(Collections.nCopies(4, "w-beta"), primaries.subList(4, 8), primaries.toString());
    }
}
