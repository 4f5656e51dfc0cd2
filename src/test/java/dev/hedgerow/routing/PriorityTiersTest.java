package dev.hedgerow.routing;

import org.junit.jupiter.api.Test;

import java.util.HashMap;
import java.util.List;
import java.util.Map;

import static org.junit.jupiter.api.Assertions.assertEquals;

class PriorityTiersTest {
    private static final List<String> MEMBERS = List.of("backup", "main-a", "last", "main-b");
    private static final Map<String, Integer> PRIORITY = Map.of("main-a", 1, "main-b", 1, "backup", 2, "last", 3);

    @Test
    void priorityOneIsTheTopTierAndLargerNumbersFallBack() {
        assertEquals(List.of(List.of("main-a", "main-b"), List.of("backup"), List.of("last")),
                PriorityTiers.tiers(MEMBERS, PRIORITY::get));
    }

    @Test
    void defaultPrioritiesMakeOneTier() {
        assertEquals(List.of(MEMBERS), PriorityTiers.tiers(MEMBERS, m -> 1));
    }

    @Test
    void orderListsTheTopTierBeforeFallbacks() {
        List<String> order = PriorityTiers.order(MEMBERS, PRIORITY::get, m -> 1, 0, m -> true);
        assertEquals(List.of("backup", "last"), order.subList(2, 4));
        assertEquals(List.of("main-a", "main-b"), order.subList(0, 2).stream().sorted().toList());
    }

    @Test
    void unavailableTopTierFallsToTheNextTier() {
        List<String> order = PriorityTiers.order(MEMBERS, PRIORITY::get, m -> 1, 0, m -> !m.startsWith("main"));
        assertEquals(List.of("backup", "last"), order);
    }

    @Test
    void topTierTrafficFollowsWeights() {
        Map<String, Integer> weight = Map.of("main-a", 3, "main-b", 1, "backup", 1, "last", 1);
        Map<String, Integer> firsts = new HashMap<>();
        for (long cursor = 0; cursor < 400; cursor++) {
            firsts.merge(PriorityTiers.order(MEMBERS, PRIORITY::get, weight::get, cursor, m -> true).get(0), 1,
                    Integer::sum);
        }
        assertEquals(Map.of("main-a", 300, "main-b", 100), firsts);
    }

    @Test
    void zeroWeightMembersServeLastWithinTheirTier() {
        Map<String, Integer> weight = Map.of("main-a", 1, "main-b", 0, "backup", 1, "last", 1);
        for (long cursor = 0; cursor < 4; cursor++) {
            assertEquals(List.of("main-a", "main-b", "backup", "last"),
                    PriorityTiers.order(MEMBERS, PRIORITY::get, weight::get, cursor, m -> true));
        }
        assertEquals(List.of("main-b", "backup", "last"),
                PriorityTiers.order(MEMBERS, PRIORITY::get, weight::get, 7, m -> !m.equals("main-a")));
        assertEquals(List.of("backup", "last"),
                PriorityTiers.order(MEMBERS, PRIORITY::get, weight::get, 7, m -> !m.startsWith("main")));
    }
}
