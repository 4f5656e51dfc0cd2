package dev.hedgerow.state;

/** A route's breaker after an update: total failures counted, and whether it is now cooling down. */
public record BreakerState(long fails, boolean coolingDown, long cooldownRemainingMillis) {
}
