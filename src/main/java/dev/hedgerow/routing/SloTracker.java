package dev.hedgerow.routing;

import dev.hedgerow.catalog.GroupSettings;

/**
 * One route's standing against Keln's speed targets (by default 50 tokens/s sustained decode and a first token
 * within 5 s, from {@link GroupSettings.Slo}). Each of the two measures keeps an EWMA of its samples and its own
 * status, with <b>hysteresis</b>:
 * <ul>
 *   <li>{@code UNKNOWN} until its first sample, which sets the EWMA; then {@code MEETS} or {@code BELOW} by it;</li>
 *   <li>{@code MEETS} falls to {@code BELOW} as soon as the EWMA misses the target;</li>
 *   <li>{@code BELOW} returns to {@code MEETS} only after {@code recoverAfter} consecutive samples that each meet
 *       the target (one miss restarts the count); the EWMA is then reseeded with the mean of that good run, so
 *       the bad history cannot flip the route straight back.</li>
 * </ul>
 * The route's {@link #status()} is {@code BELOW} if either measure is, {@code MEETS} if at least one is measured
 * and none is below, {@code UNKNOWN} otherwise. TTFT samples of prompts above {@code standardPromptMaxTokens} are
 * ignored: prefill of a huge prompt is slow on every route and says nothing about the target.
 *
 * <p>Immutable value; thread-safe. {@link #encode()} gives
 * {@code s1;dStatus;dEwma;dCount;dStreak;dStreakSum;tStatus;tEwma;tCount;tStreak;tStreakSum} (statuses as
 * 0 = UNKNOWN, 1 = MEETS, 2 = BELOW; decode in tokens/s, TTFT in ms); targets and tuning come from config.
 */
public final class SloTracker {
    static final String TAG = "s1";

    public enum Status { UNKNOWN, MEETS, BELOW }

    /**
     * @param alpha        EWMA weight of a new sample
     * @param recoverAfter consecutive good samples that return a measure from BELOW to MEETS
     */
    public record Params(double alpha, int recoverAfter) {
        public Params {
            if (!(alpha > 0 && alpha <= 1) || recoverAfter < 1) {
                throw new IllegalArgumentException("need 0 < alpha <= 1 and recoverAfter >= 1");
            }
        }

        public static Params defaults() {
            return new Params(0.3, 3);
        }
    }

    /** One measure's state; the streak (count and sum) runs over good samples while BELOW. */
    private record Measure(Status status, double ewma, long count, int streak, double streakSum) {
        static final Measure FRESH = new Measure(Status.UNKNOWN, 0, 0, 0, 0);

        /** {@code higherIsBetter} for decode speed, not for TTFT. */
        Measure observe(double x, boolean good, Params p, double target, boolean higherIsBetter) {
            double next = count == 0 ? x : ewma + p.alpha() * (x - ewma);
            boolean nextGood = higherIsBetter ? next >= target : next <= target;
            return switch (status) {
                case UNKNOWN, MEETS -> new Measure(nextGood ? Status.MEETS : Status.BELOW, next, count + 1, 0, 0);
                case BELOW -> {
                    if (!good) {
                        yield new Measure(Status.BELOW, next, count + 1, 0, 0);
                    }
                    int streak = this.streak + 1;
                    double sum = streakSum + x;
                    if (streak >= p.recoverAfter()) {
                        yield new Measure(Status.MEETS, sum / streak, count + 1, 0, 0);
                    }
                    yield new Measure(Status.BELOW, next, count + 1, streak, sum);
                }
            };
        }
    }

    private final GroupSettings.Slo slo;
    private final Params params;
    private final Measure decode;
    private final Measure ttft;

    private SloTracker(GroupSettings.Slo slo, Params params, Measure decode, Measure ttft) {
        this.slo = slo;
        this.params = params;
        this.decode = decode;
        this.ttft = ttft;
    }

    /** A route not yet measured, judged against {@code slo}. */
    public static SloTracker fresh(GroupSettings.Slo slo, Params params) {
        return new SloTracker(slo, params, Measure.FRESH, Measure.FRESH);
    }

    public static SloTracker fresh(GroupSettings.Slo slo) {
        return fresh(slo, Params.defaults());
    }

    /** Learns one sustained decode speed (tokens/s); non-finite or negative samples are ignored. */
    public SloTracker observeDecode(double tokensPerSecond) {
        if (!Double.isFinite(tokensPerSecond) || tokensPerSecond < 0) {
            return this;
        }
        double target = slo.decodeTokensPerSecond();
        return new SloTracker(slo, params,
                decode.observe(tokensPerSecond, tokensPerSecond >= target, params, target, true), ttft);
    }

    /**
     * Learns one time to first token; ignored if the prompt is larger than the standard size or the sample is not
     * a finite, non-negative number.
     */
    public SloTracker observeTtft(long promptTokens, double ttftMs) {
        if (promptTokens > slo.standardPromptMaxTokens() || !Double.isFinite(ttftMs) || ttftMs < 0) {
            return this;
        }
        double target = slo.firstToken().toMillis();
        return new SloTracker(slo, params, decode,
                ttft.observe(ttftMs, ttftMs <= target, params, target, false));
    }

    public Status status() {
        if (decode.status() == Status.BELOW || ttft.status() == Status.BELOW) {
            return Status.BELOW;
        }
        if (decode.status() == Status.MEETS || ttft.status() == Status.MEETS) {
            return Status.MEETS;
        }
        return Status.UNKNOWN;
    }

    public Status decodeStatus() {
        return decode.status();
    }

    public Status ttftStatus() {
        return ttft.status();
    }

    /** EWMA of decode speed, tokens/s (0 before the first sample). */
    public double decodeTokensPerSecond() {
        return decode.ewma();
    }

    /** EWMA of TTFT on standard-size prompts, ms (0 before the first sample). */
    public double ttftMs() {
        return ttft.ewma();
    }

    public long decodeSamples() {
        return decode.count();
    }

    public long ttftSamples() {
        return ttft.count();
    }

    public String encode() {
        return Codec.encode(TAG,
                decode.status().ordinal(), decode.ewma(), decode.count(), decode.streak(), decode.streakSum(),
                ttft.status().ordinal(), ttft.ewma(), ttft.count(), ttft.streak(), ttft.streakSum());
    }

    /** The state in {@code encoded}, or a fresh one if it is missing or damaged. Never throws. */
    public static SloTracker decode(String encoded, GroupSettings.Slo slo, Params params) {
        double[] v = Codec.decode(encoded, TAG, 10);
        if (v == null) {
            return fresh(slo, params);
        }
        Measure d = measure(v, 0);
        Measure t = measure(v, 5);
        if (d == null || t == null) {
            return fresh(slo, params);
        }
        return new SloTracker(slo, params, d, t);
    }

    public static SloTracker decode(String encoded, GroupSettings.Slo slo) {
        return decode(encoded, slo, Params.defaults());
    }

    private static Measure measure(double[] v, int at) {
        int status = (int) v[at];
        if (status != v[at] || status < 0 || status > 2 || v[at + 1] < 0 || v[at + 2] < 0 || v[at + 3] < 0
                || v[at + 3] > Integer.MAX_VALUE || (status == 0) != (v[at + 2] == 0)) {
            return null;
        }
        return new Measure(Status.values()[status], v[at + 1], (long) v[at + 2], (int) v[at + 3], v[at + 4]);
    }
}
