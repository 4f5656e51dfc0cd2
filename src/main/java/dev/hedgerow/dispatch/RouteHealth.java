package dev.hedgerow.dispatch;

import dev.hedgerow.catalog.GroupSettings;
import dev.hedgerow.dispatch.Attempt.Failure;
import dev.hedgerow.routing.LearnedModels;
import dev.hedgerow.state.StateStore;
import dev.hedgerow.time.Ticker;

import java.time.Duration;

/**
 * The health verdicts a dispatch writes about its routes (Kong's passive health check): a failure counted against
 * the route (and its {@code retry-after} held, and a latency penalty on its peak EWMAs), a success that resets the
 * count. A verdict frees the half-open probe slot the attempt held. Guarded by its dispatch.
 */
final class RouteHealth {
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
        if (a.probe != null) {
            a.probe.settledByVerdict();
        }
        store.recordFailure(a.cand.id(), breaker.threshold(), breaker.failTimeout()).subscribe().with(v -> { },
                t -> { });
        // lowest_latency's measures take the failure as a latency penalty, with or without a breaker
        models.learnFailure(a.cand.state(), timeouts);
        if (f.retryAfterSeconds() > 0) {
            store.holdRetryAfter(a.cand.id(), Duration.ofSeconds(f.retryAfterSeconds()))
                    .subscribe().with(v -> { }, t -> { });
        }
    }

    /** The attempt succeeded: reports it when the route's failure count may need the reset. */
    void success(Attempt a) {
        // Skipping the write is exact only while no failure recorded after the snapshot can be fail_timeout old:
        // Kong resets the counter on a success after fail_timeout, so a request that long must always report.
        if (a.cand.halfOpen() || a.cand.state().fails() > 0
                || (ticker.nanos() - requestStartNanos) / 1_000_000L >= breaker.failTimeout().toMillis()) {
            if (a.probe != null) {
                a.probe.settledByVerdict();
            }
            store.recordSuccess(a.cand.id(), breaker.threshold(), breaker.failTimeout()).subscribe().with(v -> { },
                    t -> { });
        }
    }
}
