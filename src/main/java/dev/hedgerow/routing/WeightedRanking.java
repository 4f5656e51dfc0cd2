package dev.hedgerow.routing;

import java.util.ArrayList;
import java.util.Comparator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.function.ToIntFunction;

/**
 * The ranking that {@link LeastConnections} and {@link LowestUsage} share: the members that may take a share
 * (weight &gt; 0) by their score, best first, each run of equal scores in the smooth weighted rotation of that run's
 * own members at the cursor ({@link SmoothWeightedSequence#rotationFrom}); then the members of weight ≤ 0, rotated
 * evenly among themselves by the cursor.
 *
 * <p>Why per run, on the run's own members: when every member ties (a quiet group, nothing in flight, {@code cost}
 * with no prices), consecutive cursors then share the requests exactly by weight, as the strategies promise, and a
 * standby holds no position in the rotation. A rotation over all n positions handed a weight-0 member's turns to the
 * member after it (weights 100/100/0 split 2:1) and shared ties evenly whatever the weights (300/100/100 split
 * 1:1:1). A standby still serves, after every member with a share, because a balancer orders and never drops one.
 * Stateless; thread-safe.
 */
final class WeightedRanking {
    private WeightedRanking() {
    }

    /**
     * @param byScore orders two members of positive weight, best first; 0 is a tie. It must be a total order (runs
     *                of ties are read off the sorted list)
     * @param cursor  any counter that advances per request (the group's round-robin counter)
     */
    static List<String> rank(List<String> members, ToIntFunction<String> weight, Comparator<String> byScore,
                             long cursor) {
        Map<String, Integer> weights = new LinkedHashMap<>();
        List<String> sharing = new ArrayList<>();
        List<String> standby = new ArrayList<>();
        for (String m : members) {
            int w = weight.applyAsInt(m);
            weights.put(m, w);
            (w > 0 ? sharing : standby).add(m);
        }
        sharing.sort(byScore);   // stable: a run keeps the given order, which fixes its sequence's tie-break
        List<String> out = new ArrayList<>(members.size());
        int i = 0;
        while (i < sharing.size()) {
            int j = i + 1;
            while (j < sharing.size() && byScore.compare(sharing.get(i), sharing.get(j)) == 0) {
                j++;
            }
            if (j - i == 1) {
                out.add(sharing.get(i));
            } else {
                out.addAll(SmoothWeightedSequence.of(sharing.subList(i, j), weights::get).rotationFrom(cursor));
            }
            i = j;
        }
        int z = standby.size();
        for (int k = 0; k < z; k++) {
            out.add(standby.get((int) Math.floorMod(cursor + k, (long) z)));
        }
        return List.copyOf(out);
    }
}
