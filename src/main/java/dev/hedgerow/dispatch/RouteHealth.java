package dev.hedgerow.dispatch;

import dev.hedgerow.catalog.GroupSettings;
import dev.hedgerow.dispatch.Attempt.Failure;
import dev.hedgerow.routing.Candidate;
import dev.hedgerow.routing.LearnedModels;
import dev.hedgerow.routing.Router;
import dev.hedgerow.state.BreakerState;
import dev.hedgerow.state.StateStore;
import dev.hedgerow.time.Ticker;
import io.smallrye.mutiny.Uni;

import java.time.Duration;
import java.util.HashMap;
import java.util.Map;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicReference;

/**
 * The health verdicts a dispatch writes about its routes (Kong's passive health check): a failure counted against
 * the route (with its provider's {@code retry-after} hold in the same store write, and a latency penalty on its peak
 * EWMAs), a success that resets the count. A verdict frees the half-open probe slot the attempt held. It remembers what its failures did to each route
 * (how many, the last one's time, the hold's end), so the request can tell when a route it failed on serves again.
 * Guarded by its dispatch.
 */
final class RouteHealth {
    /**
     * What this request's failures wrote about one route; times on the ticker. Besides what the request meant to write,
     * the ends the store reported once it applied a write (a hold or cooldown runs from when the store applied it,
     * which a slow or queued write makes later than the failure); those are set on the store's thread, so they are
     * atomic, and only ever pushed later.
     */
    private static final class Written {
        int failures;
        long lastFailureNanos;
        long holdUntilNanos = Long.MIN_VALUE;
        final AtomicLong storedHoldUntilNanos = new AtomicLong(Long.MIN_VALUE);
        final AtomicLong storedCoolUntilNanos = new AtomicLong(Long.MIN_VALUE);

        /** The store applied a failure write and answered {@code b} at {@code answeredNanos}. */
        void stored(BreakerState b, long answeredNanos) {
            if (b.holdRemainingMillis() > 0) {
                storedHoldUntilNanos.accumulateAndGet(answeredNanos + b.holdRemainingMillis() * 1_000_000L, Math::max);
            }
            if (b.coolingDown() && b.cooldownRemainingMillis() > 0) {
                storedCoolUntilNanos.accumulateAndGet(answeredNanos + b.cooldownRemainingMillis() * 1_000_000L,
                        Math::max);
            }
        }

        long holdEndNanos() {
            return Math.max(holdUntilNanos, storedHoldUntilNanos.get());
        }
    }

    private final Map<String, Written> written = new HashMap<>();
    /** Health writes sent and not yet answered; the one waiting on them ({@link #afterWrites}). */
    private final AtomicInteger unanswered = new AtomicInteger();
    private final AtomicReference<Runnable> whenAnswered = new AtomicReference<>();
    private final StateStore store;
    private final LearnedModels models;
    private final GroupSettings.Breaker breaker;
    private final GroupSettings.Timeouts timeouts;
    private final Ticker ticker;
    private final long requestStartNanos;

    RouteHealth(StateStore store, LearnedModels models, GroupSettings settings, Ticker ticker,
                long requestStartNanos) {
        this.store = store;
        this.models = models;
        this.breaker = settings.breaker();
        this.timeouts = settings.timeouts();
        this.ticker = ticker;
        this.requestStartNanos = requestStartNanos;
    }

    /** The attempt failed: counts it against the route when it is the route's fault. */
    void failure(Attempt a, Failure f) {
        if (!f.routeFault()) {
            return;
        }
        Written w = written.computeIfAbsent(a.cand.id(), k -> new Written());
        // the provider's hold goes with the failure in one write: between two, another instance (or this request's
        // next plan) could read the failure counted without the hold and send a request the provider refused ahead
        Duration hold = Duration.ofMillis(Math.max(0, f.retryAfterMillis()));
        send(verdict(a, store.recordFailure(a.cand.id(), breaker.threshold(), breaker.failTimeout(), hold)
                .invoke(b -> w.stored(b, ticker.nanos()))));
        // lowest_latency's measures take the failure as a latency penalty, with or without a breaker
        models.learnFailure(a.cand.state(), timeouts);
        long now = ticker.nanos();
        w.failures++;
        w.lastFailureNanos = now;
        if (!hold.isZero()) {
            // the store keeps the longer of two holds; so does this
            w.holdUntilNanos = Math.max(w.holdUntilNanos, now + hold.toNanos());
        }
    }

