package dev.hedgerow.routing;

import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.function.Predicate;
import java.util.function.ToIntFunction;

/**
 * <b>Priority groups</b> (Kong's {@code priority}): members grouped into tiers by their route {@code priority},
 * where <b>1 is the top tier and larger numbers are fallbacks</b> (priority 2 serves only when no priority-1
 * member can, and so on; 0 or negative numbers would rank above 1). This matches the route default
 * {@code priority: 1}: a group that sets no priorities is one tier. Within a tier, members are ordered by
 * {@link SmoothWeightedSequence} at the group's cursor, so a tier's traffic follows its weights; members with
 * weight ≤ 0 take no share of it but still serve, after their tier's other members and before the next tier (as
 * every strategy keeps a zero-weight member as a last resort; dropping one would leave a request with a healthy
 * route to fail). Stateless; thread-safe.
 */
public final class PriorityTiers {
    private PriorityTiers() {
    }

    /** Members grouped by priority number ascending (top tier first), each tier in the given order. */
    public static <T> List<List<T>> tiers(List<T> members, ToIntFunction<? super T> priority) {
        Map<Integer, List<T>> byPriority = new TreeMap<>();
        for (T m : members) {
            byPriority.computeIfAbsent(priority.applyAsInt(m), p -> new ArrayList<>()).add(m);
        }
        List<List<T>> out = new ArrayList<>(byPriority.size());
        for (List<T> tier : byPriority.values()) {
            out.add(List.copyOf(tier));
        }
        return List.copyOf(out);
    }

    /**
     * The full attempt order: the top tier's available members (smooth weighted round-robin at {@code cursor},
     * then by weight descending, then its members of weight ≤ 0 in the given order), then the next tier's, and so
     * on.
     */
    public static List<String> order(List<String> members, ToIntFunction<String> priority,
                                     ToIntFunction<String> weight, long cursor, Predicate<String> available) {
        List<String> out = new ArrayList<>();
        for (List<String> tier : tiers(members, priority)) {
            out.addAll(SmoothWeightedSequence.of(tier, weight).orderFrom(cursor, available));
            for (String m : tier) {
                if (weight.applyAsInt(m) <= 0 && available.test(m)) {
                    out.add(m);
                }
            }
        }
        return List.copyOf(out);
    }
}
