package dev.hedgerow.state;

import dev.hedgerow.time.Scheduler;
import io.smallrye.mutiny.Uni;
import io.smallrye.mutiny.subscription.UniEmitter;

import java.time.Duration;
import java.time.LocalDate;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicReference;
import java.util.function.BinaryOperator;
import java.util.function.Function;
import java.util.function.Supplier;
import java.util.function.UnaryOperator;

/**
 * Write-behind for the writes every request makes and nobody waits for: the hedge budget's request count, route
 * usage, the org's ledger (sums), route blobs (the last value of each name wins; a learned one keeps both steps)
 * and leases. Such writes are merged per key for up to {@code window} and then written as one store call per key, so
 * a busy instance makes a few shared store calls per window instead of six per request. Everything else, and every
 * read, passes straight through.
 *
 * <p>A merged write's {@code Uni} completes when its batch has been written (with the batch's failure, if any), so
 * "awaited, therefore stored" still holds, except for a lease acquire, which is accepted at once (see
 * {@link #acquireLease}); a release never reaches the store before its acquire. The cost is lag: another instance
 * sees this instance's counts, usage and learned models up to {@code window} later (this instance's own snapshot
 * cache adds them locally at once), and a hedge-budget check sees requests counted here within the last window as
 * not yet counted; the budget's {@code min_per_window} covers a burst's first hedges. Writes pending when the
 * process dies are lost, like any in-flight request; {@link #flush()} writes them out at shutdown.
 *
 * <p>Thread-safe without a lock: both event loops merge into the same few keys (the org's count, a route's usage)
 * on every request, so each key's batch is one immutable {@link Cell} swapped by compare-and-set. A flush seals a
 * batch (one more swap) before writing it; a write that finds its batch sealed starts the key's next batch.
 */
public final class BatchingStateStore extends ForwardingStateStore {
    private final Scheduler scheduler;
    private final Duration window;
    private final Map<Object, Batch> pending = new ConcurrentHashMap<>();
    /** By route: lease acquires accepted and not written yet ({@link #unwrittenLeases}). */
    private final Map<String, AtomicLong> unwritten = new ConcurrentHashMap<>();
    private final AtomicBoolean flushScheduled = new AtomicBoolean();

    /** @param window how long a write may wait to be merged with later ones; must be positive */
    public BatchingStateStore(StateStore inner, Scheduler scheduler, Duration window) {
        super(inner);
        this.scheduler = Objects.requireNonNull(scheduler, "scheduler");
        if (window.isNegative() || window.isZero()) {
            throw new IllegalArgumentException("window must be positive: " + window);
        }
        this.window = window;
    }

    private record CountKey(String orgId, Duration window) {
    }

    private record UsageKey(String routeId, Duration window) {
    }

    private record LedgerKey(String orgId, LocalDate day, String alias) {
    }

    private record BlobsKey(String routeId) {
    }

    private record LeaseKey(String routeId, String leaseId) {
    }

    private enum Phase { OPEN, SEALED, CANCELLED }

    /** Someone waiting for a batch to be written; the waiters of a batch are a stack pushed by compare-and-set. */
    private record Waiter(UniEmitter<? super Void> emitter, Waiter next) {
    }

    /**
     * A batch's merged value, who waits for it, and whether it still takes writes; a sealed cell also holds
     * {@code stored}, the write of its value, made once whoever subscribes first (the flush, or a lease release that
     * must wait for its acquire to land).
     */
    private record Cell(Object value, Waiter waiters, Phase phase, Uni<Void> stored) {
    }

    /** One key's pending write: its cell, and how its value is written when sealed. */
    private static final class Batch {
        final AtomicReference<Cell> cell;
        final Function<Object, Uni<Void>> write;

        Batch(Function<Object, Uni<Void>> write, Object value, UniEmitter<? super Void> waiter) {
            this.write = write;
            this.cell = new AtomicReference<>(new Cell(value, waiter == null ? null : new Waiter(waiter, null),
                    Phase.OPEN, null));
        }

        /** Applies {@code step} to the open cell; false once the batch is sealed or cancelled. */
        boolean update(UnaryOperator<Cell> step) {
            while (true) {
                Cell c = cell.get();
                if (c.phase() != Phase.OPEN) {
                    return false;
                }
                if (cell.compareAndSet(c, step.apply(c))) {
                    return true;
                }
            }
        }

