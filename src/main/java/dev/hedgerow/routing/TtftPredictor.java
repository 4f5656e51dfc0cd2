package dev.hedgerow.routing;

/**
 * One route's learned time to first token as a function of prompt size (Keln's "predicted TTFT for your prompt
 * size"): the line {@code ttft_ms = a + b · prompt_tokens}, fitted by <b>recursive least squares</b> with a
 * forgetting factor λ (each older sample weighs λ times less, so the fit follows a route that speeds up or slows
 * down), plus an exponentially weighted variance of the prediction error, which gives the P90 window
 * {@code mean + 1.2816 · σ} the dispatcher hedges at.
 *
 * <p>Numerics: prompt size enters as thousands of tokens so both parameters have similar scale; the inverse
 * correlation matrix {@code P} is kept symmetric, its trace never exceeds the prior's (no covariance wind-up when
 * every sample has the same size) and its diagonal never falls below a small floor (adaptation never stops).
 * Intercept and slope are projected to be ≥ 0 after each step and predictions are clamped to ≥ 0.
 *
 * <p>A route never measured predicts from its {@link Prior}. State is an immutable value: {@link #update} returns
 * a new one; {@link #encode()} / {@link #decode(String, Prior)} move it through the shared store, and decoding
 * anything damaged yields the prior rather than throwing. Thread-safe (immutable).
 */
public final class TtftPredictor {
    /** The standard normal 90th percentile. */
    public static final double Z90 = 1.2816;
    static final String TAG = "t1";
    private static final double KTOK = 1000.0;
    private static final double P_FLOOR = 1e-9;
    private static final double MIN_CLIP_MS = 50;

    /**
     * What is assumed of a route before its first sample, and how fast it forgets.
     *
     * @param interceptMs     prior {@code a}: TTFT of an empty prompt
     * @param slopeMsPerToken prior {@code b}: added TTFT per prompt token (prefill speed)
     * @param spreadMs        prior σ of the prediction error (the P90 window is {@code 1.2816 · spreadMs} wide)
     * @param forgetting      λ in (0, 1]; 0.98 remembers about the last 50 samples
     */
    public record Prior(double interceptMs, double slopeMsPerToken, double spreadMs, double forgetting) {
        public Prior {
            if (!(interceptMs >= 0) || !(slopeMsPerToken >= 0) || !(spreadMs >= 0)
                    || !(forgetting > 0 && forgetting <= 1)) {
                throw new IllegalArgumentException("prior needs a, b, spread >= 0 and 0 < forgetting <= 1");
            }
        }

        /** 1 s plus 5 ms per thousand tokens, σ 1 s, λ 0.98. */
        public static Prior defaults() {
            return new Prior(1000, 0.005, 1000, 0.98);
        }
    }

    /** A prediction for one prompt size; {@code p90Ms ≥ meanMs ≥ 0}. */
    public record Prediction(double meanMs, double p90Ms) {
    }

    // Prior weight of each parameter (P0 diagonal): the intercept is learnt from the first sample, the slope
    // needs samples of different sizes before it moves far from the prior.
    private static final double P0_A = 100;
    private static final double P0_B = 1;

    private final Prior prior;
    private final double a;      // ms
    private final double bk;     // ms per 1000 tokens
    private final double p00;
    private final double p01;
    private final double p11;
    private final double variance;
    private final long samples;

    private TtftPredictor(Prior prior, double a, double bk, double p00, double p01, double p11, double variance,
                          long samples) {
        this.prior = prior;
        this.a = a;
        this.bk = bk;
        this.p00 = p00;
        this.p01 = p01;
        this.p11 = p11;
        this.variance = variance;
        this.samples = samples;
    }

    /** The state of a route never measured. */
    public static TtftPredictor fresh(Prior prior) {
        return new TtftPredictor(prior, prior.interceptMs(), prior.slopeMsPerToken() * KTOK, P0_A, 0, P0_B,
                prior.spreadMs() * prior.spreadMs(), 0);
    }

    public Prior prior() {
        return prior;
    }

    /** Samples learnt from (0 = only the prior speaks). */
    public long samples() {
        return samples;
    }

    public double interceptMs() {
        return a;
    }

    public double slopeMsPerToken() {
        return bk / KTOK;
    }

    /** σ of the prediction error, in ms. */
    public double sigmaMs() {
        return Math.sqrt(variance);
    }

    /** Expected and P90 TTFT for a prompt of this many tokens (negative counts as 0). */
    public Prediction predict(long promptTokens) {
        double mean = Math.max(0, a + bk * x(promptTokens));
        return new Prediction(mean, mean + Z90 * Math.sqrt(Math.max(0, variance)));
    }

