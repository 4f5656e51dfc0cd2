package dev.hedgerow.function.gateway;

import dev.hedgerow.sim.ModelScript;
import dev.hedgerow.state.ForwardingStateStore;
import dev.hedgerow.state.MemoryStateStore;
import dev.hedgerow.state.StateStore;
import dev.hedgerow.testsupport.GatewayHarness;
import dev.hedgerow.time.FakeTicker;
import io.restassured.response.Response;
import io.smallrye.mutiny.Uni;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

import java.time.Duration;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;

import static dev.hedgerow.function.gateway.GroupKit.PROVIDERS;
import static dev.hedgerow.function.gateway.GroupKit.chat;
import static dev.hedgerow.function.gateway.GroupKit.health;
import static dev.hedgerow.testsupport.Eventually.eventually;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * {@link HalfOpenProbeRelease} on one instance over the memory store, whose TTLs run on a fake clock: the slot's TTL
 * never passes on its own, so only a release frees it.
 */
class HalfOpenProbeReleaseMemoryTest extends HalfOpenProbeRelease {
    FakeTicker time;
    final AtomicInteger renewals = new AtomicInteger();
    StateStore store;
    GatewayHarness gw;

    @BeforeEach
    void start() {
        time = new FakeTicker();
        renewals.set(0);
        store = new ForwardingStateStore(new MemoryStateStore(time)) {
            @Override
            public Uni<Void> renewProbe(String routeId, String owner, Duration ttl) {
                return super.renewProbe(routeId, owner, ttl).invoke(() -> renewals.incrementAndGet());
            }
        };
        gw = GatewayHarness.start(YAML, GroupKit.sims(QUICK, "kimi-k2"), store);
        warmUp(gw);
        PROVIDERS.forEach(p -> gw.sim(p).resetStats());
    }

    @AfterEach
    void stop() {
        gw.close();
    }

    @Override
    GatewayHarness gw() {
        return gw;
    }

    @Override
    GatewayHarness next() {
        return gw;
    }

    @Override
    StateStore store() {
        return store;
    }

    /**
     * A half-open probe whose stream outlives the slot's TTL keeps the slot (it renews it every half TTL) until its
     * verdict. The group's 1 s first-token ceiling and the route's 200 ms window give a 6 s slot, renewed after 3 s;
     * the probe streams for 5 s. The store's clock is moved by hand around the first renewal: 4 s before it and 4 s
     * after, 8 s past the taking, when an unrenewed slot would have expired.
     */
    @Test
    void aHalfOpenProbeStreamingPastItsSlotsTtlKeepsTheSlotUntilItsVerdict() throws Exception {
        halfOpen("long", "long-digitalocean");
        learnQuickFirstTokens("long-digitalocean");
        gw.sim("digitalocean").script("kimi-k2", QUICK.withLength(50).withLatency(ModelScript.Latency.of(5, 10)));
        CompletableFuture<Response> probe = CompletableFuture.supplyAsync(
                () -> chat(gw, "long", "a long probe", true, DO_FIRST));
        eventually(() -> health(store, "long-digitalocean").probeTaken(), "the probe holds the slot");
        time.advance(Duration.ofSeconds(4));
        eventually(() -> renewals.get() > 0, "the running probe renews its slot");
        time.advance(Duration.ofSeconds(4));
        assertTrue(health(store, "long-digitalocean").probeTaken(), "still the route's one probe, 8 s on");

        Response r = probe.get(30, TimeUnit.SECONDS);
        assertEquals(200, r.statusCode(), r.asString());
        assertEquals(List.of("long-digitalocean:success"), outcomes(GroupKit.trail(r)));
        eventually(() -> health(store, "long-digitalocean").fails() == 0, "its success closes the breaker");
        assertFalse(health(store, "long-digitalocean").probeTaken());
    }

    @Override
    void passFailTimeout(String routeId) {
        time.advance(Duration.ofSeconds(30));
    }
}
