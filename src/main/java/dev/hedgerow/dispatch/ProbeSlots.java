package dev.hedgerow.dispatch;

import dev.hedgerow.state.ProbeRenewal;
import dev.hedgerow.state.StateStore;
import dev.hedgerow.time.Cancellable;
import dev.hedgerow.time.Scheduler;
import io.smallrye.mutiny.Uni;

import java.time.Duration;

/**
 * The half-open probe slots one dispatch takes, and the order of its store writes about them: each acquisition
 * waits for this dispatch's last release. Guarded by its dispatch.
 */
final class ProbeSlots {
    private final StateStore store;
    /**
     * The last probe-slot release this dispatch sent. A later acquisition waits for it: writes on separate pooled
     * connections can overtake each other, and an acquisition landing first would find this dispatch's own slot
     * still taken (a refused prefill moves the resume to the next method on the same half-open route).
     */
    private Uni<Void> released = Uni.createFrom().voidItem();

    ProbeSlots(StateStore store) {
        this.store = store;
    }

    /** A slot on the route for {@code owner}, not yet asked for. */
    Slot slot(String routeId, String owner) {
        return new Slot(routeId, owner);
    }

    /** Asks the store for the slot ({@code StateStore.tryAcquireProbe}) once the last release went through. */
    Uni<Boolean> acquire(Slot slot, int maxFails, Duration ttl) {
        return released.onItemOrFailure().transformToUni((v, t) -> store.tryAcquireProbe(slot.routeId, maxFails,
                ttl, slot.owner));
    }

    /**
     * A half-open probe slot this dispatch took ({@code StateStore.tryAcquireProbe}), given back exactly once: by the
     * health verdict of the attempt it let through ({@code recordSuccess} / {@code recordFailure} free the slot
     * themselves), or else by a release under its own owner token, so a late release never frees a slot another
     * instance took after this one expired. Guarded by the enclosing dispatch.
     */
    final class Slot {
        final String routeId;
        final String owner;
        /** Taken, or still being taken: cleared when the store refuses it or when it is given back. */
        boolean held = true;
        /** The renewal keeping the slot while its probe runs, stopped when the slot is given back. */
        private Cancellable renewal = Cancellable.NONE;

        Slot(String routeId, String owner) {
            this.routeId = routeId;
            this.owner = owner;
        }

        /**
         * Keeps the slot taken while its probe runs (a long stream is judged when it ends), until it is given back
         * ({@link #settledBy} or {@link #release}, one of which every end of the attempt calls).
         */
        void keep(Scheduler scheduler, Duration ttl) {
            renewal.cancel();
            renewal = held ? ProbeRenewal.start(store, scheduler, routeId, owner, ttl) : Cancellable.NONE;
        }

        /**
         * {@code verdict}, the health write on the route that frees the slot, followed by a release under this
         * slot's owner token, whatever became of the write: a verdict the shared store did not take (an outage, the
         * write kept on the local store) left the slot taken there until its TTL, every request for the route refused
         * "half-open probe in flight" meanwhile (found by hunt23). The release is a no-op once the verdict freed the
         * slot, and the outage guard keeps one it could not send and sends it when the store answers again.
         */
        <T> Uni<T> settledBy(Uni<T> verdict) {
            held = false;
            renewal.cancel();
            return verdict.onTermination().call(() -> store.releaseProbe(routeId, owner)
                    .onFailure().recoverWithNull());
        }

        /** The probe came to no verdict (hang-up, client error, lost race, ...): free the slot for the next one. */
        void release() {
            if (!held) {
                return;
            }
            held = false;
            renewal.cancel();
            released = released.onItemOrFailure()
                    .transformToUni((v, t) -> store.releaseProbe(routeId, owner))
                    .onFailure().recoverWithNull().memoize().indefinitely();
            released.subscribe().with(v -> { }, t -> { });
        }
    }
}
