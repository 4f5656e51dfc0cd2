package dev.hedgerow.state;

import dev.hedgerow.testsupport.AtOnce;
import dev.hedgerow.time.FakeScheduler;
import dev.hedgerow.time.Scheduler;
import io.smallrye.mutiny.Uni;
import org.junit.jupiter.api.Test;

import java.lang.reflect.InvocationTargetException;
import java.lang.reflect.Proxy;
import java.time.Duration;
import java.time.LocalDate;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicReference;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * The contract on the write-behind store (its batches written as soon as they are scheduled, so every await sees its
 * write stored), then batching itself on a fake scheduler: writes within a window become one store call per key with
 * the merged value, each caller's Uni completes only once that call is done, and a failed batch fails its callers.
 */
class BatchingStateStoreTest extends FakeTimeStoreContract {
    static final Duration WINDOW = Duration.ofMillis(20);
    static final Duration LONG_WINDOW = Duration.ofSeconds(60);
    static final LocalDate DAY = LocalDate.of(2026, 12, 1);

    static Map<String, LedgerEntry> ledger(StateStore store, String org) {
        return await(store.ledger(org, DAY, DAY)).getOrDefault(DAY, Map.of());
    }

    @Override
    protected StateStore build() {
        Scheduler now = (delay, task) -> {
            task.run();
            return () -> { };
        };
        return new BatchingStateStore(new MemoryStateStore(ticker, TUNING), now, WINDOW);
    }

    /** A batching store over an embedded one, on a fake clock, with every call to the inner store counted by name. */
    @SuppressWarnings("unchecked")
    private final class Rig {
        final FakeScheduler scheduler = new FakeScheduler(ticker);
        final MemoryStateStore inner = new MemoryStateStore(ticker, TUNING);
        final Map<String, AtomicInteger> calls = new ConcurrentHashMap<>();
        final AtomicReference<RuntimeException> failWith = new AtomicReference<>();
        /** Calls by method name that land only once the test completes the future. */
        final Map<String, CompletableFuture<Void>> holds = new ConcurrentHashMap<>();
        /** "name" when a call reaches the inner store, "name landed" when it is done there. */
        final List<String> events = new CopyOnWriteArrayList<>();
        final BatchingStateStore batching = new BatchingStateStore((StateStore) Proxy.newProxyInstance(
                StateStore.class.getClassLoader(), new Class<?>[]{StateStore.class}, (p, m, args) -> {
                    calls.computeIfAbsent(m.getName(), k -> new AtomicInteger()).incrementAndGet();
                    if (failWith.get() != null) {
                        return Uni.createFrom().failure(failWith.get());
                    }
                    events.add(m.getName());
                    CompletableFuture<Void> hold = holds.getOrDefault(m.getName(), CompletableFuture.completedFuture(null));
                    return Uni.createFrom().completionStage(hold).flatMap(v -> {
                        try {
                            return (Uni<Object>) m.invoke(inner, args);
                        } catch (InvocationTargetException | IllegalAccessException e) {
                            throw new IllegalStateException(e);
                        }
                    }).invoke(v -> events.add(m.getName() + " landed"));
                }), scheduler, WINDOW);

        int calls(String name) {
            AtomicInteger n = calls.get(name);
            return n == null ? 0 : n.get();
        }
    }

