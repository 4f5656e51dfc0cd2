package dev.hedgerow.state;

import dev.hedgerow.time.Ticker;
import io.smallrye.mutiny.Uni;

import java.time.Duration;
import java.util.ArrayList;
import java.util.Collection;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Objects;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.IntFunction;
import java.util.function.IntSupplier;
import java.util.function.UnaryOperator;

/**
 * One instance's short-lived copy of route snapshots in front of the shared store, so most requests rank without a
 * round trip to Redis (the snapshot is the one store read a request waits for).
 *
 * <p>Freshness: a route's snapshot is reused for at most {@code maxAge} (past half of it, it is read again in the
 * background while requests keep using it, so steady traffic never waits for the read), so another instance's
 * breaker verdicts, Retry-After holds, leases, usage and learned models reach this instance at most that much later.
 * This instance's own writes are seen at once: a health write (failure, success, probe slot, Retry-After hold,
 * reset) drops the route's copy when it completes, a blob write patches the copy (when it is made and again
 * when it is stored), and leases and usage taken here since the copy was read are added to it. The cache only
 * decides what ranking sees: the probe slot, for one, is still taken atomically in the shared store. The group's
 * rotation cursor is taken about {@value #CURSOR_BLOCK} positions at a time ({@link #nextCursor}). Everything else
 * passes through.
 *
 * <p>A copy read while a health write of the same route was under way is not kept (a per-route generation, bumped when
 * the write completes, must be unchanged between the read's start and its end). Leases taken while a read was in
 * flight may be counted twice for at most {@code maxAge}: harmless for least-connections ranking. Per-route local
 * counters live as long as the instance (one small object per route it has ranked); copies of routes no longer asked
 * for are swept once there are more than {@value #SWEEP_AT}. Thread-safe: entries are immutable and replaced whole;
 * per-route local counters are atomic or guarded by their own lock.
 */
public final class CachingStateStore extends ForwardingStateStore {
    /** Entries kept before a sweep drops the stale ones (routes removed from the catalog leave theirs behind). */
    private static final int SWEEP_AT = 4096;
    /**
     * Rotation positions taken from the shared cursor at once and handed out here one by one: on average, as each
     * block's size is drawn from half to one and a half times this ({@link #nextCursor}).
     */
    static final int CURSOR_BLOCK = 32;

    private static final long NO_REFRESH = Long.MIN_VALUE;

    private final long maxAgeNanos;
    /** Age from which a served copy is also read again in the background (half of max-age). */
    private final long refreshAfterNanos;
    private final Ticker ticker;
    /** By route id: one copy per route (read with its group's usage window; another window reads again). */
    private final Map<String, Entry> entries = new ConcurrentHashMap<>();
    private final Map<String, Local> locals = new ConcurrentHashMap<>();
    /** By org and alias: the block of rotation positions this instance is handing out. */
    private final Map<String, CursorBlock> cursors = new ConcurrentHashMap<>();
    /** The size of the next block taken from a shared cursor. */
    private final IntSupplier blockSizes;

    /**
     * @param maxAge longest reuse of a snapshot; must be positive (a zero max-age means: do not wrap the store)
     */
    public CachingStateStore(StateStore inner, Duration maxAge, Ticker ticker) {
        this(inner, maxAge, ticker,
                () -> ThreadLocalRandom.current().nextInt(CURSOR_BLOCK / 2, CURSOR_BLOCK * 3 / 2 + 1));
    }

    /** As {@link #CachingStateStore(StateStore, Duration, Ticker)}, its cursor blocks' sizes given (tests). */
    CachingStateStore(StateStore inner, Duration maxAge, Ticker ticker, IntSupplier blockSizes) {
        super(inner);
        this.blockSizes = Objects.requireNonNull(blockSizes, "blockSizes");
        this.ticker = Objects.requireNonNull(ticker, "ticker");
        if (maxAge.isNegative() || maxAge.isZero()) {
            throw new IllegalArgumentException("maxAge must be positive: " + maxAge);
        }
        this.maxAgeNanos = maxAge.toNanos();
        this.refreshAfterNanos = maxAgeNanos / 2;
    }

