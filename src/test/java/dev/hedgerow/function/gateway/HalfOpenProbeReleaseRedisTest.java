package dev.hedgerow.function.gateway;

import dev.hedgerow.state.StateKeys;
import dev.hedgerow.state.StateStore;
import dev.hedgerow.testsupport.GatewayHarness;
import dev.hedgerow.testsupport.GatewayPair;
import dev.hedgerow.testsupport.Resp;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.BeforeEach;

import java.io.IOException;
import java.io.UncheckedIOException;

import static dev.hedgerow.function.gateway.GroupKit.key;

/**
 * {@link HalfOpenProbeRelease} on two gateway instances over one private Redis: the probe goes through one, the
 * next request through the other, so the release is seen fleet-wide. The route's fail_timeout is passed by deleting
 * its cooldown and last-failure keys, exactly what their TTLs would do 30 s later; the probe slot's own TTL (about
 * 35 s) is left to Redis, so only a release frees it within the test.
 */
class HalfOpenProbeReleaseRedisTest extends HalfOpenProbeRelease {
    static GatewayPair pair;
    static GatewayHarness gw1;
    static GatewayHarness gw2;

    @BeforeAll
    static void start() {
        // each instance has its own Redis client, as separate processes would
        pair = GatewayPair.onPrivateRedis(YAML, GroupKit.sims(QUICK, "kimi-k2"));
        gw1 = pair.gw1();
        gw2 = pair.gw2();
        warmUp(gw1);
        warmUp(gw2);
    }

    @AfterAll
    static void stop() {
        pair.close();
    }

    @BeforeEach
    void reset() {
        GroupKit.reset(gw1);
        gw1.sim("digitalocean").script("kimi-k2", QUICK);
    }

    @Override
    GatewayHarness gw() {
        return gw1;
    }

    @Override
    GatewayHarness next() {
        return gw2;
    }

    @Override
    StateStore store() {
        return pair.store1();
    }

    @Override
    void passFailTimeout(String routeId) {
        try {
            Resp.command(pair.redis().port(), "DEL", StateKeys.cool(key(routeId)), StateKeys.lastFail(key(routeId)));
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }
}
