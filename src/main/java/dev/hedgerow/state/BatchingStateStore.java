package dev.hedgerow.state;

import dev.hedgerow.time.Scheduler;
import io.smallrye.mutiny.Uni;
import io.smallrye.mutiny.subscription.UniEmitter;

import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.concurrent.ConcurrentHashMap;
import java.util.function.BinaryOperator;
import java.util.function.Function;

/**
 * Write-behind for the writes every request makes and nobody waits for: the hedge budget's request count, route
 * usage, the org's ledger (sums), learned-model blobs (the last value of each name wins) and leases. Such writes are
 * merged per key for up to {@code window} and then written as one store call per key, so a busy instance makes a few
 * shared store calls per window instead of six per request. Everything else, and every read, passes straight
 * through.
 *
 * <p>A merged write's {@code Uni} completes when its batch has been written (with the batch's failure, if any), so
 * "awaited, therefore stored" still holds, except for a lease acquire, which is accepted at once (see
 * {@link #acquireLease}); a release never reaches the store before its acquire. The cost is lag: another instance
 * sees this instance's counts, usage and learned models up to {@code window} later (this instance's own snapshot
 * cache adds them locally at once), and a hedge-budget check sees requests counted here within the last window as
 * not yet counted; the budget's {@code min_per_window} covers a burst's first hedges. Writes pending when the
 * process dies are lost, like any in-flight request; {@link #flush()} writes them out at shutdown.
 *
 * <p>Thread-safe: pending batches are guarded by one lock held only to merge or to swap the batch map.
 */
public final class BatchingStateStore extends ForwardingStateStore {
    private final Scheduler scheduler;
    private final Duration window;
    private final Object lock = new Object();
    private Map<Object, Batch> pending = new LinkedHashMap<>();
    private boolean flushScheduled;

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

    private record LedgerKey(String orgId, String alias) {
    }

    private record BlobsKey(String routeId) {
    }

    private record LeaseKey(String routeId, String leaseId) {
    }

    /** Lease acquires being written: a release of one waits for it, so Redis never sees the release first. */
    private final Map<LeaseKey, Uni<Void>> acquiring = new ConcurrentHashMap<>();

    /** The merged value of one key and everyone waiting for it to be written. */
    private static final class Batch {
        final Function<Object, Uni<Void>> write;
        Object value;
        final List<UniEmitter<? super Void>> waiters = new ArrayList<>(4);

        Batch(Function<Object, Uni<Void>> write, Object value) {
            this.write = write;
            this.value = value;
        }
    }

    /** A write that completes when its batch is stored. */
    private <V> Uni<Void> merged(Object key, V value, BinaryOperator<V> merge, Function<V, Uni<Void>> write) {
        return Uni.createFrom().emitter(em -> enqueue(key, value, merge, write, em));
    }

    /**
     * Merges {@code value} into the key's pending batch (a new one when there is none), adds {@code waiter} (null: no
     * one waits) and makes sure a flush is scheduled.
     */
    @SuppressWarnings("unchecked")
    private <V> void enqueue(Object key, V value, BinaryOperator<V> merge, Function<V, Uni<Void>> write,
                             UniEmitter<? super Void> waiter) {
        boolean schedule;
        synchronized (lock) {
            Batch b = pending.get(key);
            if (b == null) {
                b = new Batch(v -> write.apply((V) v), value);
                pending.put(key, b);
            } else {
                b.value = merge.apply((V) b.value, value);
            }
            if (waiter != null) {
                b.waiters.add(waiter);
            }
            schedule = !flushScheduled;
            flushScheduled = true;
        }
        if (schedule) {
            scheduler.schedule(window, () -> flush().subscribe().with(v -> { }, t -> { }));
        }
    }

    /**
     * Writes every pending batch now (one store call per key); the result completes when all of them are written, and
     * fails if any failed (each batch's waiters get their own batch's outcome either way).
     */
    public Uni<Void> flush() {
        List<Uni<Void>> writes = new ArrayList<>();
        synchronized (lock) {
            for (Map.Entry<Object, Batch> e : pending.entrySet()) {
                Batch b = e.getValue();
                Uni<Void> stored = Uni.createFrom().deferred(() -> b.write.apply(b.value)).memoize().indefinitely();
                LeaseKey lease = e.getKey() instanceof LeaseKey k ? k : null;
                if (lease != null) { // registered before the lock opens to a release
                    acquiring.put(lease, stored);
                }
                writes.add(stored.onItemOrFailure().invoke((v, t) -> {
                    if (lease != null) {
                        acquiring.remove(lease, stored);
                    }
                    b.waiters.forEach(w -> {
                        if (t == null) {
                            w.complete(null);
                        } else {
                            w.fail(t);
                        }
                    });
                }).memoize().indefinitely());
            }
            pending = new LinkedHashMap<>();
            flushScheduled = false;
        }
        writes.forEach(w -> w.subscribe().with(v -> { }, t -> { }));
        return writes.isEmpty() ? Uni.createFrom().voidItem()
                : Uni.join().all(writes).andCollectFailures().replaceWithVoid();
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
    public Uni<Void> addLedger(String orgId, String alias, UsageSample sample) {
        return merged(new LedgerKey(orgId, alias), sample, UsageSample::plus, s -> inner.addLedger(orgId, alias, s));
    }

    @Override
    public Uni<Void> putRouteBlobs(String routeId, List<RouteBlob> blobs) {
        Map<String, RouteBlob> byName = new LinkedHashMap<>();
        blobs.forEach(b -> byName.put(b.name(), b));
        return merged(new BlobsKey(routeId), byName, (a, b) -> {
            Map<String, RouteBlob> m = new LinkedHashMap<>(a);
            m.putAll(b);
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
            enqueue(new LeaseKey(routeId, leaseId), ttl, (older, newer) -> newer,
                    t -> inner.acquireLease(routeId, leaseId, t), null);
            return null;
        });
    }

    /** A renewal of a lease still waiting in a batch only changes the TTL it will be written with. */
    @Override
    public Uni<Void> renewLease(String routeId, String leaseId, Duration ttl) {
        return Uni.createFrom().deferred(() -> {
            synchronized (lock) {
                Batch b = pending.get(new LeaseKey(routeId, leaseId));
                if (b != null) {
                    b.value = ttl;
                    return Uni.createFrom().voidItem();
                }
            }
            return inner.renewLease(routeId, leaseId, ttl);
        });
    }

    /** Cancels an acquire still in a batch; otherwise removes the lease once its acquire (if being written) landed. */
    @Override
    public Uni<Void> releaseLease(String routeId, String leaseId) {
        return Uni.createFrom().deferred(() -> {
            LeaseKey key = new LeaseKey(routeId, leaseId);
            Uni<Void> landing;
            synchronized (lock) {
                if (pending.remove(key) != null) {
                    return Uni.createFrom().voidItem();
                }
                landing = acquiring.get(key);
            }
            return landing == null ? inner.releaseLease(routeId, leaseId)
                    : landing.onItemOrFailure().transformToUni((v, t) -> inner.releaseLease(routeId, leaseId));
        });
    }

}
