package dev.hedgerow.routing;

import dev.hedgerow.catalog.GroupSettings.TokensCountStrategy;
import dev.hedgerow.state.UsageSample;

import java.util.Comparator;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.function.Function;
import java.util.function.ToDoubleFunction;
import java.util.function.ToIntFunction;

/**
 * <b>Lowest usage</b> (Kong's {@code lowest_usage}): members ordered by the usage they served over the group's
 * sliding window, divided by their weight, ascending, so a weight-2 member takes twice the usage of a weight-1
 * member before it stops coming first. What counts as usage is the {@code tokens_count_strategy}: prompt tokens,
 * completion tokens, total tokens, or cost. Ties (every member at zero after a quiet window, or always under
 * {@code cost} when no route has a price) follow the tied members' smooth weighted rotation at the cursor
 * ({@link WeightedRanking}), so a burst of requests before any usage is recorded, or a group that never records
 * any, is still shared by weight. Members with weight ≤ 0 take no share: they come last, rotated among themselves.
 *
 * <p>Under {@code llm_accuracy} ({@link #orderByAccuracy}) nothing is counted: members are ordered by the decayed mean
 * of the scores a judge model gave their answers, best first, and a member not yet scored comes before every scored
 * one, so each gets answers to judge. Stateless; thread-safe.
 */
public final class LowestUsage {
    private LowestUsage() {
    }

    /** The usage a sample represents under {@code strategy}. */
    public static double measure(UsageSample usage, TokensCountStrategy strategy) {
        if (usage == null) {
            return 0;
        }
        return switch (strategy) {
            case PROMPT_TOKENS -> usage.promptTokens();
            case COMPLETION_TOKENS -> usage.completionTokens();
            case TOTAL_TOKENS -> usage.totalTokens();
            case COST -> usage.cost();
            case LLM_ACCURACY -> 0; // no usage: ranked by orderByAccuracy
        };
    }

    /**
     * @param usage  each member's usage summed over the window ({@code null} counts as none)
     * @param cursor any counter that advances per request
     */
    public static List<String> order(List<String> members, Function<String, UsageSample> usage,
                                     ToIntFunction<String> weight, TokensCountStrategy strategy, long cursor) {
        return WeightedRanking.rank(members, weight, byScore(members, m -> {
            int w = weight.applyAsInt(m);
            return w <= 0 ? Double.POSITIVE_INFINITY : Math.max(0, measure(usage.apply(m), strategy)) / w;
        }), cursor);
    }

    /**
     * Members by their judged accuracy, highest first: unscored members (NaN) first of all, then scored ones by
     * score descending, then weight ≤ 0 last; ties (unscored members among themselves, equal scores) by their smooth
     * weighted rotation at the cursor, as usage ties.
     *
     * @param accuracy each member's decayed mean score (1..100), NaN when it has none yet
     */
    public static List<String> orderByAccuracy(List<String> members, ToDoubleFunction<String> accuracy,
                                               ToIntFunction<String> weight, long cursor) {
        return WeightedRanking.rank(members, weight, byScore(members, m -> {
            double a = accuracy.applyAsDouble(m);
            return Double.isNaN(a) ? Double.NEGATIVE_INFINITY : -a;
        }), cursor);
    }

    /** Lowest {@code score} first, each member's score computed once. */
    private static Comparator<String> byScore(List<String> members, ToDoubleFunction<String> score) {
        Map<String, Double> scores = new HashMap<>();
        for (String m : members) {
            scores.put(m, score.applyAsDouble(m));
        }
        return Comparator.comparingDouble(scores::get);
    }
}
