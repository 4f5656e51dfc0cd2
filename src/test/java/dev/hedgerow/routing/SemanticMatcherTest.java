package dev.hedgerow.routing;

import dev.hedgerow.routing.SemanticMatcher.Candidate;
import dev.hedgerow.routing.SemanticMatcher.Match;
import org.junit.jupiter.api.Test;

import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

class SemanticMatcherTest {
    private static final float[] CODE = {1, 0, 0};
    private static final float[] MATH = {0, 1, 0};
    private static final float[] CHAT = {0, 0, 1};
    private static final String CODE_DESC = "writes and reviews code";

    private static final List<Candidate> CANDIDATES = List.of(
            new Candidate("chat", "small talk", CHAT, 1),
            new Candidate("coder-1", CODE_DESC, CODE, 1),
            new Candidate("math", "solves maths", MATH, 1),
            new Candidate("coder-2", CODE_DESC, CODE, 1));

    @Test
    void bestMatchIsTheMostSimilarDescriptionAboveThreshold() {
        Match m = SemanticMatcher.match(new float[]{0.1f, 0.9f, 0.1f}, CANDIDATES, 0.5, 0);
        assertEquals(Optional.of("math"), m.best());
        assertTrue(m.bestSimilarity() > 0.9);
    }

    @Test
    void noMatchBelowThresholdButTheOrderIsStillGiven() {
        Match m = SemanticMatcher.match(new float[]{1, 1, 1}, CANDIDATES, 0.8, 0);
        assertEquals(Optional.empty(), m.best());
        assertEquals(4, m.order().size());
    }

    @Test
    void membersWithIdenticalDescriptionsRoundRobinWithTheCursor() {
        float[] prompt = {0.9f, 0.1f, 0.2f};
        Map<String, Integer> firsts = new HashMap<>();
        for (long cursor = 0; cursor < 10; cursor++) {
            Match m = SemanticMatcher.match(prompt, CANDIDATES, 0.5, cursor);
            firsts.merge(m.best().orElseThrow(), 1, Integer::sum);
            assertEquals(List.of("coder-1", "coder-2"), m.order().subList(0, 2).stream().sorted().toList());
        }
        assertEquals(Map.of("coder-1", 5, "coder-2", 5), firsts);
    }

    @Test
    void otherMembersFollowBySimilarityDescending() {
        Match m = SemanticMatcher.match(new float[]{0.9f, 0.1f, 0.3f}, CANDIDATES, 0.5, 0);
        assertEquals(List.of("chat", "math"), m.order().subList(2, 4));
    }

    @Test
    void weightsShapeTheRoundRobinAmongEquivalentMembers() {
        List<Candidate> weighted = List.of(new Candidate("big", CODE_DESC, CODE, 3),
                new Candidate("small", CODE_DESC, CODE, 1));
        Map<String, Integer> firsts = new HashMap<>();
        for (long cursor = 0; cursor < 8; cursor++) {
            firsts.merge(SemanticMatcher.match(CODE, weighted, 0.5, cursor).best().orElseThrow(), 1, Integer::sum);
        }
        assertEquals(Map.of("big", 6, "small", 2), firsts);
    }

    @Test
    void membersThatCannotBeComparedComeLastAndNeverMatch() {
        List<Candidate> c = List.of(new Candidate("nodesc", null, null, 1),
                new Candidate("wrongdim", "other", new float[]{1, 0}, 1),
                new Candidate("chat", "small talk", CHAT, 1));
        Match m = SemanticMatcher.match(new float[]{1, 0, 0}, c, -1, 0);
        assertEquals(List.of("chat", "nodesc", "wrongdim"), m.order());
        assertEquals(Optional.of("chat"), m.best());
        assertEquals(Optional.empty(), SemanticMatcher.match(CODE, c.subList(0, 2), -1, 0).best());
    }
}
