package dev.hedgerow.routing;

import org.junit.jupiter.api.Test;

import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

class RendezvousHashTest {
    private static final int KEYS = 10_000;
    private static final List<String> MEMBERS = List.of("r1", "r2", "r3", "r4", "r5");

    private static String top(String key, List<String> members) {
        return RendezvousHash.rank(key, members, m -> 1).get(0);
    }

    @Test
    void rankingIsDeterministicAndCoversEveryMember() {
        List<String> a = RendezvousHash.rank("user-42", MEMBERS, m -> 1);
        assertEquals(a, RendezvousHash.rank("user-42", List.of("r5", "r4", "r3", "r2", "r1"), m -> 1));
        assertEquals(5, a.size());
        assertEquals(MEMBERS.size(), a.stream().distinct().count());
    }

    @Test
    void whenAMemberLeavesOnlyItsKeysMove() {
        List<String> without = new ArrayList<>(MEMBERS);
        without.remove("r3");
        int moved = 0;
        int owned = 0;
        for (int i = 0; i < KEYS; i++) {
            String key = "session-" + i;
            String before = top(key, MEMBERS);
            String after = top(key, without);
            if (before.equals("r3")) {
                owned++;
                assertEquals(RendezvousHash.rank(key, MEMBERS, m -> 1).get(1), after, "moves to its runner-up");
            } else {
                assertEquals(before, after, key + " must not move");
            }
            if (!before.equals(after)) {
                moved++;
            }
        }
        assertEquals(owned, moved);
        assertEquals(KEYS / 5.0, owned, KEYS * 0.02);
    }

    @Test
    void whenAMemberJoinsOnlyKeysItWinsMove() {
        List<String> with = new ArrayList<>(MEMBERS);
        with.add("r6");
        for (int i = 0; i < KEYS; i++) {
            String key = "session-" + i;
            String after = top(key, with);
            if (!after.equals("r6")) {
                assertEquals(top(key, MEMBERS), after);
            }
        }
    }

    @Test
    void distributionFollowsWeights() {
        Map<String, Integer> weights = Map.of("a", 1, "b", 2, "c", 3, "d", 4);
        Map<String, Integer> wins = new HashMap<>();
        for (int i = 0; i < KEYS; i++) {
            wins.merge(RendezvousHash.rank("k" + i, List.of("a", "b", "c", "d"), weights::get).get(0), 1,
                    Integer::sum);
        }
        for (var e : weights.entrySet()) {
            assertEquals(KEYS * e.getValue() / 10.0, wins.getOrDefault(e.getKey(), 0), KEYS * 0.02, e.getKey());
        }
    }

    @Test
    void zeroWeightMembersRankLast() {
        for (int i = 0; i < 200; i++) {
            List<String> r = RendezvousHash.rank("k" + i, List.of("off", "a", "b"), m -> m.equals("off") ? 0 : 1);
            assertEquals("off", r.get(2));
        }
    }

    @Test
    void keyAndMemberBoundariesDoNotCollide() {
        assertTrue(RendezvousHash.hash("ab", "c") != RendezvousHash.hash("a", "bc"));
    }
}
