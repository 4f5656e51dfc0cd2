package dev.hedgerow.function.gateway;

import dev.hedgerow.sim.Fault;
import dev.hedgerow.sim.ModelScript;
import dev.hedgerow.state.CachingStateStore;
import dev.hedgerow.testsupport.GatewayHarness;
import dev.hedgerow.testsupport.GatewayPair;
import dev.hedgerow.time.FakeTicker;
import io.restassured.response.Response;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;

import static dev.hedgerow.function.gateway.GroupKit.chat;
import static dev.hedgerow.function.gateway.GroupKit.route;
import static dev.hedgerow.function.gateway.GroupKit.trailRoutes;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotEquals;

/**
 * Two gateway instances on one Redis, each ranking on its own snapshot cache (as deployed with
 * {@code hedgerow.state.snapshot-max-age}), time moved by hand: the instance that sees a failure stops using the route
 * on its next request; the other may still rank on its copy until max-age and no later.
 */
class SnapshotCacheTest {
    static final String DO_FIRST = "{\"order\":[\"digitalocean\"]}";
    static final String YAML = GroupKit.yaml("""
                  - { alias: kimi3, provider: openrouter, model: kimi-k2 }
                  - { alias: kimi3, provider: digitalocean, model: kimi-k2 }
                  - { alias: rot, provider: fireworks, model: kimi-k2 }
                  - { alias: rot, provider: together, model: kimi-k2 }
            """, """
                  kimi3: { strategy: rr_health, hedging: false, breaker: { max_fails: 1, fail_timeout: 60s } }
                  rot: { strategy: rr_health, hedging: false }
            """);
    static final ModelScript QUICK = GroupKit.quick(6);
    static final Duration MAX_AGE = Duration.ofSeconds(30);

    static final FakeTicker TICKER = new FakeTicker();
    static GatewayPair pair;
    static GatewayHarness gw1;
    static GatewayHarness gw2;

    @BeforeAll
    static void start() {
        pair = GatewayPair.onPrivateRedis(YAML, GroupKit.sims(QUICK, "kimi-k2"),
                store -> new CachingStateStore(store, MAX_AGE, TICKER));
        gw1 = pair.gw1();
        gw2 = pair.gw2();
    }

    @AfterAll
    static void stop() {
        pair.close();
    }

    @Test
    void eachInstanceStillRotatesRequestByRequestOnItsBlockOfTheSharedCursor() {
        for (GatewayHarness gw : List.of(gw1, gw2)) {
            List<String> served = new ArrayList<>();
            for (int i = 0; i < 6; i++) {
                served.add(route(chat(gw, "rot", "turn " + i)));
            }
            for (int i = 1; i < served.size(); i++) {
                assertNotEquals(served.get(i - 1), served.get(i), "round robin on one instance: " + served);
            }
        }
    }

    @Test
    void aFailureIsSeenAtOnceWhereItHappenedAndWithinMaxAgeElsewhere() {
        assertEquals("kimi3-digitalocean", route(chat(gw1, "kimi3", "warm one", false, DO_FIRST)));
        assertEquals("kimi3-digitalocean", route(chat(gw2, "kimi3", "warm two", false, DO_FIRST)));

        gw1.sim("digitalocean").enqueue("kimi-k2", Fault.status(503));
        Response failed = chat(gw1, "kimi3", "fails over", false, DO_FIRST);
        assertEquals(200, failed.statusCode());
        assertEquals("kimi3-openrouter", route(failed), "failed over after the 503");
        Response next = chat(gw1, "kimi3", "after the failure", false, DO_FIRST);
        assertEquals("kimi3-openrouter", route(next));
        assertFalse(trailRoutes(GroupKit.trail(next)).contains("kimi3-digitalocean"),
                "the instance that saw the failure ranks on it at once");

        assertEquals("kimi3-digitalocean", route(chat(gw2, "kimi3", "stale copy", false, DO_FIRST)),
                "inside max-age the other instance still ranks on its copy");

        TICKER.advance(MAX_AGE);
        Response fresh = chat(gw2, "kimi3", "fresh copy", false, DO_FIRST);
        assertEquals("kimi3-openrouter", route(fresh));
        assertFalse(trailRoutes(GroupKit.trail(fresh)).contains("kimi3-digitalocean"),
                "after max-age the other instance sees the cooldown");
    }
}