    @Test
    void writesWithinAWindowAreOneStoreCallPerKeyWithTheMergedValue() {
        Rig rig = new Rig();
        String org = id("org");
        String route = id("route");
        CompletableFuture<Void> first = rig.batching.countRequest(org, LONG_WINDOW).subscribeAsCompletionStage();
        for (int i = 0; i < 39; i++) {
            rig.batching.countRequest(org, LONG_WINDOW).subscribe().with(v -> { });
        }
        rig.batching.addUsage(route, new UsageSample(10, 1, 0.25), LONG_WINDOW).subscribe().with(v -> { });
        rig.batching.addUsage(route, new UsageSample(5, 2, 0.5), LONG_WINDOW).subscribe().with(v -> { });
        rig.batching.addLedger(org, DAY, "kimi3", LedgerEntry.of(new UsageSample(10, 1, 0.25))).subscribe()
                .with(v -> { });
        rig.batching.addLedger(org, DAY, "kimi3", LedgerEntry.of(new UsageSample(5, 2, 0.5))).subscribe()
                .with(v -> { });
        rig.batching.putRouteBlobs(route, List.of(new StateStore.RouteBlob("ewma", "1", null),
                new StateStore.RouteBlob("ttft", "a", null))).subscribe().with(v -> { });
        rig.batching.putRouteBlob(route, "ewma", "2", null).subscribe().with(v -> { });

        assertFalse(first.isDone(), "nothing is written before the window ends");
        assertEquals(0, rig.calls("countRequests") + rig.calls("addUsage") + rig.calls("addLedger")
                + rig.calls("putRouteBlobs"));

        rig.scheduler.advance(WINDOW);
        assertTrue(first.isDone(), "completed once its batch was stored");
        assertEquals(1, rig.calls("countRequests"));
        assertEquals(1, rig.calls("addUsage"));
        assertEquals(1, rig.calls("addLedger"));
        assertEquals(1, rig.calls("putRouteBlobs"));

        RouteSnapshot s = await(rig.inner.snapshot(List.of(route), LONG_WINDOW)).get(route);
        assertEquals(new UsageSample(15, 3, 0.75), s.usage());
        assertEquals("2", s.blob("ewma").orElseThrow(), "the last value of a name wins");
        assertEquals("a", s.blob("ttft").orElseThrow());
        assertEquals(new LedgerEntry(2, new UsageSample(15, 3, 0.75)), ledger(rig.inner, org).get("kimi3"),
                "two requests, merged into one write");
        assertEquals(2, spendAll(rig.inner, org, LONG_WINDOW), "40 requests counted: 5 % of them");
    }

    /**
     * Learned values of one name merged in a window keep every step: one chained from the other is the later value,
     * one stepped from another value (say, a fresher snapshot) is stepped again from the earlier one; and a store that
     * holds something else by then gets both steps applied to what it holds.
     */
    @Test
    void learnedValuesMergedInAWindowKeepEveryStep() {
        Rig rig = new Rig();
        String route = id("route");
        await(rig.inner.putRouteBlob(route, "ttft", "x", null));
        rig.batching.putRouteBlobs(route, List.of(StateStoreContract.learned("ttft", "x", "a"))).subscribe()
                .with(v -> { });
        rig.batching.putRouteBlobs(route, List.of(StateStoreContract.learned("ttft", "xa", "b"))).subscribe()
                .with(v -> { });
        rig.batching.putRouteBlobs(route, List.of(StateStoreContract.learned("ttft", "x", "c"))).subscribe()
                .with(v -> { });
        rig.scheduler.advance(WINDOW);
        assertEquals("xabc", await(rig.inner.snapshot(List.of(route), LONG_WINDOW)).get(route).blob("ttft")
                .orElseThrow());

        // two threads queue their steps in the other order than they took them: each step is applied once
        rig.batching.putRouteBlobs(route, List.of(StateStoreContract.learned("ttft", "xabcf", "g"))).subscribe()
                .with(v -> { });
        rig.batching.putRouteBlobs(route, List.of(StateStoreContract.learned("ttft", "xabc", "f"))).subscribe()
                .with(v -> { });
        rig.scheduler.advance(WINDOW);
        assertEquals("xabcfg", await(rig.inner.snapshot(List.of(route), LONG_WINDOW)).get(route).blob("ttft")
                .orElseThrow());

        await(rig.inner.putRouteBlob(route, "ttft", "y", null));   // another instance's value
        rig.batching.putRouteBlobs(route, List.of(StateStoreContract.learned("ttft", "xabcfg", "d"))).subscribe()
                .with(v -> { });
        rig.batching.putRouteBlobs(route, List.of(StateStoreContract.learned("ttft", "xabcfgd", "e"))).subscribe()
                .with(v -> { });
        rig.scheduler.advance(WINDOW);
        assertEquals("yde", await(rig.inner.snapshot(List.of(route), LONG_WINDOW)).get(route).blob("ttft")
                .orElseThrow());
    }

    @Test
    void anIdleStoreSchedulesNothingAndTheNextWriteStartsANewWindow() {
        Rig rig = new Rig();
        String org = id("org");
        rig.batching.countRequest(org, LONG_WINDOW).subscribe().with(v -> { });
        rig.scheduler.advance(WINDOW);
        rig.scheduler.advance(WINDOW.multipliedBy(10));
        assertEquals(1, rig.calls("countRequests"), "no write, no call");

        CompletableFuture<Void> later = rig.batching.countRequest(org, LONG_WINDOW).subscribeAsCompletionStage();
        rig.scheduler.advance(WINDOW.minusMillis(1));
        assertFalse(later.isDone());
        rig.scheduler.advance(Duration.ofMillis(1));
        assertTrue(later.isDone());
        assertEquals(2, rig.calls("countRequests"));
    }

