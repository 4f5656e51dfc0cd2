package dev.hedgerow.routing;

import dev.hedgerow.catalog.GroupSettings.DistanceMetric;

import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;

/**
 * The ordering of Kong's {@code semantic} strategy: members are compared to the prompt by their description's
 * embedding under the group's {@link DistanceMetric}: the {@link Cosine cosine similarity} (higher is closer) or the
 * {@link Euclidean Euclidean distance} (lower is closer). Members with identical descriptions form one group (they
 * serve the same domain); groups rank closest first. Within a group, members are ordered by
 * {@link SmoothWeightedSequence} at the group's rotation (a weight-0 member is a standby, last), so the caller
 * round-robins among equivalent members and the weights decide who follows as fallback. The best group is a
 * <em>match</em> only if it is within the threshold: a similarity of at least it (cosine) or a distance of at most
 * it (euclidean); the full order is returned either way so the caller can decide what an unmatched prompt gets.
 *
 * <p>Members without a description or embedding, or whose embedding has another length than the prompt's, never
 * match and come last, each on its own, in the given order. Stateless; thread-safe (the embeddings are read, never
 * written).
 */
public final class SemanticMatcher {
    private SemanticMatcher() {
    }

    /** One member with its description and that description's embedding (may be {@code null}). */
    public record Candidate(String member, String description, float[] embedding, int weight) {
    }

    /**
     * @param best      the first member of the best group, if that group is within the threshold
     * @param bestScore the best group's cosine similarity or Euclidean distance, as the metric measures
     *                  ({@code NaN} when nothing could be compared)
     * @param order     every member: the best group first (rotated by the cursor), then the others closest
     *                  first, then the members that could not be compared
     */
    public record Match(Optional<String> best, double bestScore, List<String> order) {
    }

    /** As below, every group rotated at {@code cursor}. */
    public static Match match(float[] prompt, List<Candidate> candidates, DistanceMetric metric, double threshold,
                              long cursor) {
        return match(prompt, candidates, metric, threshold, group -> cursor);
    }

    /**
     * The match, the best group rotated at {@code rotation} of its members' names (joined by newlines, in the
     * candidates' order) when it is within the threshold: only a request matched to a group moves that group's
     * rotation. Every other group is ordered at position 0, by weight (its fallback order).
     */
    public static Match match(float[] prompt, List<Candidate> candidates, DistanceMetric metric, double threshold,
                              java.util.function.ToLongFunction<String> rotation) {
        // closeness: higher is closer whatever the metric (a distance is negated), so one ranking serves both
        boolean distance = metric == DistanceMetric.EUCLIDEAN;
        Map<String, Group> groups = new LinkedHashMap<>();
        List<Group> incomparable = new ArrayList<>();
        for (Candidate c : candidates) {
            double score = score(metric, prompt, c.embedding());
            double s = distance ? -score : score;
            if (Double.isNaN(s) || c.description() == null) {
                Group g = new Group();
                g.add(c, Double.NaN);
                incomparable.add(g);
                continue;
            }
            groups.computeIfAbsent(c.description(), d -> new Group()).add(c, s);
        }
        List<Group> ranked = new ArrayList<>(groups.values());
        ranked.sort((x, y) -> Double.compare(y.closeness, x.closeness));   // stable: first seen wins ties
        ranked.addAll(incomparable);

        double bestCloseness = ranked.isEmpty() ? Double.NaN : ranked.get(0).closeness;
        boolean matched = !ranked.isEmpty() && bestCloseness >= (distance ? -threshold : threshold);
        List<String> order = new ArrayList<>(candidates.size());
        for (int i = 0; i < ranked.size(); i++) {
            Group g = ranked.get(i);
            order.addAll(g.order(i == 0 && matched && g.weights.size() > 1
                    ? rotation.applyAsLong(String.join("\n", g.weights.keySet())) : 0));
        }
        Optional<String> best = matched && !order.isEmpty() ? Optional.of(order.get(0)) : Optional.empty();
        return new Match(best, distance ? -bestCloseness : bestCloseness, List.copyOf(order));
    }

    private static double score(DistanceMetric metric, float[] prompt, float[] embedding) {
        if (prompt == null || embedding == null || prompt.length != embedding.length || prompt.length == 0) {
            return Double.NaN;
        }
        return switch (metric) {
            case COSINE -> Cosine.similarity(prompt, embedding);
            case EUCLIDEAN -> Euclidean.distance(prompt, embedding);
        };
    }

    private static final class Group {
        final Map<String, Integer> weights = new LinkedHashMap<>();
        double closeness = Double.NEGATIVE_INFINITY;

        void add(Candidate c, double s) {
            weights.put(c.member(), c.weight());
            closeness = Double.isNaN(s) ? s : Math.max(closeness, s);
        }

        /**
         * Smooth weighted at {@code cursor} over the members with a weight, then the weight-0 ones (standbys, as
         * everywhere else: it counted as 1 here, and a standby took half the traffic beside a weight-1 member;
         * found by hunt27); all standbys: in the given order.
         */
        List<String> order(long cursor) {
            return weights.size() == 1 ? List.copyOf(weights.keySet())
                    : SmoothWeightedSequence.of(weights).orderWithStandbys(cursor);
        }
    }
}
