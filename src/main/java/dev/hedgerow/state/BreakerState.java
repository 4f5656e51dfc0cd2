package dev.hedgerow.state;

/**
 * A route's breaker after an update, as the store saw it when it applied the update: total failures counted, whether
 * it is now cooling down and for how long, and how long the provider's Retry-After hold has left.
 *
 * @param holdRemainingMillis the hold left on the route after a failure write ({@link StateStore#recordFailure}); a
 *                            success write does not read the hold and reports 0
 */
public record BreakerState(long fails, boolean coolingDown, long cooldownRemainingMillis, long holdRemainingMillis) {
}