    @Test
    void aFailedBatchFailsEveryCallerInIt() {
        Rig rig = new Rig();
        String route = id("route");
        CompletableFuture<Void> a = rig.batching.addUsage(route, new UsageSample(1, 1, 0), LONG_WINDOW)
                .subscribeAsCompletionStage();
        CompletableFuture<Void> b = rig.batching.addUsage(route, new UsageSample(1, 1, 0), LONG_WINDOW)
                .subscribeAsCompletionStage();
        rig.failWith.set(new IllegalStateException("redis down"));
        rig.scheduler.advance(WINDOW);
        assertThrows(CompletionException.class, a::join);
        assertThrows(CompletionException.class, b::join);
    }

    @Test
    void flushWritesWhatWaitsAtOnce() {
        Rig rig = new Rig();
        String org = id("org");
        CompletableFuture<Void> waiting = rig.batching.addLedger(org, DAY, "kimi3",
                LedgerEntry.of(new UsageSample(1, 2, 0))).subscribeAsCompletionStage();
        await(rig.batching.flush());
        assertTrue(waiting.isDone());
        assertEquals(LedgerEntry.of(new UsageSample(1, 2, 0)), ledger(rig.inner, org).get("kimi3"));
    }

    @Test
    void readsAndOtherWritesPassStraightThrough() {
        Rig rig = new Rig();
        String route = id("route");
        await(rig.batching.recordFailure(route, 1, LONG_WINDOW));
        RouteSnapshot s = await(rig.batching.snapshot(List.of(route), LONG_WINDOW)).get(route);
        assertTrue(s.coolingDown());
        assertEquals(1, rig.calls("recordFailure"));
    }

    /**
     * A failure with its provider's hold is a health write, never merged: it passes straight through as one call that
     * carries the hold, so when its Uni completes the store holds the count and the hold together, with no batch
     * written.
     */
    @Test
    void aFailureWithAHoldPassesStraightThroughAsOneCall() {
        Rig rig = new Rig();
        String route = id("route");
        await(rig.batching.recordFailure(route, 5, LONG_WINDOW, LONG_WINDOW));
        RouteSnapshot s = await(rig.inner.snapshot(List.of(route), LONG_WINDOW)).get(route);
        assertEquals(1, s.fails());
        assertTrue(s.retryAfterMillis() > 0, "held with the count");
        assertEquals(1, rig.calls("recordFailure"));
        assertEquals(List.of("recordFailure", "recordFailure landed"), rig.events,
                "one store call, nothing left to a batch");
    }

    @Test
    void aLeaseReleasedBeforeItsBatchIsWrittenNeverReachesTheStore() {
        Rig rig = new Rig();
        String route = id("route");
        await(rig.batching.acquireLease(route, "short", LONG_WINDOW));
        await(rig.batching.releaseLease(route, "short"));
        rig.scheduler.advance(WINDOW);
        assertEquals(0, rig.calls("acquireLease") + rig.calls("releaseLease"));
        assertEquals(0, await(rig.inner.snapshot(List.of(route), LONG_WINDOW)).get(route).inflight());
    }

    @Test
    void aLeaseOutlivingItsBatchIsWrittenAndItsReleaseNeverOvertakesTheAcquire() {
        Rig rig = new Rig();
        String route = id("route");
        await(rig.batching.acquireLease(route, "long", LONG_WINDOW));
        await(rig.batching.renewLease(route, "long", LONG_WINDOW.multipliedBy(2)));
        assertEquals(0, rig.calls("renewLease"), "a renewal while waiting only changes the TTL");
        CompletableFuture<Void> acquireLands = new CompletableFuture<>();
        rig.holds.put("acquireLease", acquireLands);
        rig.scheduler.advance(WINDOW);
        assertEquals(List.of("acquireLease"), rig.events, "the acquire is being written");

        CompletableFuture<Void> released = rig.batching.releaseLease(route, "long").subscribeAsCompletionStage();
        assertEquals(List.of("acquireLease"), rig.events, "the release waits for the acquire to land");
        acquireLands.complete(null);
        released.join();
        assertEquals(List.of("acquireLease", "acquireLease landed", "releaseLease", "releaseLease landed"),
                rig.events);
        assertEquals(0, await(rig.inner.snapshot(List.of(route), LONG_WINDOW)).get(route).inflight());

        await(rig.batching.acquireLease(route, "next", LONG_WINDOW));
        rig.holds.clear();
        rig.scheduler.advance(WINDOW);
        assertEquals(1, await(rig.inner.snapshot(List.of(route), LONG_WINDOW)).get(route).inflight());
        await(rig.batching.releaseLease(route, "next"));
        assertEquals(0, await(rig.inner.snapshot(List.of(route), LONG_WINDOW)).get(route).inflight(),
                "a release after the acquire landed goes straight to the store");
    }

