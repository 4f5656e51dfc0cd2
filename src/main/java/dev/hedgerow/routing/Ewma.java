package dev.hedgerow.routing;

/**
 * A plain exponentially weighted moving average, by sample count: {@code value ← (1 − α)·value + α·sample}, the
 * first sample taken as is. This is Trifrost's {@code least_latency} measure ("lowest EMA latency"); the
 * {@link #count()} tells a route never measured (which such a strategy should try first) from a fast one.
 *
 * @param alpha weight of a new sample, in (0, 1]
 * @param value the average (0 while {@code count == 0})
 * @param count samples taken so far
 *
 * Immutable value; thread-safe. Encoded as {@code e1;value;count} (α comes from config).
 */
public record Ewma(double alpha, double value, long count) {
    static final String TAG = "e1";

    public Ewma {
        if (!(alpha > 0 && alpha <= 1)) {
            throw new IllegalArgumentException("alpha must be in (0, 1]");
        }
    }

    public static Ewma fresh(double alpha) {
        return new Ewma(alpha, 0, 0);
    }

    public boolean isMeasured() {
        return count > 0;
    }

    /** Learns one sample; non-finite samples are ignored. */
    public Ewma observe(double sample) {
        if (!Double.isFinite(sample)) {
            return this;
        }
        double next = count == 0 ? sample : value + alpha * (sample - value);
        return new Ewma(alpha, next, count + 1);
    }

    public String encode() {
        return Codec.encode(TAG, value, count);
    }

    /** The state in {@code encoded}, or {@link #fresh(double)} if it is missing or damaged. Never throws. */
    public static Ewma decode(String encoded, double alpha) {
        double[] v = Codec.decode(encoded, TAG, 2);
        if (v == null || v[1] < 0) {
            return fresh(alpha);
        }
        return new Ewma(alpha, v[0], (long) v[1]);
    }
}
