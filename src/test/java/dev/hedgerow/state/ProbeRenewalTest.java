package dev.hedgerow.state;

import dev.hedgerow.time.FakeScheduler;
import dev.hedgerow.time.FakeTicker;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

import java.time.Duration;
import java.util.List;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** The renewal both live dispatch and the prober keep a half-open probe slot with, on fake time. */
class ProbeRenewalTest {
    static final String ROUTE = "r";
    static final Duration TTL = Duration.ofSeconds(10);

    final FakeTicker ticker = new FakeTicker();
    final FakeScheduler scheduler = new FakeScheduler(ticker);
    final MemoryStateStore store = new MemoryStateStore(ticker);

    boolean taken() {
        return store.snapshot(List.of(ROUTE), Duration.ofMinutes(1)).await().indefinitely().get(ROUTE).probeTaken();
    }

    boolean take(String owner) {
        return store.tryAcquireProbe(ROUTE, 1, TTL, owner).await().indefinitely();
    }

    @BeforeEach
    void halfOpen() {
        store.recordFailure(ROUTE, 1, Duration.ofMillis(1)).await().indefinitely();
        ticker.advance(Duration.ofMillis(2));
    }

    @Test
    void aSlotIsKeptPastItsTtlWhileRenewed() {
        assertTrue(take("me"));
        ProbeRenewal renewal = ProbeRenewal.start(store, scheduler, ROUTE, "me", TTL);
        scheduler.advance(Duration.ofSeconds(95));
        assertTrue(taken(), "renewed every half TTL");
        renewal.cancel();
        scheduler.advance(Duration.ofSeconds(9));
        assertTrue(taken(), "the last renewal's TTL still runs");
        scheduler.advance(Duration.ofSeconds(2));
        assertFalse(taken(), "no renewal once cancelled: the slot frees itself one TTL after the last");
        assertEquals(0, scheduler.pending(), "nothing left scheduled");
    }

    @Test
    void aRenewalNeverTakesAFreedSlotNorAnotherOwnersSlot() {
        assertTrue(take("me"));
        ProbeRenewal renewal = ProbeRenewal.start(store, scheduler, ROUTE, "me", TTL);
        store.releaseProbe(ROUTE, "me").await().indefinitely();
        scheduler.advance(Duration.ofSeconds(6));
        assertFalse(taken(), "a renewal after the release did not take the slot again");
        assertTrue(take("other"));
        scheduler.advance(Duration.ofSeconds(6));
        ticker.advance(Duration.ofSeconds(5));
        assertFalse(taken(), "the other owner's slot kept its own TTL: it was not renewed for 'me'");
        renewal.cancel();
        renewal.cancel();
        assertEquals(0, scheduler.pending());
    }
}