    @Test
    void concurrentWritersAndFlushesLoseNothingAndLeaveNoLease() throws Exception {
        // no lock: writers merge by compare-and-set while a flusher seals and writes batches under them
        MemoryStateStore inner = new MemoryStateStore(ticker, TUNING);
        BatchingStateStore batching = new BatchingStateStore(inner, (delay, task) -> () -> { }, WINDOW);
        String org = id("org");
        String route = id("route");
        AtOnce.settleMutiny(); // before the flusher's thread too
        AtomicBoolean writing = new AtomicBoolean(true);
        Thread flusher = new Thread(() -> {
            while (writing.get()) {
                batching.flush().subscribe().with(v -> { }, t -> { });
            }
        });
        flusher.start();
        // each write's completion, by kind: a hang names the kinds that never completed
        Map<String, java.util.Queue<CompletableFuture<Void>>> written = new ConcurrentHashMap<>();
        java.util.function.BiConsumer<String, Uni<Void>> track = (kind, write) -> written.computeIfAbsent(kind,
                k -> new java.util.concurrent.ConcurrentLinkedQueue<>()).add(write.subscribeAsCompletionStage()
                .toCompletableFuture());
        int threads = 4;
        int each = 2_000;
        try {
            assertEquals(0, AtOnce.failures(threads, each, i -> {
                track.accept("usage", batching.addUsage(route, new UsageSample(1, 2, 0.5), LONG_WINDOW));
                track.accept("count", batching.countRequest(org, LONG_WINDOW));
                track.accept("ledger", batching.addLedger(org, DAY, "chat", LedgerEntry.of(new UsageSample(1, 0, 0))));
                await(batching.acquireLease(route, "lease-" + i, LONG_WINDOW));
                if (i % 2 == 0) { // half end at once: cancelled in their batch, or released after they landed
                    track.accept("release", batching.releaseLease(route, "lease-" + i));
                }
                return true;
            }));
        } finally {
            writing.set(false);
            flusher.join();
        }
        await(batching.flush());
        int n = threads * each;
        try {
            CompletableFuture.allOf(written.values().stream().flatMap(java.util.Collection::stream)
                    .toArray(CompletableFuture[]::new)).get(10, TimeUnit.SECONDS);
        } catch (java.util.concurrent.TimeoutException e) {
            Map<String, Long> open = new java.util.TreeMap<>();
            written.forEach((kind, fs) -> open.put(kind, fs.stream().filter(f -> !f.isDone()).count()));
            throw new AssertionError("writes never completed, by kind: " + open + "; " + batching.describePending(),
                    e);
        }
        RouteSnapshot s = await(inner.snapshot(List.of(route), LONG_WINDOW)).get(route);
        assertEquals(new UsageSample(n, 2L * n, 0.5 * n), s.usage(), "every usage write landed once");
        assertEquals(n / 2, s.inflight(), "exactly the leases not released are held");
        assertEquals(new LedgerEntry(n, new UsageSample(n, 0, 0)), ledger(inner, org).get("chat"));
        int hedges = 0;
        while (await(inner.hedgeBudget(org, true, 0.05, 0, LONG_WINDOW)) && hedges <= n) {
            hedges++;
        }
        assertEquals(n / 20, hedges, "every request counted: 5 % of them allow a hedge");
    }

    @Test
    void windowMustBePositive() {
        assertThrows(IllegalArgumentException.class,
                () -> new BatchingStateStore(new MemoryStateStore(ticker, TUNING), new FakeScheduler(ticker),
                        Duration.ZERO));
    }
}