    /**
     * How uncertain the line is at this prompt size: {@code φᵀPφ} for the regressor {@code φ = (1, x)}, the RLS
     * predictive-variance factor (the prediction's variance is this times the noise variance). About
     * {@code 1/n} where {@code n} samples of similar size were seen; large for sizes far from every sample (a route
     * measured only on short prompts knows little about long ones) and for a route never measured.
     */
    public double uncertainty(long promptTokens) {
        double x = x(promptTokens);
        return Math.max(0, p00 + 2 * p01 * x + p11 * x * x);
    }

    /**
     * Learns one measured TTFT. A sample that is not a finite, non-negative number is ignored (this state is
     * returned as is).
     */
    public TtftPredictor update(long promptTokens, double ttftMs) {
        if (!Double.isFinite(ttftMs) || ttftMs < 0) {
            return this;
        }
        double lambda = prior.forgetting();
        double x1 = x(promptTokens);
        double predicted = a + bk * x1;
        double rawError = ttftMs - predicted;   // a-priori error: what the prediction actually missed by
        double px0 = p00 + p01 * x1;
        double px1 = p01 + p11 * x1;
        // Huber-style robust RLS: once a few samples are in, an error beyond 3 predictive standard deviations is
        // clipped to that size, so a heavy-tail sample (a request 10x slower than usual) nudges the line and the
        // spread instead of dragging them. The predictive spread grows with x'Px, the line's own uncertainty at this
        // prompt size: at a size far from every sample so far (a slope never learnt) the clip is wide and the
        // error is learnt in full; at a well-measured size it is tight.
        double novelty = Math.max(0, px0 + px1 * x1);
        double clip = Math.max(3 * Math.sqrt(variance), MIN_CLIP_MS) * Math.sqrt(1 + novelty);
        double error = samples >= 5 ? Math.max(-clip, Math.min(clip, rawError)) : rawError;

        // RLS step for the regressor (1, x1)
        double denom = lambda + px0 + px1 * x1;
        double k0 = px0 / denom;
        double k1 = px1 / denom;
        double na = a + k0 * error;
        double nbk = bk + k1 * error;
        double n00 = (p00 - k0 * px0) / lambda;
        double n01 = (p01 - k0 * px1) / lambda;
        double n11 = (p11 - k1 * px1) / lambda;

        // keep P well-conditioned: floor the diagonal, cap the trace at the prior's, keep it positive definite
        n00 = Math.max(n00, P_FLOOR);
        n11 = Math.max(n11, P_FLOOR);
        double trace = n00 + n11;
        double maxTrace = P0_A + P0_B;
        if (trace > maxTrace) {
            double s = maxTrace / trace;
            n00 *= s;
            n01 *= s;
            n11 *= s;
        }
        double maxOff = Math.sqrt(n00 * n11) * 0.999;
        n01 = Math.max(-maxOff, Math.min(maxOff, n01));

        // physical guard: prefill never makes a prompt faster, and no TTFT is negative
        if (nbk < 0) {
            nbk = 0;
        }
        if (na < 0) {
            na = 0;
        }
        if (!Double.isFinite(na) || !Double.isFinite(nbk) || !Double.isFinite(n00 + n01 + n11)) {
            return this;
        }

        // exponentially weighted error variance; the prior spread counts as one sample so early errors settle fast
        double w = Math.max(1 - lambda, 1.0 / (samples + 2));
        double nvar = (1 - w) * variance + w * error * error;

        return new TtftPredictor(prior, na, nbk, n00, n01, n11, nvar, samples + 1);
    }

    /** {@code t1;a;b_per_ktok;p00;p01;p11;variance;samples}. */
    public String encode() {
        return Codec.encode(TAG, a, bk, p00, p01, p11, variance, samples);
    }

    /** The state in {@code encoded}, or {@link #fresh(Prior)} if it is missing or damaged. Never throws. */
    public static TtftPredictor decode(String encoded, Prior prior) {
        double[] v = Codec.decode(encoded, TAG, 7);
        if (v == null || v[0] < 0 || v[1] < 0 || v[2] <= 0 || v[4] <= 0 || v[2] * v[4] - v[3] * v[3] <= 0
                || v[5] < 0 || v[6] < 0) {
            return fresh(prior);
        }
        return new TtftPredictor(prior, v[0], v[1], v[2], v[3], v[4], v[5], (long) v[6]);
    }

    private static double x(long promptTokens) {
        return Math.max(0, promptTokens) / KTOK;
    }

    @Override
    public String toString() {
        return "TtftPredictor[a=" + a + "ms, b=" + slopeMsPerToken() + "ms/token, sigma=" + sigmaMs()
                + "ms, samples=" + samples + "]";
    }
}