    /**
     * How long, from {@code now}, until the candidate can serve again after what this request's failures wrote, by
     * the router's rule ({@link Router#backInMillis}) on the hold and cooldown they set: the provider's Retry-After
     * hold, and the cooldown when they opened its breaker (it was half-open, or its shared count plus theirs reached
     * max_fails; every failure at the threshold re-arms the cooldown, so it runs from the last one); 0 when they kept
     * it from neither. Where the store has answered a write, the hold and cooldown it reported count too (the later
     * end wins): they run from when the store applied the write, so a client told this wait does not come back to a
     * route still held for the few milliseconds its write took.
     */
    long backInMillis(Candidate c, long now) {
        Written w = written.get(c.id());
        if (w == null) {
            return 0;
        }
        long holdEnd = w.holdEndNanos();
        long hold = holdEnd == Long.MIN_VALUE ? 0 : ceilMillis(holdEnd - now);
        long coolEnd = c.halfOpen() || Router.tripped((long) c.state().fails() + w.failures, breaker.threshold())
                ? w.lastFailureNanos + breaker.failTimeout().toNanos() : Long.MIN_VALUE;
        coolEnd = Math.max(coolEnd, w.storedCoolUntilNanos.get());
        long cooldown = coolEnd == Long.MIN_VALUE ? 0 : ceilMillis(coolEnd - now);
        return Router.backInMillis(cooldown > 0, cooldown, hold);
    }

    /** Whether a failure of this request put a provider's hold on the candidate that has not ended yet. */
    boolean held(Candidate c) {
        Written w = written.get(c.id());
        return w != null && w.holdEndNanos() > ticker.nanos(); // no hold is Long.MIN_VALUE, never after now
    }

    /** Rounded up: a wait a fraction of a millisecond short would come back to the same refusal; 0 when over. */
    private static long ceilMillis(long nanos) {
        return nanos <= 0 ? 0 : (nanos + 999_999) / 1_000_000L;
    }

    /** The attempt succeeded: reports it when the route's failure count may need the reset. */
    void success(Attempt a) {
        // Skipping the write is exact only while no failure recorded after the snapshot can be fail_timeout old:
        // Kong resets the counter on a success after fail_timeout, so a request that long must always report.
        if (a.cand.halfOpen() || a.cand.state().fails() > 0
                || (ticker.nanos() - requestStartNanos) / 1_000_000L >= breaker.failTimeout().toMillis()) {
            send(verdict(a, store.recordSuccess(a.cand.id(), breaker.threshold(), breaker.failTimeout())));
        }
    }

    /** A health write on the attempt's route, which frees its half-open probe slot when it holds one. */
    private static <T> Uni<T> verdict(Attempt a, Uni<T> write) {
        return a.probe == null ? write : a.probe.settledBy(write);
    }

    /** Sends a health write, counted until the store answers it (or fails: it may have applied it). */
    private void send(Uni<?> write) {
        unanswered.incrementAndGet();
        write.subscribe().with(v -> answered(), t -> answered());
    }

    private void answered() {
        if (unanswered.decrementAndGet() == 0) {
            runWhenAnswered();
        }
    }

    /**
     * Runs {@code then} once every health write this request sent has been answered by the store, at once when none
     * is waiting; or when {@link #runWhenAnswered} is called first (the caller's bound on the wait). Runs it once,
     * on whichever thread gets there first. A request that ends in a refusal is answered after its writes so a client
     * that asks again at once meets the cooldowns and holds it was told about; the store's own timeout (the Redis
     * guard's) bounds the wait.
     *
     * @return whether {@code then} ran here (no write was waiting), so the caller needs no bound on the wait
     */
    boolean afterWrites(Runnable then) {
        whenAnswered.set(then);
        if (unanswered.get() == 0) {
            return runWhenAnswered();
        }
        return false;
    }

    /** Runs what {@link #afterWrites} is waiting to run, now, if it has not run; whether this call ran it. */
    boolean runWhenAnswered() {
        Runnable r = whenAnswered.getAndSet(null);
        if (r != null) {
            r.run();
            return true;
        }
        return false;
    }
}
