package dev.hedgerow.function.gateway;

import com.fasterxml.jackson.databind.JsonNode;
import dev.hedgerow.routing.LearnedModels;
import dev.hedgerow.routing.TtftPredictor;
import dev.hedgerow.sim.Fault;
import dev.hedgerow.sim.ModelScript;
import dev.hedgerow.state.RouteSnapshot;
import dev.hedgerow.state.StateStore;
import dev.hedgerow.testsupport.GatewayHarness;
import io.restassured.response.Response;
import org.junit.jupiter.api.Test;

import java.net.Socket;
import java.util.ArrayList;
import java.util.List;

import static dev.hedgerow.function.gateway.GroupKit.await;
import static dev.hedgerow.function.gateway.GroupKit.chat;
import static dev.hedgerow.testsupport.Eventually.eventually;
import static dev.hedgerow.function.gateway.GroupKit.health;
import static dev.hedgerow.function.gateway.GroupKit.key;
import static dev.hedgerow.function.gateway.GroupKit.received;
import static dev.hedgerow.function.gateway.GroupKit.route;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * A half-open probe that comes to no verdict on the route gives the fleet's probe slot back at once, end to end over
 * HTTP against the simulators: the route answers the probe with a client error that is passed through, the client
 * hangs up mid-probe, or the probe loses a hedging race. Each time the breaker stays as it was (no failure, no
 * success) and the very next request is the route's new probe, which closes the breaker, instead of the route
 * waiting out the slot's TTL (about 35 s, far beyond any wait here). Run on the memory store with a fake clock and
 * on a private Redis shared by two gateway instances, where the next request goes to the other instance.
 */
abstract class HalfOpenProbeRelease {
    static final String DO_FIRST = "{\"order\":[\"digitalocean\"]}";
    static final String YAML = GroupKit.yaml("""
                  - { alias: kimi3, provider: digitalocean, model: kimi-k2 }
                  - { alias: kimi3, provider: openrouter, model: kimi-k2 }
                  - { alias: race, provider: digitalocean, model: kimi-k2 }
                  - { alias: race, provider: openrouter, model: kimi-k2 }
                  - { alias: long, provider: digitalocean, model: kimi-k2 }
                  - { alias: long, provider: openrouter, model: kimi-k2 }
            """, """
                  kimi3: { strategy: rr_health, hedging: false }
                  race: { strategy: rr_health, first_token_floor: 200ms }
                  long: { strategy: rr_health, hedging: false, first_token_floor: 200ms, first_token_ceiling: 1s }
            """);
    static final ModelScript QUICK = GroupKit.quick(6);

    /** The instance the probe goes through. */
    abstract GatewayHarness gw();

    /** The instance that sends the next request: the same one on memory, the other instance on Redis. */
    abstract GatewayHarness next();

    /** The shared state, as the test reads it. */
    abstract StateStore store();

    /** Lets the route's fail_timeout (30 s) pass: its cooldown and last-failure marker expire, as TTLs do. */
    abstract void passFailTimeout(String routeId);

    /** Opens the route's breaker with one 500 (max_fails 1) and lets its cooldown pass: it is half-open. */
    void halfOpen(String alias, String routeId) {
        GroupKit.failOnce(gw(), alias, "digitalocean", "kimi-k2");
        eventually(() -> health(store(), routeId).coolingDown(), "the failure is recorded");
        passFailTimeout(routeId);
        RouteSnapshot s = health(store(), routeId);
        assertTrue(!s.coolingDown() && s.fails() == 1 && !s.probeTaken(), "precondition: half-open " + s);
        gw().sim("digitalocean").resetStats();
    }

    /** The slot is given back with no verdict, and the next request, on the next instance, probes and closes. */
    void assertTheNextRequestProbesAtOnce(String alias, String routeId) {
        eventually(() -> !health(store(), routeId).probeTaken(), "the probe slot is given back");
        RouteSnapshot s = health(store(), routeId);
        assertEquals(1, s.fails(), "no verdict on the route: still at its failure limit");
        assertFalse(s.coolingDown(), "nothing cooled down");
        gw().sim("digitalocean").script("kimi-k2", QUICK);
        Response r = chat(next(), alias, "the next probe", false, DO_FIRST);
        assertEquals(200, r.statusCode(), r.asString());
        assertEquals(routeId, route(r), "the next request was the route's new probe");
        eventually(() -> health(store(), routeId).fails() == 0, "its success closes the breaker");
        assertFalse(health(store(), routeId).probeTaken());
    }

