package dev.hedgerow.routing;

/**
 * One route's learned time to first token as a function of prompt size (Keln's "predicted TTFT for your prompt
 * size"): the line {@code ttft_ms = a + b · prompt_tokens}, fitted by <b>exponentially weighted, ridge-regularised
 * least squares</b>, plus an exponentially weighted variance of the prediction error, which gives the P90 window
 * {@code mean + 1.2816 · σ} the dispatcher hedges at.
 *
 * <p>The state is the weighted sufficient statistics of the samples (Σw, Σwx, Σwx², Σwy, Σwxy); every older
 * sample weighs λ times less (so the fit follows a route that speeds up or slows down), and the prior enters as a
 * ridge penalty pulling {@code a} and {@code b} towards the {@link Prior}'s values with weights {@value #RIDGE_A}
 * and {@value #RIDGE_B} (in samples, with prompt size in thousands of tokens). The line is solved exactly from
 * these sums on every step, so it is the best fit of the samples it remembers, whatever order they came in: two
 * samples of different size determine a route's slope, which matters because {@code auto} samples a route mostly
 * at the prompt sizes it is fastest for. This replaced recursive least squares, whose projection of a negative slope
 * onto zero left its covariance inconsistent with the line: a route sampled three times could settle on a slope six
 * times too steep and never be picked, or explored, again. Non-negativity is a constrained solve: when the
 * unconstrained optimum has a negative slope (or intercept) the best line with that parameter at zero is used.
 * With no forgetting of the prior, every sample at one size leaves the slope to the prior instead of winding up.
 *
 * <p>A sample far off a measured line is clipped (Huber-style): one late answer of a heavy tail must not drag the
 * line. But {@value #SHIFT_AFTER} such samples in a row off the same side are no tail: the route changed (a
 * provider that turned slow, or recovered). That sample is learnt in full and the line forgets its past (its sums
 * keep {@value #SHIFT_MEMORY} of their weight), so a route 50x slower than it was loses the pick within a few
 * requests instead of the dozens a clipped line took to follow it (a form of CUSUM change detection and restart).
 *
 * <p>An attempt cancelled without a first token (a hedge race's loser, an abandoned attempt) still saw something: its
 * first token would have taken at least as long as it waited. {@link #updateAtLeast} learns that censored sample, only
 * ever upwards, so a route that turned slow while hedges kept winning against it learns that it did, instead of
 * being picked first, and hedged, forever.
 *
 * <p>A route never measured predicts from its {@link Prior}. State is an immutable value: {@link #update} returns
 * a new one; {@link #encode()} / {@link #decode(String, Prior)} move it through the shared store, and decoding
 * anything damaged (or the older {@code t1} encoding) yields the prior rather than throwing; the {@code t2} encoding
 * (before outliers in a row were kept) reads as a line with none. Thread-safe.
 */
public final class TtftPredictor {
    /** The standard normal 90th percentile. */
    public static final double Z90 = 1.2816;
    static final String TAG = "t3";
    /** The encoding before {@link #outliers} was kept: read as a line with no outliers in a row. */
    static final String TAG_V2 = "t2";
    /** Clipped samples in a row off the same side of the line that make a shift rather than a tail. */
    static final int SHIFT_AFTER = 3;
    /** The share of their weight the line's sums keep when a shift is detected. */
    static final double SHIFT_MEMORY = 0.1;
    private static final double KTOK = 1000.0;
    private static final double MIN_CLIP_MS = 50;
    /** Ridge weight of the prior intercept, in samples: the first sample all but sets it. */
    static final double RIDGE_A = 0.01;
    /** Ridge weight of the prior slope, in samples at one thousand tokens. */
    static final double RIDGE_B = 1.0;
    /**
     * The line counts as measured at a prompt size while its {@link #uncertainty} there is at most this: about one
     * sample's worth of information at that size, or more.
     */
    static final double MEASURED_UNCERTAINTY = 1.0;

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

    private final Prior prior;
    // exponentially weighted sums over the samples (x in thousands of tokens, y in ms)
    private final double s0;
    private final double s1;
    private final double s2;
    private final double t0;
    private final double t1;
    private final double variance;
    private final long samples;
    /** Clipped samples in a row: positive above the line, negative below, 0 after one on it. */
    private final int outliers;
    // the line solved from the sums and the prior
    private final double a;      // ms
    private final double bk;     // ms per 1000 tokens