    /**
     * What of this instance's own effects on a route the shared store had when a read of it started (its writes
     * answered by the store below; one still waiting in a write batch is not there yet): the read includes those, and
     * {@link #adjusted} adds the rest.
     */
    private record Ticket(long windowMillis, long readNanos, long generation, long leases, UsageSample usage) {
    }

    /** A snapshot as read, with its ticket. */
    private record Entry(RouteSnapshot snap, Ticket at) {
    }

    /**
     * This instance's own effects on one route since start: health-write generation, live leases, usage added, and of
     * the usage and blob writes those the store below has not answered yet (held in a write batch, or on their way),
     * which a read that starts meanwhile does not include (a lease acquire, answered at once by the write batch, is
     * asked of the store below: {@link StateStore#unwrittenLeases}).
     */
    private static final class Local {
        final AtomicLong generation = new AtomicLong();
        final AtomicLong leases = new AtomicLong();
        /** When a background refresh of the route's copy started ({@link #NO_REFRESH}: none under way). */
        final AtomicLong refreshStarted = new AtomicLong(NO_REFRESH);
        /** Blob writes made here that the store below has not answered yet, by name. */
        final Map<String, BlobWrite> blobsUnstored = new ConcurrentHashMap<>();
        private UsageSample usage = UsageSample.ZERO;
        private UsageSample usageUnstored = UsageSample.ZERO;
        private int usageWrites;

        synchronized UsageSample usage() {
            return usage;
        }

        synchronized void addUsage(UsageSample s) {
            usage = usage.plus(s);
            usageUnstored = usageUnstored.plus(s);
            usageWrites++;
        }

        synchronized void usageStored(UsageSample s) {
            usageUnstored = --usageWrites == 0 ? UsageSample.ZERO : usageUnstored.minus(s);
        }

        /** The usage the store below has been told of (the same object as {@link #usage()} when nothing waits). */
        synchronized UsageSample usageStored() {
            return usageWrites == 0 ? usage : usage.minus(usageUnstored);
        }
    }

    private Local local(String routeId) {
        return locals.computeIfAbsent(routeId, k -> new Local());
    }

    /**
     * Positions {@code next..end} of a group's rotation, taken from the shared cursor and not yet handed out, and the
     * fetch of the next block while one is under way: requests that find the block spent join that fetch, up to a
     * block's worth, and take its positions in turn; the next ones start another fetch beside it, so a burst of any
     * size waits one round trip. Each request used to fetch a block of its own and take its first position, so a
     * burst arriving on a spent block (a cold instance's first, any fan-out) all took positions 1 apart by
     * {@value #CURSOR_BLOCK}, the same member of a rotation whose cycle divides it (found by hunt5: 40 concurrent
     * requests on 4 members all went to one).
     */
    private static final class CursorBlock {
        private long next = 1;
        private long end = 0;
        /** The fetch new requests join while it has room for them. */
        private Fetch joinable;

        /** One fetch of a block of {@code size} positions and the requests waiting for it (at most {@code size}). */
        private static final class Fetch {
            final CompletableFuture<Void> done = new CompletableFuture<>();
            final int size;
            int waiters;
            long next;

            Fetch(int size) {
                this.size = size;
            }
        }

        /**
         * The next position, fetching a block of a size drawn from {@code sizes} through {@code fetch} (which answers
         * its last position) when spent.
         */
        Uni<Long> take(IntSupplier sizes, IntFunction<Uni<Long>> fetch) {
            return Uni.createFrom().deferred(() -> {
                Fetch f;
                boolean start = false;
                synchronized (this) {
                    if (next <= end) {
                        return Uni.createFrom().item(next++);
                    }
                    if (joinable == null || joinable.waiters == joinable.size) {
                        joinable = new Fetch(sizes.getAsInt());
                        start = true;
                    }
                    f = joinable;
                    f.waiters++;
                }
                if (start) {
                    Fetch mine = f;
                    fetch.apply(mine.size).subscribe().with(last -> filled(mine, last), e -> failed(mine, e));
                }
                return Uni.createFrom().completionStage(f.done).map(v -> next(f));
            });
        }

