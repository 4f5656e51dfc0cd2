package dev.hedgerow.catalog;

import java.time.Duration;

/**
 * An org's shared hedge budget (Finagle's retry budget, applied to hedges): over a sliding {@code window}, the org's
 * hedges may not exceed {@code ratio} × its requests, and at least {@code minPerWindow} hedges are always allowed
 * (so a quiet org can still hedge). Shared by every instance through the state store, so the budget holds
 * fleet-wide; a hedge it refuses leaves the request on its primary. Immutable.
 *
 * @param ratio        hedges per request, 0 to 1 (0.05 = at most 5 % extra upstream requests from hedging)
 * @param minPerWindow hedges allowed per window whatever the traffic, ≥ 0
 * @param window       the sliding window, &gt; 0
 */
public record HedgeBudget(double ratio, int minPerWindow, Duration window) {
    public HedgeBudget {
        if (!(ratio >= 0 && ratio <= 1) || minPerWindow < 0 || window == null || window.isZero()
                || window.isNegative()) {
            throw new IllegalArgumentException("hedge budget needs 0 <= ratio <= 1, min_per_window >= 0, window > 0");
        }
    }

    /** 5 % of requests, at least 3 hedges, over 60 s. */
    public static HedgeBudget defaults() {
        return new HedgeBudget(0.05, 3, Duration.ofSeconds(60));
    }
}