    private TtftPredictor(Prior prior, double s0, double s1, double s2, double t0, double t1, double variance,
                          long samples, int outliers) {
        this.prior = prior;
        this.s0 = s0;
        this.s1 = s1;
        this.s2 = s2;
        this.t0 = t0;
        this.t1 = t1;
        this.variance = variance;
        this.samples = samples;
        this.outliers = outliers;
        double m00 = s0 + RIDGE_A;
        double m01 = s1;
        double m11 = s2 + RIDGE_B;
        double r0 = t0 + RIDGE_A * prior.interceptMs();
        double r1 = t1 + RIDGE_B * prior.slopeMsPerToken() * KTOK;
        double det = m00 * m11 - m01 * m01;
        double na = (m11 * r0 - m01 * r1) / det;
        double nb = (m00 * r1 - m01 * r0) / det;
        if (nb < 0) {            // best line with a flat slope
            nb = 0;
            na = r0 / m00;
        } else if (na < 0) {     // best line through the origin
            na = 0;
            nb = r1 / m11;
        }
        this.a = Math.max(0, na);
        this.bk = Math.max(0, nb);
    }

    /** The state of a route never measured. */
    public static TtftPredictor fresh(Prior prior) {
        return new TtftPredictor(prior, 0, 0, 0, 0, 0, prior.spreadMs() * prior.spreadMs(), 0, 0);
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
     * How uncertain the line is at this prompt size: {@code φᵀM⁻¹φ} for the regressor {@code φ = (1, x)} and the
     * regularised normal matrix {@code M} (the prediction's variance is this times the noise variance). About
     * {@code 1/n} where {@code n} samples of similar size were seen; large for sizes far from every sample (a route
     * measured only on short prompts knows little about long ones), and {@code 1/}{@value #RIDGE_A}{@code  + x²} for
     * a route never measured.
     */
    public double uncertainty(long promptTokens) {
        double x = x(promptTokens);
        double m00 = s0 + RIDGE_A;
        double m11 = s2 + RIDGE_B;
        double det = m00 * m11 - s1 * s1;
        return Math.max(0, (m11 - 2 * s1 * x + m00 * x * x) / det);
    }

    /**
     * Learns one measured TTFT. A sample that is not a finite, non-negative number is ignored (this state is
     * returned as is).
     */
    public TtftPredictor update(long promptTokens, double ttftMs) {
        if (!Double.isFinite(ttftMs) || ttftMs < 0) {
            return this;
        }
        return step(promptTokens, ttftMs, false);
    }

    /**
     * Learns a <b>censored</b> sample: a first token that had not come after {@code waitedMs} (an attempt that lost
     * a hedge race, or was abandoned, with no first token), so the route's time for this prompt was at least that.
     * Where the line already predicts at least {@code waitedMs} for this size, that says nothing and this state is
     * returned as is. Above it, {@code waitedMs} is learnt as a sample, clipped off the line as any sample is (a
     * heavy tail's slow loser nudges a fast route, it does not drag it) and counted toward the shift rule when
     * clipped: a route whose attempts keep losing races far above its line has changed, as one whose answers keep
     * coming late has. It can only move the prediction here up: the mean for this size never falls, and the spread
     * is left as it is (it is the spread of answers, and it sets the hedge window: the losers of a heavy tail must
     * not widen it, or every later hedge would fire later), so the P90 moves with the mean. One that falls inside
     * the clip leaves the count of outliers in a row above the line as it was (the true time may have been one). A
     * value that is not a finite, non-negative number is ignored.
     */
    public TtftPredictor updateAtLeast(long promptTokens, double waitedMs) {
        if (!Double.isFinite(waitedMs) || waitedMs < 0 || waitedMs <= predict(promptTokens).meanMs()) {
            return this;
        }
        TtftPredictor next = step(promptTokens, waitedMs, true);
        return next.predict(promptTokens).meanMs() < predict(promptTokens).meanMs() ? this : next;
    }

    private TtftPredictor step(long promptTokens, double ttftMs, boolean censored) {
        double lambda = prior.forgetting();
        double x1 = x(promptTokens);
        double predicted = a + bk * x1;
        double rawError = ttftMs - predicted;   // a-priori error: what the prediction actually missed by
        // Huber-style robustness: once a few samples are in, an error beyond 3 predictive standard deviations is
        // clipped to that size, so a heavy-tail sample (a request 10x slower than usual) nudges the line and the
        // spread instead of dragging them. Only where the line has been measured (about a sample's worth of
        // information at this size or more): far from every sample so far the error is what the line does not
        // know yet (a slope never learnt; the noise spread says nothing of it), so it is learnt in full. Clipped
        // there, a route probed on standard prompts took some twenty long ones to be predicted for them.
        double u = uncertainty(promptTokens);
        double clip = Math.max(3 * Math.sqrt(variance), MIN_CLIP_MS) * Math.sqrt(1 + u);
        boolean outlier = samples >= 5 && u <= MEASURED_UNCERTAINTY && Math.abs(rawError) > clip;
        int side = outlier ? (rawError > 0 ? 1 : -1) : 0;
        int inRow = side == 0 ? (censored ? Math.max(0, outliers) : 0)
                : Integer.signum(outliers) == side ? outliers + side : side;
        boolean shift = Math.abs(inRow) >= SHIFT_AFTER;
        double error = outlier && !shift ? side * clip : rawError;
        double y = predicted + error;           // ≥ 0: a clipped error is above the raw one, and ttft ≥ 0
        // a shift: the route is no longer the one the past samples measured
        double keep = shift ? lambda * SHIFT_MEMORY : lambda;

        double n0 = keep * s0 + 1;
        double n1 = keep * s1 + x1;
        double n2 = keep * s2 + x1 * x1;
        double m0 = keep * t0 + y;
        double m1 = keep * t1 + x1 * y;
        // Error variance. The first two samples' errors are against a line that did not exist yet (the prior's
        // guess, then a line through one point) and say nothing about the route's spread: the prior spread stands
        // until the line has two samples. From then on the errors are averaged (the first replaces the prior, so
        // a route is not judged by a guess for longer than it takes to measure it), exponentially weighted once
        // about 1/(1-λ) are in.
        double nvar = variance;
        if (samples >= 2) {
            double w = Math.max(1 - lambda, 1.0 / (samples - 1));
            // an a-priori error's variance is the noise's times (1 + u): divided by it, an error the line could
            // not have known (far from its samples) does not pass for noise and widen every window
            nvar = (1 - w) * variance + w * error * error / (1 + u);
        }
        if (censored || shift) {
            // The spread is that of answers, and it sets the hedge window: a loser's error fed to it widened the
            // window of a fast route with a heavy tail at every tail, and later hedges rescued that tail later.
            // Nor is a shift's error spread: it is the distance between two lines. Learnt as spread it made the
            // window some 600 ms wide after a fast route's few slow answers, and its recovery's samples then fell
            // inside the clip of that spread, never made a shift back, and were followed only by forgetting: 43
            // samples to predict the route fast again, 125 more for its window (found by hunt10).
            nvar = variance;
        }
        if (!Double.isFinite(n2 + m0 + m1 + nvar)) {
            return this;
        }
        return new TtftPredictor(prior, n0, n1, n2, m0, m1, nvar, samples + 1, inRow);
    }

    /**
     * {@code t3;Σw;Σwx;Σwx²;Σwy;Σwxy;variance;samples;outliers} (x in thousands of tokens, y in ms; outliers the
     * clipped samples in a row, signed by side).
     */
    public String encode() {
        return Codec.encode(TAG, s0, s1, s2, t0, t1, variance, samples, outliers);
    }

    /** The state in {@code encoded}, or {@link #fresh(Prior)} if it is missing or damaged. Never throws. */
    public static TtftPredictor decode(String encoded, Prior prior) {
        double[] v = Codec.decode(encoded, TAG, 8);
        if (v == null) {
            double[] v2 = Codec.decode(encoded, TAG_V2, 7);
            v = v2 == null ? null : java.util.Arrays.copyOf(v2, 8);
        }
        // weights, sizes and times are never negative, and (Cauchy-Schwarz) (Σwx)² ≤ Σw·Σwx²
        if (v == null || v[0] < 0 || v[1] < 0 || v[2] < 0 || v[3] < 0 || v[4] < 0 || v[5] < 0 || v[6] < 0
                || v[1] * v[1] > v[0] * v[2] * (1 + 1e-9) + 1e-12 || v[7] != Math.rint(v[7])
                || Math.abs(v[7]) > 1_000_000) {
            return fresh(prior);
        }
        return new TtftPredictor(prior, v[0], v[1], v[2], v[3], v[4], v[5], (long) v[6], (int) v[7]);
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