        /** The fetch's block came: its waiters take its first positions, and the rest is this block's, if spent. */
        private void filled(Fetch f, long last) {
            synchronized (this) {
                if (joinable == f) {
                    joinable = null;
                }
                f.next = last - f.size + 1;
                if (next > end) {
                    next = f.next + f.waiters;
                    end = last;
                }
            }
            f.done.complete(null);
        }

        private synchronized long next(Fetch f) {
            return f.next++;
        }

        private void failed(Fetch f, Throwable e) {
            synchronized (this) {
                if (joinable == f) {
                    joinable = null;
                }
            }
            f.done.completeExceptionally(e);
        }
    }

    // ---- the group's rotation: positions taken from the shared cursor a block at a time ---------------------------

    /**
     * The group's next rotation position, without a round trip for all but about one request in
     * {@value #CURSOR_BLOCK}: the shared cursor hands this instance a block of consecutive positions, which it walks in
     * order, so its own requests still rotate one by one and instances never share a position. Two instances
     * interleave by blocks, not by requests; over whole cycles every member still gets its share. Each block's size is
     * drawn at random, from half to one and a half times {@value #CURSOR_BLOCK}: with one size for all, every block
     * started at the same point of a rotation whose cycle divides it (equal weights over 2, 4 or 8 members, 3:1), so
     * instances walked it in step, sending their concurrent requests to the same member, and a fresh instance's first
     * request always went to the same one (found by hunt9).
     */
    @Override
    public Uni<Long> nextCursor(String orgId, String alias) {
        return cursors.computeIfAbsent(orgId + '\n' + alias, k -> new CursorBlock())
                .take(blockSizes, n -> inner.nextCursors(orgId, alias, n));
    }

    // ---- the cached read -------------------------------------------------------------------------------------------

    @Override
    public Uni<Map<String, RouteSnapshot>> snapshot(Collection<String> routeIds, Duration usageWindow) {
        long now = ticker.nanos();
        long window = usageWindow.toMillis();
        Map<String, RouteSnapshot> out = new LinkedHashMap<>();
        List<String> missing = new ArrayList<>();
        List<String> ageing = null;
        for (String id : routeIds) {
            Entry e = entries.get(id);
            Local l = local(id);
            if (e != null && e.at.windowMillis == window && now - e.at.readNanos < maxAgeNanos
                    && e.at.generation == l.generation.get()) {
                out.put(id, adjusted(e, l));
                if (now - e.at.readNanos >= refreshAfterNanos && claimRefresh(l, now)) {
                    ageing = ageing == null ? new ArrayList<>() : ageing;
                    ageing.add(id);
                }
            } else {
                missing.add(id);
            }
        }
        if (ageing != null) {
            refreshAhead(ageing, usageWindow, tickets(ageing, window, now));
        }
        if (missing.isEmpty()) {
            return Uni.createFrom().item(out);
        }
        Map<String, Ticket> started = tickets(missing, window, now);
        return inner.snapshot(missing, usageWindow).map(read -> {
            if (entries.size() > SWEEP_AT) {
                sweep(now);
            }
            Map<String, RouteSnapshot> merged = new LinkedHashMap<>();
            for (String id : routeIds) {
                RouteSnapshot snap = out.get(id);
                if (snap == null) {
                    Entry kept = keep(id, read.getOrDefault(id, RouteSnapshot.empty(id)), started.get(id));
                    snap = adjusted(kept, local(id));
                }
                merged.put(id, snap);
            }
            return merged;
        });
    }

    /** What this instance has done to each route as a read of them starts at {@code now}. */
    private Map<String, Ticket> tickets(List<String> ids, long window, long now) {
        Map<String, Ticket> started = new HashMap<>();
        for (String id : ids) {
            Local l = local(id);
            // leases taken here but still in the write batch are not in the read: the copy adds them
            started.put(id, new Ticket(window, now, l.generation.get(), l.leases.get() - inner.unwrittenLeases(id),
                    l.usageStored()));
        }
        return started;
    }

