package dev.hedgerow.routing;

import dev.hedgerow.catalog.GroupSettings.TokensCountStrategy;
import dev.hedgerow.state.UsageSample;

import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.function.Function;
import java.util.function.ToDoubleFunction;
import java.util.function.ToIntFunction;

/**
 * <b>Lowest usage</b> (Kong's {@code lowest_usage}): members ordered by the usage they served over the group's
 * sliding window, divided by their weight, ascending, so a weight-2 member takes twice the usage of a weight-1
 * member before it stops coming first. What counts as usage is the {@code tokens_count_strategy}: prompt tokens,
 * completion tokens, total tokens, or cost. Ties (for instance every member at zero after a quiet window) break by
 * a rotating cursor as in {@link LeastConnections}, so a burst of requests before any usage is recorded spreads
 * out. Members with weight ≤ 0 come last.
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
        return ranked(members, m -> {
            int w = weight.applyAsInt(m);
            return w <= 0 ? Double.POSITIVE_INFINITY : Math.max(0, measure(usage.apply(m), strategy)) / w;
        }, cursor);
    }

    /**
     * Members by their judged accuracy, highest first: unscored members (NaN) first of all, then scored ones by
     * score descending, then weight ≤ 0 last; ties (unscored members among themselves, equal scores) by the rotating
     * cursor.
     *
     * @param accuracy each member's decayed mean score (1..100), NaN when it has none yet
     */
    public static List<String> orderByAccuracy(List<String> members, ToDoubleFunction<String> accuracy,
                                               ToIntFunction<String> weight, long cursor) {
        return ranked(members, m -> {
            double a = accuracy.applyAsDouble(m);
            return weight.applyAsInt(m) <= 0 ? Double.POSITIVE_INFINITY : Double.isNaN(a) ? Double.NEGATIVE_INFINITY
                    : -a;
        }, cursor);
    }

    /** Members by {@code score}, lowest first, ties by their rotation from {@code cursor}. */
    private static List<String> ranked(List<String> members, ToDoubleFunction<String> score, long cursor) {
        int n = members.size();
        List<Entry> entries = new ArrayList<>(n);
        for (int i = 0; i < n; i++) {
            String m = members.get(i);
            entries.add(new Entry(m, score.applyAsDouble(m), (int) Math.floorMod(i - cursor, (long) n)));
        }
        entries.sort(Comparator.comparingDouble(Entry::score).thenComparingInt(Entry::rotation));
        List<String> out = new ArrayList<>(n);
        for (Entry e : entries) {
            out.add(e.member());
        }
        return List.copyOf(out);
    }

    private record Entry(String member, double score, int rotation) {
    }
}
