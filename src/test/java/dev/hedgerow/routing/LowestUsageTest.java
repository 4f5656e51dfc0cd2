package dev.hedgerow.routing;

import dev.hedgerow.catalog.GroupSettings.TokensCountStrategy;
import dev.hedgerow.state.UsageSample;
import org.junit.jupiter.api.Test;

import java.util.HashMap;
import java.util.List;
import java.util.Map;

import static org.junit.jupiter.api.Assertions.assertEquals;

class LowestUsageTest {
    private static final List<String> MEMBERS = List.of("a", "b", "c");
    // a: many prompt tokens, cheap; b: many completion tokens; c: expensive
    private static final Map<String, UsageSample> USAGE = Map.of(
            "a", new UsageSample(9000, 100, 0.01),
            "b", new UsageSample(1000, 5000, 0.02),
            "c", new UsageSample(2000, 2000, 0.50));

    private static List<String> order(TokensCountStrategy s) {
        return LowestUsage.order(MEMBERS, USAGE::get, m -> 1, s, 0);
    }

    @Test
    void promptTokensStrategyOrdersByPromptTokens() {
        assertEquals(List.of("b", "c", "a"), order(TokensCountStrategy.PROMPT_TOKENS));
    }

    @Test
    void completionTokensStrategyOrdersByCompletionTokens() {
        assertEquals(List.of("a", "c", "b"), order(TokensCountStrategy.COMPLETION_TOKENS));
    }

    @Test
    void totalTokensStrategyOrdersByTotalTokens() {
        assertEquals(List.of("c", "b", "a"), order(TokensCountStrategy.TOTAL_TOKENS));
    }

    @Test
    void costStrategyOrdersByCost() {
        assertEquals(List.of("a", "b", "c"), order(TokensCountStrategy.COST));
    }

    @Test
    void usageIsNormalisedByWeight() {
        // c has 4000 total tokens but weight 4 → 1000 per unit of weight, below b's 6000
        Map<String, Integer> weight = Map.of("a", 1, "b", 1, "c", 4);
        assertEquals(List.of("c", "b", "a"),
                LowestUsage.order(MEMBERS, USAGE::get, weight::get, TokensCountStrategy.TOTAL_TOKENS, 0));
        Map<String, Integer> heavyA = Map.of("a", 100, "b", 1, "c", 1);
        assertEquals("a", LowestUsage.order(MEMBERS, USAGE::get, heavyA::get, TokensCountStrategy.TOTAL_TOKENS, 0)
                .get(0));
    }

    @Test
    void unmeasuredMembersTieAndRotateWithTheCursor() {
        assertEquals(List.of("b", "c", "a"),
                LowestUsage.order(MEMBERS, m -> null, m -> 1, TokensCountStrategy.TOTAL_TOKENS, 1));
        assertEquals(List.of("c", "a", "b"),
                LowestUsage.order(MEMBERS, m -> UsageSample.ZERO, m -> 1, TokensCountStrategy.COST, 2));
    }

    @Test
    void zeroWeightMembersComeLast() {
        Map<String, Integer> weight = Map.of("a", 1, "b", 1, "c", 0);
        assertEquals("c", LowestUsage.order(MEMBERS, m -> UsageSample.ZERO, weight::get,
                TokensCountStrategy.TOTAL_TOKENS, 2).get(2));
    }

    /** How often each member comes first over the cursors {@code 0 .. n-1}, nothing used yet under cost. */
    private static Map<String, Integer> firstsAtNoCost(List<String> members, Map<String, Integer> weight, int n) {
        Map<String, Integer> out = new HashMap<>();
        for (long c = 0; c < n; c++) {
            out.merge(LowestUsage.order(members, m -> new UsageSample(500, 80, 0), weight::get,
                    TokensCountStrategy.COST, c).get(0), 1, Integer::sum);
        }
        return out;
    }

    @Test
    void costWithNoPricesSharesByWeight() {
        // no route has a price: every cost is 0 and stays 0, so the tie is the whole ranking and must follow the
        // weights (an even rotation gave 10/10/10)
        assertEquals(Map.of("a", 18, "b", 6, "c", 6), firstsAtNoCost(MEMBERS, Map.of("a", 300, "b", 100, "c", 100),
                30));
    }

    @Test
    void aWeightZeroStandbysTurnsGoToNoOneInParticular() {
        // 100/100/0 at no cost: the standby's turn went to the member after it (20/10)
        assertEquals(Map.of("a", 15, "b", 15), firstsAtNoCost(MEMBERS, Map.of("a", 100, "b", 100, "c", 0), 30));
        assertEquals(Map.of("a", 15, "c", 15), firstsAtNoCost(MEMBERS, Map.of("a", 100, "b", 0, "c", 100), 30));
    }

    // ---- llm_accuracy: the judge's scores, best first ----

    private static List<String> byAccuracy(Map<String, Double> scores, Map<String, Integer> weights, long cursor) {
        return LowestUsage.orderByAccuracy(MEMBERS, m -> scores.getOrDefault(m, Double.NaN),
                m -> weights.getOrDefault(m, 1), cursor);
    }

    @Test
    void accuracyOrdersTheBestScoredMemberFirst() {
        assertEquals(List.of("b", "c", "a"), byAccuracy(Map.of("a", 40.0, "b", 90.0, "c", 70.5), Map.of(), 0));
        assertEquals(List.of("b", "c", "a"), byAccuracy(Map.of("a", 40.0, "b", 90.0, "c", 70.5), Map.of(), 7),
                "the cursor only breaks ties");
    }

    @Test
    void accuracyPutsUnscoredMembersFirstSoEveryMemberGetsJudged() {
        assertEquals(List.of("a", "c", "b"), byAccuracy(Map.of("b", 99.0), Map.of(), 0));
        assertEquals(List.of("c", "a", "b"), byAccuracy(Map.of("b", 99.0), Map.of(), 1),
                "unscored members rotate among themselves");
    }

    @Test
    void accuracyTiesRotateWithTheCursor() {
        Map<String, Double> tied = Map.of("a", 80.0, "b", 80.0, "c", 20.0);
        assertEquals(List.of("a", "b", "c"), byAccuracy(tied, Map.of(), 0));
        assertEquals(List.of("b", "a", "c"), byAccuracy(tied, Map.of(), 1));
    }

    @Test
    void accuracyPutsWeightZeroLastWhateverItsScore() {
        assertEquals(List.of("c", "a", "b"), byAccuracy(Map.of("a", 10.0, "b", 100.0, "c", 50.0), Map.of("b", 0), 0));
        assertEquals(List.of("b", "c", "a"), byAccuracy(Map.of("b", 30.0, "c", 20.0), Map.of("a", 0), 0),
                "even unscored");
    }

    @Test
    void accuracyRotatesUnscoredMembersPastAWeightZeroStandby() {
        // a, c unscored and b a standby: the judge gets each of a and c half the answers (c took 2 of 3)
        Map<String, Integer> firsts = new HashMap<>();
        for (long c = 0; c < 30; c++) {
            firsts.merge(byAccuracy(Map.of(), Map.of("b", 0), c).get(0), 1, Integer::sum);
        }
        assertEquals(Map.of("a", 15, "c", 15), firsts);
    }
}