    /**
     * Whether this caller starts the route's background refresh: none is under way, or the last one started a
     * max-age ago and never finished (a hung read must not stop refreshes for good).
     */
    private boolean claimRefresh(Local l, long now) {
        long started = l.refreshStarted.get();
        return (started == NO_REFRESH || now - started >= maxAgeNanos) && l.refreshStarted.compareAndSet(started, now);
    }

    /**
     * Refresh-ahead: a copy past half its max-age is still served, and read again in the background (one read per
     * route at a time), so under steady traffic no request waits for the shared store: otherwise one request per
     * route every max-age (1 in 25 at 500 req/s and 50 ms) paid a Redis round trip, right in the p96-p99 band.
     * A failed or late read changes nothing: the copy still expires at max-age and the next request reads.
     */
    private void refreshAhead(List<String> ids, Duration usageWindow, Map<String, Ticket> started) {
        inner.snapshot(ids, usageWindow).subscribe().with(read -> {
            for (String id : ids) {
                keep(id, read.getOrDefault(id, RouteSnapshot.empty(id)), started.get(id));
            }
            release(ids, started);
        }, failure -> release(ids, started));
    }

    /** Ends these refreshes' claims; a claim a later refresh took over (this one hung past max-age) stays its own. */
    private void release(List<String> ids, Map<String, Ticket> started) {
        for (String id : ids) {
            local(id).refreshStarted.compareAndSet(started.get(id).readNanos, NO_REFRESH);
        }
    }

    /**
     * Keeps a read, with this instance's blob writes the store below has not answered yet laid over it, unless a
     * health write of the route completed meanwhile (then it could never be served) or a read that started later is
     * already kept. Returns the read as kept (or as it would have been).
     */
    private Entry keep(String id, RouteSnapshot snap, Ticket at) {
        Local l = local(id);
        Entry read = new Entry(withUnstoredBlobs(snap, l), at);
        entries.compute(id, (k, kept) -> l.generation.get() == at.generation
                && (kept == null || kept.at.readNanos <= at.readNanos) ? read : kept);
        return read;
    }

    private static RouteSnapshot withUnstoredBlobs(RouteSnapshot snap, Local l) {
        if (l.blobsUnstored.isEmpty()) {
            return snap;
        }
        Map<String, String> written = new HashMap<>();
        l.blobsUnstored.forEach((name, write) -> written.put(name, write.value));
        return snap.withBlobs(written);
    }

    /** The cached snapshot plus this instance's leases and usage since it was read. */
    private static RouteSnapshot adjusted(Entry e, Local l) {
        RouteSnapshot s = e.snap;
        long leaseDelta = l.leases.get() - e.at.leases;
        UsageSample now = l.usage();
        if (leaseDelta == 0 && now == e.at.usage) {
            return s;
        }
        UsageSample usage = now == e.at.usage ? s.usage() : s.usage().plus(now.minus(e.at.usage));
        return s.withLoad((int) Math.max(0, s.inflight() + leaseDelta), usage);
    }

    private void sweep(long now) {
        entries.entrySet().removeIf(x -> now - x.getValue().at.readNanos >= maxAgeNanos);
    }

    /** Drops the route's copies once {@code write} has completed (or failed: the store may have applied it). */
    private <T> Uni<T> invalidating(String routeId, Uni<T> write) {
        return write.onTermination().invoke(() -> local(routeId).generation.incrementAndGet());
    }

    // ---- route health: written through, the route's copy dropped ------------------------------------------------

    @Override
    public Uni<BreakerState> recordFailure(String routeId, int maxFails, Duration failTimeout, Duration hold) {
        return invalidating(routeId, inner.recordFailure(routeId, maxFails, failTimeout, hold));
    }

    @Override
    public Uni<BreakerState> recordSuccess(String routeId, int maxFails, Duration failTimeout) {
        return invalidating(routeId, inner.recordSuccess(routeId, maxFails, failTimeout));
    }

    @Override
    public Uni<Boolean> tryAcquireProbe(String routeId, int maxFails, Duration ttl, String owner) {
        return invalidating(routeId, inner.tryAcquireProbe(routeId, maxFails, ttl, owner));
    }