        /**
         * Moves an open batch to {@code phase} (sealing it makes its write); the closed cell, or null when it was
         * already closed.
         */
        Cell close(Phase phase) {
            while (true) {
                Cell c = cell.get();
                if (c.phase() != Phase.OPEN) {
                    return null;
                }
                Uni<Void> stored = phase == Phase.SEALED
                        ? Uni.createFrom().deferred(() -> write.apply(c.value())).memoize().indefinitely() : null;
                Cell closed = new Cell(c.value(), c.waiters(), phase, stored);
                if (cell.compareAndSet(c, closed)) {
                    return closed;
                }
            }
        }

        /** The sealed write, or null while the batch is open (or when it was cancelled). */
        Uni<Void> stored() {
            return cell.get().stored();
        }
    }

    /** A write that completes when its batch is stored. */
    private <V> Uni<Void> merged(Object key, V value, BinaryOperator<V> merge, Function<V, Uni<Void>> write) {
        return Uni.createFrom().emitter(em -> enqueue(key, value, merge, write, em));
    }

    /**
     * Merges {@code value} into the key's open batch (a new one when there is none, or it is sealed), adds {@code
     * waiter} (null: no one waits) and makes sure a flush is scheduled.
     */
    @SuppressWarnings("unchecked")
    private <V> void enqueue(Object key, V value, BinaryOperator<V> merge, Function<V, Uni<Void>> write,
                             UniEmitter<? super Void> waiter) {
        while (true) {
            Batch b = pending.get(key);
            if (b == null) {
                if (pending.putIfAbsent(key, new Batch(v -> write.apply((V) v), value, waiter)) == null) {
                    break;
                }
            } else if (b.update(c -> new Cell(merge.apply((V) c.value(), value),
                    waiter == null ? c.waiters() : new Waiter(waiter, c.waiters()), Phase.OPEN, null))) {
                break;
            } else if (pending.replace(key, b, new Batch(v -> write.apply((V) v), value, waiter))) {
                break; // b is being written: this write starts the key's next batch
            }
        }
        // after the merge: a flush that began before it cleared the flag first, so this schedules the next one
        if (!flushScheduled.get() && flushScheduled.compareAndSet(false, true)) {
            scheduler.schedule(window, () -> flush().subscribe().with(v -> { }, t -> { }));
        }
    }

    /**
     * Writes every pending batch now (one store call per key); the result completes when all of them are written, and
     * fails if any failed (each batch's waiters get their own batch's outcome either way).
     */
    public Uni<Void> flush() {
        flushScheduled.set(false);
        List<Uni<Void>> writes = new ArrayList<>();
        for (Map.Entry<Object, Batch> e : pending.entrySet()) {
            Batch b = e.getValue();
            Cell sealed = b.close(Phase.SEALED);
            if (sealed == null) {
                continue; // cancelled, or sealed by a flush running at the same time
            }
            boolean lease = e.getKey() instanceof LeaseKey;
            if (!lease) { // a sealed lease stays findable until it lands, so its release can wait for it
                pending.remove(e.getKey(), b);
            }
            writes.add(sealed.stored().onItemOrFailure().invoke((v, t) -> {
                if (lease) {
                    pending.remove(e.getKey(), b);
                }
                for (Waiter w = sealed.waiters(); w != null; w = w.next()) {
                    if (t == null) {
                        w.emitter().complete(null);
                    } else {
                        w.emitter().fail(t);
                    }
                }
            }).memoize().indefinitely());
        }
        writes.forEach(w -> w.subscribe().with(v -> { }, t -> { }));
        return writes.isEmpty() ? Uni.createFrom().voidItem()
                : Uni.join().all(writes).andCollectFailures().replaceWithVoid();
    }

    /** What is pending, key kind by phase with its waiters, e.g. {@code UsageKey OPEN(3)}: for a test's failure. */
    String describePending() {
        List<String> out = new ArrayList<>();
        pending.forEach((key, b) -> {
            Cell c = b.cell.get();
            int waiters = 0;
            for (Waiter w = c.waiters(); w != null; w = w.next()) {
                waiters++;
            }
            out.add(key.getClass().getSimpleName() + " " + c.phase() + "(" + waiters + ")");
        });
        return "pending: " + out;
    }

    // ---- merged writes -------------------------------------------------------------------------------------------

