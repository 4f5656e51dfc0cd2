package dev.hedgerow.routing;

import dev.hedgerow.catalog.GroupSettings.TokensCountStrategy;
import dev.hedgerow.state.UsageSample;
import org.junit.jupiter.api.Test;

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
}
