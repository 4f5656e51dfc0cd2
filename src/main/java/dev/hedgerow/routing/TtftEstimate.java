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
}
