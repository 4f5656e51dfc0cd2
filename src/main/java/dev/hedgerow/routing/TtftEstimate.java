package dev.hedgerow.routing;

/**
 * A route's predicted time to first token for one prompt size: mean and P90 in milliseconds.
 *
 * @param uncertainty the predictor's uncertainty at this prompt size ({@link TtftPredictor#uncertainty}), infinite
 *                    for a route never measured; the auto strategy explores routes whose prediction is uncertain
 */
public record TtftEstimate(double meanMs, double p90Ms, boolean measured, double uncertainty) {
    public static final TtftEstimate UNKNOWN = new TtftEstimate(1000, 2000, false);

    public TtftEstimate(double meanMs, double p90Ms, boolean measured) {
        this(meanMs, p90Ms, measured, measured ? 0 : Double.POSITIVE_INFINITY);
    }

    /**
     * Whether the route's first-token times are measured at about this prompt size (about one sample's worth of
     * information here, or more), not only extrapolated from other sizes or assumed.
     */
    public boolean knownAtThisSize() {
        return measured && uncertainty <= TtftPredictor.MEASURED_UNCERTAINTY;
    }

    /**
     * The optimistic end of what this route may truly take for this prompt size: the mean less two standard
     * deviations of the line's own estimate there ({@code σ · √uncertainty}, σ being the spread behind the P90);
     * {@code -∞} for a route never measured. A route whose optimistic end is below another's mean might be the
     * faster one, and is worth a sample.
     */
    public double optimisticMs() {
        if (!measured || !Double.isFinite(uncertainty)) {
            return Double.NEGATIVE_INFINITY;
        }
        double sigma = Math.max(0, p90Ms - meanMs) / TtftPredictor.Z90;
        return meanMs - 2 * sigma * Math.sqrt(Math.max(0, uncertainty));
    }
}
