package dev.hedgerow.routing;

/**
 * One route's rhythm of streamed chunks, for adaptive stall detection: an EWMA of the gap between chunks and an
 * EWMA of its mean deviation, updated as Jacobson/Karels estimate TCP's round-trip time (RFC 6298):
 * {@code dev ← (1 − β)·dev + β·|gap − mean|}, then {@code mean ← (1 − α)·mean + α·gap}, with α = 1/8, β = 1/4;
 * the first sample sets {@code mean = gap, dev = gap / 2}. The stall watchdog allows a gap of
 * {@link #allowedGapMillis(long, double, double) max(floor, mean + k·dev, m·mean)}; until the route is measured it
 * allows the floor.
 *
 * <p>A stream yields hundreds of gaps: fold them into a local copy while streaming and write the result to the
 * shared store once when the stream ends.
 *
 * @param meanMs mean gap between chunks
 * @param devMs  mean deviation of the gap
 * @param count  gaps observed
 *
 * Immutable value; thread-safe. Encoded as {@code ig1;mean;dev;count}.
 */
public record InterTokenStats(double meanMs, double devMs, long count) {
    /** Stall allowance {@code max(floor, mean + K·dev, M·mean)} of the inter-chunk gap (RFC 6298's RTO uses K = 4). */
    public static final double STALL_K = 4;
    public static final double STALL_M = 3;
    public static final double ALPHA = 1.0 / 8;
    public static final double BETA = 1.0 / 4;
    static final String TAG = "ig1";
    public static final InterTokenStats FRESH = new InterTokenStats(0, 0, 0);

    public boolean isMeasured() {
        return count > 0;
    }

    /** Learns one gap between consecutive chunks; non-finite or negative gaps are ignored. */
    public InterTokenStats observe(double gapMs) {
        if (!Double.isFinite(gapMs) || gapMs < 0) {
            return this;
        }
        if (count == 0) {
            return new InterTokenStats(gapMs, gapMs / 2, 1);
        }
        double dev = (1 - BETA) * devMs + BETA * Math.abs(gapMs - meanMs);
        double mean = (1 - ALPHA) * meanMs + ALPHA * gapMs;
        return new InterTokenStats(mean, dev, count + 1);
    }

    /**
     * The longest silence to allow before calling a stream stalled: {@code max(floor, mean + k·dev, m·mean)},
     * or {@code floor} while the route is unmeasured.
     */
    public long allowedGapMillis(long floorMillis, double k, double m) {
        if (count == 0) {
            return floorMillis;
        }
        double allowed = Math.max(meanMs + k * devMs, m * meanMs);
        return Math.max(floorMillis, (long) Math.ceil(allowed));
    }

    /**
     * The silence after which a stream with this rhythm is stalled, never less than {@code floorMillis} (the
     * group's {@code stall_floor}): what the gateway's stall watchdog and the prober both judge a stream by.
     */
    public long stallGapMillis(long floorMillis) {
        return allowedGapMillis(floorMillis, STALL_K, STALL_M);
    }

    public String encode() {
        return Codec.encode(TAG, meanMs, devMs, count);
    }

    /** The state in {@code encoded}, or {@link #FRESH} if it is missing or damaged. Never throws. */
    public static InterTokenStats decode(String encoded) {
        double[] v = Codec.decode(encoded, TAG, 3);
        if (v == null || v[0] < 0 || v[1] < 0 || v[2] < 0) {
            return FRESH;
        }
        return new InterTokenStats(v[0], v[1], (long) v[2]);
    }
}
