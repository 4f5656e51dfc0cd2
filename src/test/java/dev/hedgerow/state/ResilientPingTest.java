package dev.hedgerow.state;

import dev.hedgerow.time.FakeTicker;
import org.junit.jupiter.api.Test;

import java.time.Duration;

import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Readiness pings the shared store through the outage guard, during an outage too. A ping the store answers false
 * (Redis's ping does when Redis does not answer) is a failed call for the guard: counted as a success, two readiness
 * pings while the guard is half-open closed it with Redis still down, readiness reported {@code shared} and the
 * degraded gauge 0, and every call went to the unreachable store again (each waiting out the 1 s timeout where
 * packets are dropped) until enough failed to open it once more.
 */
class ResilientPingTest {
    /** Opens after 2 failed calls of 2, half-open 20 ms later, closes after 2 successful trial calls. */
    static final ResilientStateStore.Settings SETTINGS =
            new ResilientStateStore.Settings(Duration.ofMillis(500), 2, 1.0, Duration.ofMillis(20), 2);

    final FakeTicker ticker = new FakeTicker();
    final ResilientLocalHealthTest.Shared shared =
            new ResilientLocalHealthTest.Shared(new MemoryStateStore(ticker, FakeTimeStoreContract.TUNING));
    final ResilientStateStore store = new ResilientStateStore(shared,
            new MemoryStateStore(ticker, FakeTimeStoreContract.TUNING), SETTINGS);

    static <T> T await(io.smallrye.mutiny.Uni<T> u) {
        return u.await().atMost(Duration.ofSeconds(5));
    }

    @Test
    void pingsThatFindTheSharedStoreDownDoNotCloseTheGuard() throws InterruptedException {
        shared.up = false;
        await(store.cooldownRemainingMillis("acme/alpha"));
        await(store.cooldownRemainingMillis("acme/alpha"));
        assertTrue(store.degraded(), "precondition: the guard opened");

        int before = shared.pings.get();
        long deadline = System.nanoTime() + Duration.ofSeconds(5).toNanos();
        while (shared.pings.get() < before + 2 && System.nanoTime() < deadline) {
            assertFalse(await(store.ping()));
            Thread.sleep(5);   // the guard lets trial calls through once its 20 ms open delay is over
        }
        assertTrue(shared.pings.get() >= before + 2, "precondition: two pings reached the store as trial calls");
        assertTrue(store.degraded(), "still degraded: Redis has not answered (" + store.breakerState() + ")");
    }
}
