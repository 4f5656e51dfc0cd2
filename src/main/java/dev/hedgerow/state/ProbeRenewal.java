package dev.hedgerow.state;

import dev.hedgerow.time.Cancellable;
import dev.hedgerow.time.Scheduler;

import java.time.Duration;

/**
 * Keeps a half-open probe slot taken while its probe runs: renews it under its owner's token
 * ({@link StateStore#renewProbe}) every half of its TTL until cancelled. A live probe is judged when its stream ends,
 * however long that takes, and the prober's is one call more than the refused parameters it adapts to, so a slot
 * taken once for one TTL would free itself mid-probe and let a second probe of the same route in; a holder that dies
 * stops renewing, and its slot frees itself one TTL later. A renewal never takes or steals a slot, so one that
 * overlaps the slot's release is harmless. Used by live dispatch and by the prober alike. Thread-safe.
 */
public final class ProbeRenewal implements Cancellable {
    private final StateStore store;
    private final Scheduler scheduler;
    private final String routeId;
    private final String owner;
    private final Duration ttl;
    private volatile boolean cancelled;
    private volatile Cancellable next = Cancellable.NONE;

    private ProbeRenewal(StateStore store, Scheduler scheduler, String routeId, String owner, Duration ttl) {
        this.store = store;
        this.scheduler = scheduler;
        this.routeId = routeId;
        this.owner = owner;
        this.ttl = ttl;
    }

    /** Renews {@code owner}'s slot on the route every {@code ttl / 2}, from {@code ttl / 2} from now. */
    public static ProbeRenewal start(StateStore store, Scheduler scheduler, String routeId, String owner,
                                     Duration ttl) {
        ProbeRenewal r = new ProbeRenewal(store, scheduler, routeId, owner, ttl);
        r.scheduleNext();
        return r;
    }

    private void scheduleNext() {
        next = scheduler.schedule(ttl.dividedBy(2), this::renew);
        if (cancelled) {
            next.cancel(); // cancelled while this was being scheduled
        }
    }

    private void renew() {
        if (cancelled) {
            return;
        }
        store.renewProbe(routeId, owner, ttl).subscribe().with(v -> { }, e -> { });
        scheduleNext();
    }

    /** Stops renewing; the slot keeps the TTL its last renewal gave it. Idempotent. */
    @Override
    public void cancel() {
        cancelled = true;
        next.cancel();
    }
}
