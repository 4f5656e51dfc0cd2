package dev.hedgerow.state;

import dev.hedgerow.time.FakeScheduler;
import dev.hedgerow.time.FakeTicker;
import org.junit.jupiter.api.Test;

import java.time.Duration;
import java.util.List;

import static org.junit.jupiter.api.Assertions.assertEquals;

/**
 * The production stack's snapshot cache over its write batch (Caching over Batching, defaults 50 ms and 20 ms): this
 * instance's own writes still waiting in the batch when a snapshot read starts are not in what the read returns, so
 * the cache adds them to the copy it keeps (README: "Its own writes are seen at once (... leases, usage and blob
 * writes are added to it)"). Before, the read's ticket counted them as already in the read, and a refreshed copy showed
 * the route idle while this instance had requests in flight on it, without the usage billed here, or without an operator's standing, until the next refresh.
 */
class CachingOverBatchingTest {
    static final StateTuning TUNING = new StateTuning(Duration.ofMillis(100), Duration.ofHours(1));
    static final Duration WINDOW = Duration.ofSeconds(10);

    final FakeTicker ticker = new FakeTicker();
    final FakeScheduler scheduler = new FakeScheduler(ticker);
    final MemoryStateStore shared = new MemoryStateStore(ticker, TUNING);
    /** The production stack's order and defaults: a 50 ms snapshot cache over a 20 ms write batch. */
    final StateStore store = new CachingStateStore(new BatchingStateStore(shared, scheduler, Duration.ofMillis(20)),
            Duration.ofMillis(50), ticker);
    final String r = "org/route";

    /** A snapshot read that starts after this instance took a lease, before the batch wrote it. */
    @Test
    void aLeaseTakenHereJustBeforeARefreshIsCountedByTheRefreshedCopy() {
        assertEquals(0, snap(store, r).inflight());          // copy read at t=0
        scheduler.advance(Duration.ofMillis(30));              // copy is 30 ms old: past half its max-age
        store.acquireLease(r, "lease-1", Duration.ofSeconds(90)).await().indefinitely(); // batched until t=50
        // this read serves the old copy (+1 local lease) and refreshes it in the background
        assertEquals(1, snap(store, r).inflight());
        // the refreshed copy: the shared store did not have the lease yet
        assertEquals(1, snap(store, r).inflight(), "the lease this instance holds is not counted");
        scheduler.advance(Duration.ofMillis(60));             // written, and the copy expired: counted once
        assertEquals(1, snap(store, r).inflight());
        store.releaseLease(r, "lease-1").await().indefinitely();
        scheduler.advance(Duration.ofMillis(60));
        assertEquals(0, snap(store, r).inflight());
    }

    /** A miss read (no copy yet) right after a lease taken here, still in the batch, counts it; one released unwritten too. */
    @Test
    void aMissReadCountsALeaseStillInTheBatch() {
        store.acquireLease(r, "lease-1", Duration.ofSeconds(90)).await().indefinitely();
        assertEquals(1, snap(store, r).inflight());
        store.releaseLease(r, "lease-1").await().indefinitely();   // cancelled in the batch: never written
        scheduler.advance(Duration.ofMillis(60));
        assertEquals(0, snap(store, r).inflight());
        store.acquireLease(r, "lease-2", Duration.ofSeconds(90)).await().indefinitely();
        scheduler.advance(Duration.ofMillis(60));
        assertEquals(1, snap(store, r).inflight());
    }

    /** The same for usage: usage billed here just before a refresh stays in lowest_usage's view. */
    @Test
    void usageAddedHereJustBeforeARefreshIsCountedByTheRefreshedCopy() {
        snap(store, r);
        scheduler.advance(Duration.ofMillis(30));
        store.addUsage(r, new UsageSample(1000, 500, 0.5), WINDOW).subscribe().with(v -> { }); // lands at the flush
        assertEquals(1500, snap(store, r).usage().totalTokens());
        assertEquals(1500, snap(store, r).usage().totalTokens(), "usage billed here is not counted");
    }

    /** The same for a blob (an operator's standing): the refreshed copy keeps this instance's own write. */
    @Test
    void aBlobWrittenHereJustBeforeARefreshStaysInTheRefreshedCopy() {
        snap(store, r);
        scheduler.advance(Duration.ofMillis(30));
        store.putRouteBlob(r, "standing", "suspended", null).subscribe().with(v -> { }); // lands at the flush
        assertEquals("suspended", snap(store, r).blob("standing").orElse(null));
        assertEquals("suspended", snap(store, r).blob("standing").orElse(null), "own blob write vanished");
    }

    private static RouteSnapshot snap(StateStore s, String route) {
        return s.snapshot(List.of(route), WINDOW).await().indefinitely().get(route);
    }
}