    @Override
    public Uni<Void> releaseProbe(String routeId, String owner) {
        return invalidating(routeId, inner.releaseProbe(routeId, owner));
    }

    @Override
    public Uni<Void> resetHealth(String routeId) {
        return invalidating(routeId, inner.resetHealth(routeId));
    }

    @Override
    public Uni<Long> putRouteFlag(String routeId, String name, String value) {
        return invalidating(routeId, inner.putRouteFlag(routeId, name, value));
    }

    @Override
    public Uni<Optional<Long>> restoreRouteFlag(String routeId, String name, String value, FlagTime when) {
        return invalidating(routeId, inner.restoreRouteFlag(routeId, name, value, when));
    }

    // ---- blobs: written through, the copy patched ------------------------------------------------------------------

    @Override
    public Uni<Void> putRouteBlobs(String routeId, List<RouteBlob> blobs) {
        return Uni.createFrom().deferred(() -> {
            Local l = local(routeId);
            Map<String, BlobWrite> unstored = new HashMap<>();
            for (RouteBlob b : blobs) {
                BlobWrite u = new BlobWrite(b.value());
                unstored.put(b.name(), u);
                l.blobsUnstored.put(b.name(), u);   // laid over every read until the store below answers
            }
            patch(routeId, blobs); // ranked on at once, even while the write waits in a batch
            // a learned value the store below stepped from another's value is stored as something else
            AtomicBoolean restepped = new AtomicBoolean();
            List<RouteBlob> sent = new ArrayList<>(blobs.size());
            for (RouteBlob b : blobs) {
                sent.add(!b.learned() ? b : new RouteBlob(b.name(), b.value(), b.ttl(), b.expected(), held -> {
                    restepped.set(true);
                    return b.step().apply(held);
                }));
            }
            // and again once stored: a read that started before it landed is not kept over it; a value stored as
            // stepped from another's is read again instead
            return inner.putRouteBlobs(routeId, sent).onTermination().invoke(() -> {
                unstored.forEach(l.blobsUnstored::remove);
                if (restepped.get()) {
                    l.generation.incrementAndGet();
                } else {
                    patch(routeId, blobs);
                }
            });
        });
    }

    private void patch(String routeId, List<RouteBlob> blobs) {
        Map<String, String> written = new HashMap<>();
        blobs.forEach(b -> written.put(b.name(), b.value()));
        patch(routeId, s -> s.withBlobs(written));
    }

    /**
     * Moves the route's current copies to a new generation with the written blobs, so a read that
     * started before the write (and may not include it) is not kept over them.
     */
    private void patch(String routeId, UnaryOperator<RouteSnapshot> change) {
        Local l = local(routeId);
        long before = l.generation.get();
        if (!l.generation.compareAndSet(before, before + 1)) {
            return; // another write moved the generation: the copies are dropped anyway
        }
        entries.computeIfPresent(routeId, (k, e) -> e.at.generation != before ? e
                : new Entry(change.apply(e.snap), new Ticket(e.at.windowMillis, e.at.readNanos, before + 1,
                        e.at.leases, e.at.usage)));
    }

    // ---- leases and usage: counted locally as they are written -----------------------------------------------------

    @Override
    public Uni<Void> acquireLease(String routeId, String leaseId, Duration ttl) {
        return Uni.createFrom().deferred(() -> {
            local(routeId).leases.incrementAndGet();
            return inner.acquireLease(routeId, leaseId, ttl);
        });
    }

    @Override
    public Uni<Void> releaseLease(String routeId, String leaseId) {
        return Uni.createFrom().deferred(() -> {
            local(routeId).leases.decrementAndGet();
            return inner.releaseLease(routeId, leaseId);
        });
    }

    @Override
    public Uni<Void> addUsage(String routeId, UsageSample sample, Duration window) {
        return Uni.createFrom().deferred(() -> {
            Local l = local(routeId);
            l.addUsage(sample);
            return inner.addUsage(routeId, sample, window).onTermination().invoke(() -> l.usageStored(sample));
        });
    }

}
