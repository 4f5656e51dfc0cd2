package dev.hedgerow.routing;

/**
 * A route's predicted time to first token for one prompt size: mean and P90 in milliseconds, of the first visible
 * token (for a request that lets the model reason, its usual thinking time included: what the client waits for).
 *
 * @param uncertainty the predictor's uncertainty at this prompt size ({@link TtftPredictor#uncertainty}), infinite
 *                    for a route never measured; the auto strategy explores routes whose prediction is uncertain
 * @param thinkMs     of the mean and P90, the route's usual thinking time when it streams its reasoning (0 otherwise):
 *                    its first reasoning chunk comes that much sooner ({@link #firstChunkP90Ms})
 */
public record TtftEstimate(double meanMs, double p90Ms, boolean measured, double uncertainty, double thinkMs) {
    public static final TtftEstimate UNKNOWN = new TtftEstimate(1000, 2000, false);

    public TtftEstimate(double meanMs, double p90Ms, boolean measured) {
        this(meanMs, p90Ms, measured, measured ? 0 : Double.POSITIVE_INFINITY);
    }

    public TtftEstimate(double meanMs, double p90Ms, boolean measured, double uncertainty) {
        this(meanMs, p90Ms, measured, uncertainty, 0);
    }

    /**
     * The P90 of the stream's first chunk of any kind, reasoning included: a route that streams its reasoning sends its
     * first reasoning chunk before it thinks, so a first-token window (which that chunk ends) is this, not
     * {@link #p90Ms}: with the thinking time in it, a silent route was not raced for as long as the model usually
     * thinks, tens of seconds (found by hunt21).
     */
    public double firstChunkP90Ms() {
        return Math.max(0, p90Ms - thinkMs);
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
