package dev.hedgerow.function.gateway;

import dev.hedgerow.state.MemoryStateStore;
import dev.hedgerow.state.StateStore;
import dev.hedgerow.testsupport.GatewayHarness;
import dev.hedgerow.time.FakeTicker;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;

import java.time.Duration;

import static dev.hedgerow.function.gateway.GroupKit.PROVIDERS;

/**
 * {@link HalfOpenProbeRelease} on one instance over the memory store, whose TTLs run on a fake clock: the slot's TTL
 * never passes on its own, so only a release frees it.
 */
class HalfOpenProbeReleaseMemoryTest extends HalfOpenProbeRelease {
    FakeTicker time;
    StateStore store;
    GatewayHarness gw;

    @BeforeEach
    void start() {
        time = new FakeTicker();
        store = new MemoryStateStore(time);
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

    @Override
    void passFailTimeout(String routeId) {
        time.advance(Duration.ofSeconds(30));
    }
}
