package dev.hedgerow.routing;

/** A route's predicted time to first token for one prompt size: mean and P90 in milliseconds. */
public record TtftEstimate(double meanMs, double p90Ms, boolean measured) {
    public static final TtftEstimate UNKNOWN = new TtftEstimate(1000, 2000, false);
}
