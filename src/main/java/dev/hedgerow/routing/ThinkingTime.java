package dev.hedgerow.routing;

/**
 * One route's thinking time on reasoning requests: the time from the first reasoning chunk to the first visible
 * content chunk, kept as an EWMA (α = {@value #ALPHA}) with an EWMA of its mean deviation (β = {@value #BETA}),
 * the first sample setting {@code mean = x, dev = x / 2}. The stall watchdog uses it to leave a model that is
 * legitimately thinking alone: {@link #allowedPauseMillis(long, double) max(floor, mean + k·dev)}, the floor while
 * unmeasured.
 *
 * @param meanMs mean thinking time
 * @param devMs  mean deviation of the thinking time
 * @param count  reasoning requests observed
 *
 * Immutable value; thread-safe. Encoded as {@code th1;mean;dev;count}.
 */
public record ThinkingTime(double meanMs, double devMs, long count) {
    public static final double ALPHA = 0.2;
    public static final double BETA = 0.25;
    static final String TAG = "th1";
    public static final ThinkingTime FRESH = new ThinkingTime(0, 0, 0);

    public boolean isMeasured() {
        return count > 0;
    }

    /**
     * Learns one reasoning request from its two instants (any shared origin, ms); ignored if visible content came
     * before the reasoning did.
     */
    public ThinkingTime observe(long firstReasoningMillis, long firstVisibleMillis) {
        return observe((double) (firstVisibleMillis - firstReasoningMillis));
    }

    /** Learns one thinking time in ms; non-finite or negative values are ignored. */
    public ThinkingTime observe(double thinkingMs) {
        if (!Double.isFinite(thinkingMs) || thinkingMs < 0) {
            return this;
        }
        if (count == 0) {
            return new ThinkingTime(thinkingMs, thinkingMs / 2, 1);
        }
        double dev = (1 - BETA) * devMs + BETA * Math.abs(thinkingMs - meanMs);
        double mean = (1 - ALPHA) * meanMs + ALPHA * thinkingMs;
        return new ThinkingTime(mean, dev, count + 1);
    }

    /** The longest reasoning pause to allow: {@code max(floor, mean + k·dev)}, the floor while unmeasured. */
    public long allowedPauseMillis(long floorMillis, double k) {
        if (count == 0) {
            return floorMillis;
        }
        return Math.max(floorMillis, (long) Math.ceil(meanMs + k * devMs));
    }

    public String encode() {
        return Codec.encode(TAG, meanMs, devMs, count);
    }

    /** The state in {@code encoded}, or {@link #FRESH} if it is missing or damaged. Never throws. */
    public static ThinkingTime decode(String encoded) {
        double[] v = Codec.decode(encoded, TAG, 3);
        if (v == null || v[0] < 0 || v[1] < 0 || v[2] < 0) {
            return FRESH;
        }
        return new ThinkingTime(v[0], v[1], (long) v[2]);
    }
}
