package dev.hedgerow.state;

import java.util.HashMap;
import java.util.Map;
import java.util.Optional;

/**
 * What the store knows of one route at one moment.
 *
 * @param coolingDown          inside a breaker cooldown (excluded)
 * @param fails                total failures counted by the breaker
 * @param probeTaken           a half-open probe is in flight somewhere in the fleet
 * @param retryAfterMillis     remaining hold from an upstream 429 Retry-After (0 = none)
 * @param inflight             live leases (in-flight requests) across the fleet
 * @param usage                usage summed over the route's sliding window
 * @param blobs                named blobs (latency models, capacity report, verification, standing)
 */
public record RouteSnapshot(String routeId, boolean coolingDown, long cooldownRemainingMillis, long fails,
                            boolean probeTaken, long retryAfterMillis, int inflight, UsageSample usage,
                            Map<String, String> blobs) {

    public static RouteSnapshot empty(String routeId) {
        return new RouteSnapshot(routeId, false, 0, 0, false, 0, 0, UsageSample.ZERO, Map.of());
    }

    /** Out of rotation on its health: inside a breaker cooldown, or held by a provider's wait (Retry-After). */
    public boolean heldOut() {
        return coolingDown || retryAfterMillis > 0;
    }

    public Optional<String> blob(String name) {
        return Optional.ofNullable(blobs.get(name));
    }

    /** The same snapshot with other in-flight and usage figures. */
    public RouteSnapshot withLoad(int inflight, UsageSample usage) {
        return new RouteSnapshot(routeId, coolingDown, cooldownRemainingMillis, fails, probeTaken, retryAfterMillis,
                inflight, usage, blobs);
    }

    /** The same snapshot with {@code changed} blobs written over its own. */
    public RouteSnapshot withBlobs(Map<String, String> changed) {
        Map<String, String> merged = new HashMap<>(blobs);
        merged.putAll(changed);
        return new RouteSnapshot(routeId, coolingDown, cooldownRemainingMillis, fails, probeTaken, retryAfterMillis,
                inflight, usage, Map.copyOf(merged));
    }
}