    static List<String> outcomes(JsonNode trail) {
        List<String> out = new ArrayList<>();
        trail.forEach(a -> out.add(a.path("route").asText() + ":" + a.path("outcome").asText()));
        return out;
    }

    @Test
    void aClientErrorAnsweringTheHalfOpenProbeIsPassedThroughAndTheNextRequestProbesAtOnce() {
        halfOpen("kimi3", "kimi3-digitalocean");
        gw().sim("digitalocean").enqueue("kimi-k2", Fault.contentFilter());
        Response r = chat(gw(), "kimi3", "filtered", false, DO_FIRST);
        assertEquals(400, r.statusCode(), "a client error reaches the client as the provider sent it");
        assertEquals("content_filter", r.jsonPath().getString("error.code"));
        assertEquals(List.of("kimi3-digitalocean:client_error"), outcomes(GroupKit.trail(r)));
        assertEquals(1, received(gw(), "digitalocean", "kimi-k2"));
        assertTheNextRequestProbesAtOnce("kimi3", "kimi3-digitalocean");
    }

    @Test
    void aClientHangingUpDuringTheHalfOpenProbeLetsTheNextRequestProbeAtOnce() throws Exception {
        halfOpen("kimi3", "kimi3-digitalocean");
        gw().sim("digitalocean").enqueue("kimi-k2", Fault.noResponse());
        String body = GroupKit.body("kimi3", "hang up", true, DO_FIRST);
        try (Socket client = GroupKit.sendAndHold(gw(), body)) {
            eventually(() -> received(gw(), "digitalocean", "kimi-k2") == 1, "the probe is upstream");
            assertTrue(health(store(), "kimi3-digitalocean").probeTaken(), "precondition: the probe holds the slot");
        }
        eventually(() -> gw().sim("digitalocean").stats("kimi-k2").cancelled() == 1, "the probe is cancelled");
        eventually(() -> GroupKit.audit(store(), "request").stream().anyMatch(e -> "499".equals(e.get("status"))
                && e.get("attempt_trail").contains("client_cancelled")), "a 499 request event");
        assertTheNextRequestProbesAtOnce("kimi3", "kimi3-digitalocean");
    }

    @Test
    void aHalfOpenProbeThatLosesTheHedgingRaceLetsTheNextRequestProbeAtOnce() {
        halfOpen("race", "race-digitalocean");
        // the route has answered in ~100 ms so far, so its hedge window is the 200 ms floor; this time it stalls
        learnQuickFirstTokens("race-digitalocean");
        gw().sim("digitalocean").script("kimi-k2", QUICK.withLatency(ModelScript.Latency.of(10_000, 0)));
        Response r = chat(gw(), "race", "race me", true, DO_FIRST);
        assertEquals(200, r.statusCode(), r.asString());
        assertEquals(List.of("race-digitalocean:lost_race", "race-openrouter:success"),
                outcomes(GroupKit.trail(r)));
        eventually(() -> gw().sim("digitalocean").stats("kimi-k2").cancelled() == 1, "the loser is cancelled");
        assertTheNextRequestProbesAtOnce("race", "race-digitalocean");
    }

    /** The route has answered its first token in ~100 ms so far: its first-token window is its group's floor. */
    void learnQuickFirstTokens(String routeId) {
        TtftPredictor p = TtftPredictor.fresh(TtftPredictor.Prior.defaults());
        for (int i = 0; i < 40; i++) {
            p = p.update(5 + i, 100);
        }
        await(store().putRouteBlob(key(routeId), LearnedModels.TTFT, p.encode(), null));
    }

    /** Both runs warm the routes once, so every test starts from learned, quick routes. */
    static void warmUp(GatewayHarness gw) {
        for (String alias : List.of("kimi3", "race")) {
            for (String p : List.of(DO_FIRST, "{\"order\":[\"openrouter\"]}")) {
                assertEquals(200, chat(gw, alias, "warm up", false, p).statusCode());
            }
        }
    }
}
