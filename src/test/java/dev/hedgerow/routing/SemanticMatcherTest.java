package dev.hedgerow.routing;

import dev.hedgerow.routing.SemanticMatcher.Candidate;
import dev.hedgerow.routing.SemanticMatcher.Match;
import org.junit.jupiter.api.Test;

import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;

import static dev.hedgerow.catalog.GroupSettings.DistanceMetric.COSINE;
import static dev.hedgerow.catalog.GroupSettings.DistanceMetric.EUCLIDEAN;
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
        Match m = SemanticMatcher.match(new float[]{0.1f, 0.9f, 0.1f}, CANDIDATES, COSINE, 0.5, 0);
        assertEquals(Optional.of("math"), m.best());
        assertTrue(m.bestScore() > 0.9);
    }

    @Test
    void noMatchBelowThresholdButTheOrderIsStillGiven() {
        Match m = SemanticMatcher.match(new float[]{1, 1, 1}, CANDIDATES, COSINE, 0.8, 0);
        assertEquals(Optional.empty(), m.best());
        assertEquals(4, m.order().size());
    }

    @Test
    void membersWithIdenticalDescriptionsRoundRobinWithTheCursor() {
        float[] prompt = {0.9f, 0.1f, 0.2f};
        Map<String, Integer> firsts = new HashMap<>();
        for (long cursor = 0; cursor < 10; cursor++) {
            Match m = SemanticMatcher.match(prompt, CANDIDATES, COSINE, 0.5, cursor);
            firsts.merge(m.best().orElseThrow(), 1, Integer::sum);
            assertEquals(List.of("coder-1", "coder-2"), m.order().subList(0, 2).stream().sorted().toList());
        }
        assertEquals(Map.of("coder-1", 5, "coder-2", 5), firsts);
    }

    @Test
    void otherMembersFollowBySimilarityDescending() {
        Match m = SemanticMatcher.match(new float[]{0.9f, 0.1f, 0.3f}, CANDIDATES, COSINE, 0.5, 0);
        assertEquals(List.of("chat", "math"), m.order().subList(2, 4));
    }

    @Test
    void weightsShapeTheRoundRobinAmongEquivalentMembers() {
        List<Candidate> weighted = List.of(new Candidate("big", CODE_DESC, CODE, 3),
                new Candidate("small", CODE_DESC, CODE, 1));
        Map<String, Integer> firsts = new HashMap<>();
        for (long cursor = 0; cursor < 8; cursor++) {
            firsts.merge(SemanticMatcher.match(CODE, weighted, COSINE, 0.5, cursor).best().orElseThrow(), 1,
                    Integer::sum);
        }
        assertEquals(Map.of("big", 6, "small", 2), firsts);
    }

    /**
     * A weight-0 member sharing a description is a standby, as everywhere else: never first while a member with a
     * weight is there, and last of its group (it counted as weight 1, and took half the traffic beside a weight-1
     * member; found by hunt27). A group of standbys only keeps the given order.
     */
    @Test
    void aWeightZeroMemberOfAGroupIsAStandby() {
        List<Candidate> group = List.of(new Candidate("standby", CODE_DESC, CODE, 0),
                new Candidate("serving", CODE_DESC, CODE, 1));
        for (long cursor = 0; cursor < 4; cursor++) {
            assertEquals(List.of("serving", "standby"),
                    SemanticMatcher.match(CODE, group, COSINE, 0.5, cursor).order());
        }
        List<Candidate> standbys = List.of(new Candidate("s1", CODE_DESC, CODE, 0),
                new Candidate("s2", CODE_DESC, CODE, 0));
        assertEquals(List.of("s1", "s2"), SemanticMatcher.match(CODE, standbys, COSINE, 0.5, 3).order());
    }

    @Test
    void membersThatCannotBeComparedComeLastAndNeverMatch() {
        List<Candidate> c = List.of(new Candidate("nodesc", null, null, 1),
                new Candidate("wrongdim", "other", new float[]{1, 0}, 1),
                new Candidate("chat", "small talk", CHAT, 1));
        Match m = SemanticMatcher.match(new float[]{1, 0, 0}, c, COSINE, -1, 0);
        assertEquals(List.of("chat", "nodesc", "wrongdim"), m.order());
        assertEquals(Optional.of("chat"), m.best());
        assertEquals(Optional.empty(), SemanticMatcher.match(CODE, c.subList(0, 2), COSINE, -1, 0).best());
    }

    // Not unit length, so the metrics disagree: NEAR is close but points elsewhere, ALIGNED points the prompt's
    // way from far off
    private static final float[] PROMPT = {1, 0};
    private static final List<Candidate> NEAR_OR_ALIGNED = List.of(
            new Candidate("aligned", "points the same way", new float[]{10, 1}, 1),
            new Candidate("near", "close by", new float[]{0.5f, 0.5f}, 1));

    @Test
    void cosineRanksTheMostAlignedDescriptionFirst() {
        Match m = SemanticMatcher.match(PROMPT, NEAR_OR_ALIGNED, COSINE, 0.5, 0);
        assertEquals(List.of("aligned", "near"), m.order());
        assertEquals(Optional.of("aligned"), m.best());
        assertEquals(10 / Math.sqrt(101), m.bestScore(), 1e-6);
    }

    @Test
    void euclideanRanksTheNearestDescriptionFirst() {
        Match m = SemanticMatcher.match(PROMPT, NEAR_OR_ALIGNED, EUCLIDEAN, 1.0, 0);
        assertEquals(List.of("near", "aligned"), m.order());
        assertEquals(Optional.of("near"), m.best());
        assertEquals(Math.sqrt(0.5), m.bestScore(), 1e-6, "the best group's distance");
    }

    @Test
    void euclideanMatchesADistanceOfAtMostTheThreshold() {
        List<Candidate> c = List.of(new Candidate("far", "five away", new float[]{3, 4}, 1),
                new Candidate("farther", "ten away", new float[]{6, 8}, 1));
        float[] origin = {0, 0};
        assertEquals(Optional.of("far"), SemanticMatcher.match(origin, c, EUCLIDEAN, 5.0, 0).best(), "5 ≤ 5");
        assertEquals(Optional.of("far"), SemanticMatcher.match(origin, c, EUCLIDEAN, 7.5, 0).best());
        Match none = SemanticMatcher.match(origin, c, EUCLIDEAN, 4.99, 0);
        assertEquals(Optional.empty(), none.best(), "5 > 4.99: no description is within reach");
        assertEquals(List.of("far", "farther"), none.order(), "the order is still given, nearest first");
        assertEquals(5.0, none.bestScore(), 1e-9);
    }

    @Test
    void euclideanRotatesIdenticalDescriptionsAndPutsIncomparableMembersLast() {
        List<Candidate> c = List.of(new Candidate("nodesc", null, null, 1),
                new Candidate("coder-1", CODE_DESC, CODE, 1),
                new Candidate("chat", "small talk", CHAT, 1),
                new Candidate("coder-2", CODE_DESC, CODE, 1));
        Map<String, Integer> firsts = new HashMap<>();
        for (long cursor = 0; cursor < 4; cursor++) {
            Match m = SemanticMatcher.match(new float[]{0.9f, 0.1f, 0}, c, EUCLIDEAN, 0.5, cursor);
            firsts.merge(m.best().orElseThrow(), 1, Integer::sum);
            assertEquals(List.of("chat", "nodesc"), m.order().subList(2, 4));
        }
        assertEquals(Map.of("coder-1", 2, "coder-2", 2), firsts);
    }
}