    @Override
    public Uni<Void> countRequests(String orgId, long n, Duration window) {
        return merged(new CountKey(orgId, window), Math.max(1, n), Long::sum,
                total -> inner.countRequests(orgId, total, window));
    }

    @Override
    public Uni<Void> addUsage(String routeId, UsageSample sample, Duration window) {
        return merged(new UsageKey(routeId, window), sample, UsageSample::plus,
                s -> inner.addUsage(routeId, s, window));
    }

    @Override
    public Uni<Void> addLedger(String orgId, LocalDate day, String alias, LedgerEntry entry) {
        return merged(new LedgerKey(orgId, day, alias), entry, LedgerEntry::plus,
                e -> inner.addLedger(orgId, day, alias, e));
    }

    @Override
    public Uni<Void> putRouteBlobs(String routeId, List<RouteBlob> blobs) {
        // a name written twice in one batch: the later value, and for learned values both steps (RouteBlob#then)
        Map<String, RouteBlob> byName = new LinkedHashMap<>();
        blobs.forEach(b -> byName.merge(b.name(), b, RouteBlob::then));
        return merged(new BlobsKey(routeId), byName, (a, b) -> {
            Map<String, RouteBlob> m = new LinkedHashMap<>(a);
            b.forEach((name, blob) -> m.merge(name, blob, RouteBlob::then));
            return m;
        }, m -> inner.putRouteBlobs(routeId, List.copyOf(m.values())));
    }

    // ---- leases: an acquire is accepted at once; one released before its batch is written is never written --------

    /**
     * Accepted at once (the request's release must not wait for the batch), written with the next batch unless the
     * request ends first: then neither the acquire nor the release reaches the store. A request shorter than the
     * window is therefore invisible to other instances' least-connections counts (this instance counts it locally).
     */
    @Override
    public Uni<Void> acquireLease(String routeId, String leaseId, Duration ttl) {
        return Uni.createFrom().item(() -> {
            AtomicLong waiting = unwritten.computeIfAbsent(routeId, k -> new AtomicLong());
            waiting.incrementAndGet();
            enqueue(new LeaseKey(routeId, leaseId), ttl, (older, newer) -> newer,
                    t -> inner.acquireLease(routeId, leaseId, t).onTermination().invoke(waiting::decrementAndGet), null);
            return null;
        });
    }

    /** Acquires of the route's leases accepted here and not written yet (waiting in a batch, or being written). */
    @Override
    public long unwrittenLeases(String routeId) {
        AtomicLong waiting = unwritten.get(routeId);
        return waiting == null ? 0 : waiting.get();
    }

    /**
     * A renewal of a lease still waiting in a batch only changes the TTL it will be written with; one of a lease being
     * written follows its acquire.
     */
    @Override
    public Uni<Void> renewLease(String routeId, String leaseId, Duration ttl) {
        return Uni.createFrom().deferred(() -> {
            Batch b = pending.get(new LeaseKey(routeId, leaseId));
            if (b == null) {
                return inner.renewLease(routeId, leaseId, ttl);
            }
            if (b.update(c -> new Cell(ttl, c.waiters(), Phase.OPEN, null))) {
                return Uni.createFrom().voidItem();
            }
            return afterLanding(b, () -> inner.renewLease(routeId, leaseId, ttl));
        });
    }

    /** Cancels an acquire still in a batch; otherwise removes the lease once its acquire (if being written) landed. */
    @Override
    public Uni<Void> releaseLease(String routeId, String leaseId) {
        return Uni.createFrom().deferred(() -> {
            LeaseKey key = new LeaseKey(routeId, leaseId);
            Batch b = pending.get(key);
            if (b == null) {
                return inner.releaseLease(routeId, leaseId);
            }
            if (b.close(Phase.CANCELLED) != null) {
                pending.remove(key, b);
                unwritten.get(routeId).decrementAndGet();   // never written: its acquire made it
                return Uni.createFrom().voidItem();
            }
            return afterLanding(b, () -> inner.releaseLease(routeId, leaseId));
        });
    }

    /**
     * {@code next} once the sealed batch {@code b} has been written (or failed to be); nothing when {@code b} was
     * cancelled: its lease was released before it was ever written.
     */
    private static Uni<Void> afterLanding(Batch b, Supplier<Uni<Void>> next) {
        Uni<Void> landing = b.stored();
        return landing == null ? Uni.createFrom().voidItem()
                : landing.onItemOrFailure().transformToUni((v, t) -> next.get());
    }
}
