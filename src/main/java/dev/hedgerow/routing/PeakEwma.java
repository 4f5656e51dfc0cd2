package dev.hedgerow.routing;

/**
 * <b>Peak EWMA</b> latency (Finagle's {@code PeakEwma}, tower's {@code peak_ewma}), the measure behind Kong's
 * {@code lowest_latency}: a sample above the current cost replaces it at once (the peak, so a route that turns
 * slow is avoided immediately); a sample below pulls the cost toward it with weight
 * {@code 1 − e^(−Δt/τ)}, where Δt is the time since the previous sample, so recovery is judged by elapsed time
 * rather than by request count. Between samples the reported {@link #value(long)} decays toward 0 with the same
 * τ, as Finagle's {@code get()} does: an idle route looks cheaper over time until it is tried and measured again,
 * so no route is written off forever. A route never measured is worth 0 (tried first) and
 * {@link #isMeasured()} says so.
 *
 * <p>For streams feed it time to first token or time per output token, never a whole stream's duration.
 * {@code nowMillis} must be a clock the whole fleet shares (epoch millis, or Redis {@code TIME}) because the
 * stamp is kept in the shared store; a stamp in the future (clock skew) counts as no time elapsed.
 *
 * @param tauMillis   the decay time constant τ (Finagle's default is 10 s)
 * @param cost        the latency estimate at {@code stampMillis}, in ms
 * @param stampMillis when the last sample was taken
 * @param count       samples taken so far
 *
 * Immutable value; thread-safe. Encoded as {@code pe1;cost;stamp;count} (τ comes from config).
 */
public record PeakEwma(long tauMillis, double cost, long stampMillis, long count) {
    static final String TAG = "pe1";

    public PeakEwma {
        if (tauMillis <= 0) {
            throw new IllegalArgumentException("tau must be positive");
        }
    }

    /** A route never measured. */
    public static PeakEwma fresh(long tauMillis) {
        return new PeakEwma(tauMillis, 0, 0, 0);
    }

    public boolean isMeasured() {
        return count > 0;
    }

    /** Learns one latency sample (ms) taken at {@code nowMillis}; non-finite or negative samples are ignored. */
    public PeakEwma observe(double sampleMs, long nowMillis) {
        if (!Double.isFinite(sampleMs) || sampleMs < 0) {
            return this;
        }
        if (count == 0 || sampleMs > cost) {
            return new PeakEwma(tauMillis, sampleMs, Math.max(nowMillis, stampMillis), count + 1);
        }
        double w = weightOfHistory(nowMillis);
        return new PeakEwma(tauMillis, cost * w + sampleMs * (1 - w), Math.max(nowMillis, stampMillis), count + 1);
    }

    /**
     * Learns that a sample taken at {@code nowMillis} was at least {@code boundMs} (a censored sample: an attempt
     * cancelled before it could be measured). Taken as a sample only when it says something the estimate does not
     * assume already: the route was never measured, or the bound is above its value now; otherwise this is returned
     * unchanged. {@link #observe} is monotone in the sample, so the bound never takes the estimate above where the
     * true sample would have: above the cost it is the new peak at once, as the late sample would have been.
     */
    public PeakEwma observeAtLeast(double boundMs, long nowMillis) {
        if (!Double.isFinite(boundMs) || boundMs < 0 || (count > 0 && boundMs <= value(nowMillis))) {
            return this;
        }
        return observe(boundMs, nowMillis);
    }

    /** The estimate at {@code nowMillis}: the cost decayed toward 0 by the idle time since the last sample. */
    public double value(long nowMillis) {
        return cost * weightOfHistory(nowMillis);
    }

    /** Finagle/tower's load: {@code value × (inflight + 1)}, so a busy fast route can lose to an idle one. */
    public double load(long nowMillis, int inflight) {
        return value(nowMillis) * (Math.max(0, inflight) + 1);
    }

    private double weightOfHistory(long nowMillis) {
        long elapsed = Math.max(0, nowMillis - stampMillis);
        return Math.exp(-(double) elapsed / tauMillis);
    }

    public String encode() {
        return Codec.encode(TAG, cost, stampMillis, count);
    }

    /** The state in {@code encoded}, or {@link #fresh(long)} if it is missing or damaged. Never throws. */
    public static PeakEwma decode(String encoded, long tauMillis) {
        double[] v = Codec.decode(encoded, TAG, 3);
        if (v == null || v[0] < 0 || v[2] < 0) {
            return fresh(tauMillis);
        }
        return new PeakEwma(tauMillis, v[0], (long) v[1], (long) v[2]);
    }
}
