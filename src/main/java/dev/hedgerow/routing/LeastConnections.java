package dev.hedgerow.routing;

import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.function.ToIntFunction;

/**
 * Weighted <b>least connections</b> (Kong's {@code least_connections}): members ordered by
 * {@code (inflight + 1) / weight} ascending, so the member with the most spare capacity for one more request comes
 * first and a weight-2 member carries twice the in-flight requests of a weight-1 member before it loses.
 * Members whose scores tie (in-flight requests in proportion to their weights; equal weights with nothing in flight)
 * follow their smooth weighted rotation at the cursor ({@link WeightedRanking}), so equally loaded members share new
 * requests by weight instead of the first one taking them all. Members with weight ≤ 0 take no share: they hold no
 * turn in that rotation and come last, rotated among themselves. Scores compare as exact fractions. Stateless;
 * thread-safe.
 */
public final class LeastConnections {
    private LeastConnections() {
    }

    /**
     * @param inflight live in-flight requests per member, fleet-wide (negative counts as 0)
     * @param cursor   any counter that advances per request (the group's round-robin counter)
     */
    public static List<String> order(List<String> members, ToIntFunction<String> inflight,
                                     ToIntFunction<String> weight, long cursor) {
        Map<String, Long> load = new HashMap<>();
        Map<String, Integer> weights = new HashMap<>();
        for (String m : members) {
            load.put(m, Math.max(0, inflight.applyAsInt(m)) + 1L);
            weights.put(m, weight.applyAsInt(m));
        }
        // x.load / x.weight vs y.load / y.weight, cross-multiplied (the ranking compares positive weights only)
        return WeightedRanking.rank(members, weights::get,
                (x, y) -> Long.compare(load.get(x) * weights.get(y), load.get(y) * weights.get(x)), cursor);
    }
}
