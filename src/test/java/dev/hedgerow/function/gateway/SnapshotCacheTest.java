package dev.hedgerow.function.gateway;

import dev.hedgerow.sim.Fault;
import dev.hedgerow.sim.ModelScript;
import dev.hedgerow.state.CachingStateStore;
import dev.hedgerow.state.ForwardingStateStore;
import dev.hedgerow.state.RouteSnapshot;
import dev.hedgerow.state.StateStore;
import dev.hedgerow.testsupport.GatewayHarness;
import dev.hedgerow.testsupport.GatewayPair;
import dev.hedgerow.time.FakeTicker;
import io.restassured.response.Response;
import io.smallrye.mutiny.Uni;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

import java.time.Duration;
import java.util.ArrayList;
import java.util.Collection;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.atomic.AtomicInteger;

import static dev.hedgerow.function.gateway.GroupKit.chat;
import static dev.hedgerow.function.gateway.GroupKit.route;
import static dev.hedgerow.function.gateway.GroupKit.trailRoutes;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Two gateway instances on one Redis, each ranking on its own snapshot cache (as deployed with
 * {@code hedgerow.state.snapshot-max-age}), time moved by hand: the instance that sees a failure stops using the route
 * on its next request; the other may still rank on its copy until max-age and no later, and reads it again in the
 * background once it is past half of max-age.
 */
class SnapshotCacheTest {
    static final String DO_FIRST = "{\"order\":[\"digitalocean\"]}";
    static final String OR_FIRST = "{\"order\":[\"openrouter\"]}";
    static final String YAML = GroupKit.yaml("""
                  - { alias: kimi3, provider: openrouter, model: kimi-k2 }
                  - { alias: kimi3, provider: digitalocean, model: kimi-k2 }
                  - { alias: ahead, provider: openrouter, model: kimi-k2 }
                  - { alias: ahead, provider: digitalocean, model: kimi-k2 }
                  - { alias: rot, provider: fireworks, model: kimi-k2 }
                  - { alias: rot, provider: together, model: kimi-k2 }
            """, """
                  kimi3: { strategy: rr_health, hedging: false, breaker: { max_fails: 1, fail_timeout: 60s } }
                  ahead: { strategy: rr_health, hedging: false, breaker: { max_fails: 1, fail_timeout: 60s } }
                  rot: { strategy: rr_health, hedging: false }
            """);
    static final ModelScript QUICK = GroupKit.quick(6);
    static final Duration MAX_AGE = Duration.ofSeconds(30);

    static final FakeTicker TICKER = new FakeTicker();
    /** Snapshot reads each instance's cache made of Redis that have answered (gw1's first, then gw2's). */
    static final List<AtomicInteger> SHARED_READS = new CopyOnWriteArrayList<>();
    static GatewayPair pair;
    static GatewayHarness gw1;
    static GatewayHarness gw2;

    @BeforeAll
    static void start() {
        pair = GatewayPair.onPrivateRedis(YAML, GroupKit.sims(QUICK, "kimi-k2"),
                store -> new CachingStateStore(readsCounted(store), MAX_AGE, TICKER));
        gw1 = pair.gw1();
        gw2 = pair.gw2();
    }

    @AfterAll
    static void stop() {
        pair.close();
    }

    /** {@code store} with the snapshot reads that answered counted into a new entry of {@link #SHARED_READS}. */
    static StateStore readsCounted(StateStore store) {
        AtomicInteger reads = new AtomicInteger();
        SHARED_READS.add(reads);
        return new ForwardingStateStore(store) {
            @Override
            public Uni<Map<String, RouteSnapshot>> snapshot(Collection<String> routeIds, Duration usageWindow) {
                return inner.snapshot(routeIds, usageWindow).invoke(reads::incrementAndGet);
            }
        };
    }

    @Test
    void pastHalfOfMaxAgeTheOtherInstanceReadsItsCopyAgainBehindTheRequest() throws InterruptedException {
        assertEquals("ahead-digitalocean", route(chat(gw1, "ahead", "warm one", false, DO_FIRST)));
        assertEquals("ahead-digitalocean", route(chat(gw2, "ahead", "warm two", false, DO_FIRST)));
        gw1.sim("digitalocean").enqueue("kimi-k2", Fault.status(503));
        assertEquals("ahead-openrouter", route(chat(gw1, "ahead", "fails over", false, DO_FIRST)));

        TICKER.advance(MAX_AGE.dividedBy(2));
        AtomicInteger gw2Reads = SHARED_READS.get(1);
        int before = gw2Reads.get();
        // served on openrouter: no health write touches digitalocean's copy, only a read can change it
        assertEquals("ahead-openrouter", route(chat(gw2, "ahead", "ageing copies", false, OR_FIRST)));
        for (int i = 0; i < 250 && gw2Reads.get() == before; i++) {
            Thread.sleep(20); // the background read answers from the private Redis; no clock moves meanwhile
        }
        assertTrue(gw2Reads.get() > before, "a read of the ageing copies started behind the request");

        Response next = chat(gw2, "ahead", "refreshed copy", false, DO_FIRST);
        assertEquals("ahead-openrouter", route(next), "the refreshed copy holds the other instance's verdict, "
                + "half a max-age before the old copy would have expired");
        assertFalse(trailRoutes(GroupKit.trail(next)).contains("ahead-digitalocean"));
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
