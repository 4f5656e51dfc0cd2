package dev.hedgerow.state;

import dev.hedgerow.testsupport.AtOnce;
import org.junit.jupiter.api.Test;

import java.time.Duration;
import java.time.LocalDate;
import java.util.List;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;

/** The contract on the embedded store, with time moved by a fake ticker (no sleeping). */
class MemoryStateStoreTest extends FakeTimeStoreContract {

    @Override
    protected StateStore build() {
        return new MemoryStateStore(ticker, TUNING);
    }

    private long usage(String route, Duration window) {
        return await(store().snapshot(List.of(route), window)).get(route).usage().totalTokens();
    }

    @Test
    void usageSlidesBucketByBucket() {
        // TUNING's buckets are 100 ms; from a bucket boundary, a 300 ms window is 3 buckets
        String r = id("route");
        Duration window = Duration.ofMillis(300);
        ticker.advance(Duration.ofMillis((100 - ticker.millis() % 100) % 100));
        await(store().addUsage(r, new UsageSample(1, 0, 0), window));
        ticker.advance(Duration.ofMillis(100));
        await(store().addUsage(r, new UsageSample(2, 0, 0), window));
        ticker.advance(Duration.ofMillis(100));
        await(store().addUsage(r, new UsageSample(4, 0, 0), window));
        assertEquals(7, usage(r, window));
        assertEquals(4, usage(r, Duration.ofMillis(100)), "a one-bucket window reads only the current bucket");
        ticker.advance(Duration.ofMillis(100));
        assertEquals(6, usage(r, window), "the first bucket left the window");
        ticker.advance(Duration.ofMillis(100));
        assertEquals(4, usage(r, window));
        await(store().addUsage(r, new UsageSample(8, 0, 0), window));
        assertEquals(12, usage(r, window));
        ticker.advance(Duration.ofMillis(300));
        assertEquals(0, usage(r, window));
        ticker.advance(Duration.ofSeconds(10));
        assertEquals(0, usage(r, Duration.ofSeconds(30)), "buckets expire a window past their last add");
    }

    private static final LocalDate DAY = LocalDate.of(2026, 12, 1);
    private static final int THREADS = 4;
    private static final int EACH = 2_000;

    @Test
    void concurrentWritersOfOneRouteAndOrgLoseNothing() throws Exception {
        // the embedded store takes no lock on these calls: every write from every thread must land exactly once
        StateStore s = store(); // built before the threads start (store() builds lazily, unguarded)
        String r = id("route");
        String org = id("org");
        Duration window = Duration.ofMinutes(10);
        Set<Long> cursors = ConcurrentHashMap.newKeySet();
        assertEquals(0, AtOnce.failures(THREADS, EACH, i -> {
            await(s.addUsage(r, new UsageSample(1, 2, 0.5), window));
            await(s.acquireLease(r, "lease-" + i, Duration.ofMinutes(1)));
            await(s.countRequest(org, window));
            await(s.addLedger(org, DAY, "chat", LedgerEntry.of(new UsageSample(1, 0, 0))));
            await(s.putRouteBlob(r, "b" + (i % 8), "v" + i, null));
            return cursors.add(await(s.nextCursor(org, "chat")));
        }), "every cursor position is handed out once");
        int n = THREADS * EACH;
        RouteSnapshot snap = await(s.snapshot(List.of(r), window)).get(r);
        assertEquals(new UsageSample(n, 2L * n, 0.5 * n), snap.usage());
        assertEquals(n, snap.inflight());
        assertEquals(8, snap.blobs().size());
        assertEquals(new LedgerEntry(n, new UsageSample(n, 0, 0)), await(s.ledger(org, DAY, DAY)).get(DAY).get("chat"));
        assertEquals(n, await(s.nextCursors(org, "chat", 1)) - 1);
        assertEquals(0, AtOnce.failures(THREADS, EACH, i -> {
            await(s.releaseLease(r, "lease-" + i));
            return true;
        }));
        assertEquals(0, await(s.snapshot(List.of(r), window)).get(r).inflight());
    }

    @Test
    void concurrentHedgesNeverSpendMoreThanTheBudget() throws Exception {
        StateStore s = store();
        String org = id("org");
        Duration window = Duration.ofMinutes(1);
        await(s.countRequests(org, 1_000, window));
        // 5 % of 1000 requests: exactly 50 of the 8000 concurrent spends are allowed, while requests keep arriving
        // (each counted request adds 0.05 of a hedge, so 400 more requests allow 20 more)
        int refused = AtOnce.failures(THREADS, EACH, i -> {
            if (i % 20 == 0) {
                await(s.countRequests(org, 1, window));
            }
            return await(s.hedgeBudget(org, true, 0.05, 0, window));
        });
        assertEquals(THREADS * EACH - 70, refused);
        assertFalse(await(s.hedgeBudget(org, false, 0.05, 0, window)), "the budget is spent");
    }

    @Test
    void concurrentFailuresAreAllCounted() throws Exception {
        StateStore s = store();
        String r = id("route");
        assertEquals(0, AtOnce.failures(THREADS, EACH / 4, i -> {
            await(s.recordFailure(r, 3, Duration.ofSeconds(10)));
            return true;
        }));
        BreakerState b = await(s.recordSuccess(r, 3, Duration.ofSeconds(10)));
        assertEquals(THREADS * EACH / 4, b.fails());
        assertEquals(true, b.coolingDown());
    }
}
