package dev.hedgerow.routing;

import dev.hedgerow.api.ProviderPrefs;
import dev.hedgerow.catalog.Dialect;
import dev.hedgerow.catalog.GroupSettings;
import dev.hedgerow.catalog.Provider;
import dev.hedgerow.catalog.Route;
import dev.hedgerow.state.MemoryStateStore;
import dev.hedgerow.state.RouteSnapshot;
import dev.hedgerow.state.UsageSample;
import dev.hedgerow.time.FakeTicker;
import org.junit.jupiter.api.Test;

import java.time.Clock;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

class AutoBalancerTest {
    static final GroupSettings SETTINGS = GroupSettings.defaults();
    final AutoBalancer auto = new AutoBalancer(new LearnedModels(new MemoryStateStore(new FakeTicker()),
            Clock.systemUTC(), TtftPredictor.Prior.defaults()));

    static Candidate cand(String id, double ttftMs, boolean measured, String sloBlob) {
        Map<String, String> blobs = new HashMap<>();
        if (sloBlob != null) {
            blobs.put(LearnedModels.SLO, sloBlob);
        }
        RouteSnapshot s = new RouteSnapshot("o/" + id, false, 0, 0, false, 0, 0, UsageSample.ZERO, blobs);
        Route r = new Route(id, "a", "p-" + id, "m", 1, 1, 0, Set.of(), Set.of(), Route.Price.FREE, null, null);
        return new Candidate("o/" + id, r, new Provider("p-" + id, "http://x", "k", Dialect.OPENAI, null, null), s,
                false, new TtftEstimate(ttftMs, ttftMs * 1.5, measured));
    }

    static String below() {
        return SloTracker.fresh(SETTINGS.slo()).observeDecode(10).encode();
    }

    static String meets() {
        return SloTracker.fresh(SETTINGS.slo()).observeDecode(90).encode();
    }

    static Balancer.BalanceContext ctx(long cursor, String... affinity) {
        RequestFacts f = new RequestFacts(100, null, true, false, Set.of(), Set.of(), ProviderPrefs.NONE, List.of(),
                Map.of(), "hi");
        return new Balancer.BalanceContext(f, cursor, SETTINGS, 0, Set.of(affinity), Map.of());
    }

    static List<String> ids(List<Candidate> cs) {
        return cs.stream().map(c -> c.route().id()).toList();
    }

    @Test
    void ordersByPredictedTtftFastestFirst() {
        List<Candidate> cs = List.of(cand("b", 300, true, meets()), cand("a", 100, true, meets()),
                cand("c", 150, true, meets()));
        assertEquals(List.of("a", "c", "b"), ids(auto.order(cs, ctx(1))));
    }

    @Test
    void supplyBelowTheSloComesAfterSupplyMeetingItHoweverFast() {
        List<Candidate> cs = List.of(cand("slowdecode", 20, true, below()), cand("ok", 400, true, meets()),
                cand("new", 300, true, null));
        assertEquals(List.of("new", "ok", "slowdecode"), ids(auto.order(cs, ctx(1))));
    }

    @Test
    void belowSloSupplyStillServesWhenItIsTheOnlyCapacity() {
        assertEquals(List.of("slowdecode"), ids(auto.order(List.of(cand("slowdecode", 20, true, below())),
                ctx(1))));
    }

    @Test
    void affinityWinsWithinTheSlowBarOnly() {
        List<Candidate> cs = List.of(cand("a", 100, true, meets()), cand("b", 180, true, meets()),
                cand("c", 500, true, meets()));
        assertEquals(List.of("b", "a", "c"), ids(auto.order(cs, ctx(1, "o/b"))));
        assertEquals(List.of("a", "b", "c"), ids(auto.order(cs, ctx(1, "o/c"))), "c is past 2x the fastest");
    }

    @Test
    void ofSeveralRoutesHoldingThePrefixTheFastestGoesFirst() {
        List<Candidate> cs = List.of(cand("a", 100, true, meets()), cand("b", 180, true, meets()),
                cand("c", 150, true, meets()));
        assertEquals(List.of("c", "a", "b"), ids(auto.order(cs, ctx(1, "o/b", "o/c"))));
    }

    @Test
    void affinityNeverLiftsARouteBelowTheSlo() {
        List<Candidate> cs = List.of(cand("a", 100, true, meets()), cand("b", 90, true, below()));
        assertEquals(List.of("a", "b"), ids(auto.order(cs, ctx(1, "o/b"))));
    }

    @Test
    void routesPastTheSlowBarAreMarkedAndKept() {
        List<Candidate> cs = List.of(cand("a", 100, true, meets()), cand("slow", 201, true, meets()));
        List<AutoBalancer.Placed> placed = auto.place(cs, ctx(1));
        assertEquals(AutoBalancer.Placement.FAST, placed.get(0).placement());
        assertEquals(AutoBalancer.Placement.SLOW_BAR, placed.get(1).placement());
        assertEquals("slow", placed.get(1).candidate().route().id());
    }

    @Test
    void anUnmeasuredRouteIsExploredAtAboutOneRotationPositionInTen() {
        List<Candidate> cs = List.of(cand("a", 100, true, meets()), cand("new", 1000, false, null));
        int explored = 0;
        for (long cursor = 1; cursor <= 1000; cursor++) {
            boolean first = auto.order(cs, ctx(cursor)).get(0).route().id().equals("new");
            assertEquals(AutoBalancer.explores(cursor), first);
            explored += first ? 1 : 0;
        }
        assertTrue(explored >= 70 && explored <= 130, "explored " + explored + " of 1000");
    }

    @Test
    void explorationRotatesAmongSeveralUnmeasuredRoutes() {
        List<Candidate> cs = List.of(cand("a", 100, true, meets()), cand("n1", 1000, false, null),
                cand("n2", 1000, false, null));
        Set<String> explored = new java.util.HashSet<>();
        for (long cursor = 1; cursor <= 200; cursor++) {
            if (AutoBalancer.explores(cursor)) {
                explored.add(auto.order(cs, ctx(cursor)).get(0).route().id());
            }
        }
        assertEquals(Set.of("n1", "n2"), explored);
    }

    @Test
    void aRouteMeasuredOnlyOnOtherPromptSizesIsExplored() {
        Candidate uncertain = new Candidate("o/far", cand("far", 0, true, null).route(),
                cand("far", 0, true, null).provider(), cand("far", 0, true, meets()).state(), false,
                new TtftEstimate(900, 1200, true, 50));
        List<Candidate> cs = List.of(cand("a", 100, true, meets()), uncertain);
        for (long cursor = 1; cursor <= 100; cursor++) {
            assertEquals(AutoBalancer.explores(cursor),
                    auto.order(cs, ctx(cursor)).get(0).route().id().equals("far"));
        }
    }

    static Candidate estimated(String id, TtftEstimate e) {
        Candidate c = cand(id, 0, true, meets());
        return new Candidate(c.key(), c.route(), c.provider(), c.state(), false, e);
    }

    @Test
    void aRouteMisjudgedOnAFewWideSamplesIsExploredAgain() {
        // measured slow while something was cold: a high mean, but a wide spread says the line is not sure of it
        List<Candidate> cs = List.of(estimated("a", new TtftEstimate(145, 276, true, 0.05)),
                estimated("misjudged", new TtftEstimate(483, 1199, true, 0.3)));
        int explored = 0;
        for (long cursor = 1; cursor <= 100; cursor++) {
            boolean first = auto.order(cs, ctx(cursor)).get(0).route().id().equals("misjudged");
            assertEquals(AutoBalancer.explores(cursor), first);
            explored += first ? 1 : 0;
        }
        assertTrue(explored > 0);
    }

    @Test
    void aRouteSurelySlowerAtThisSizeIsNeverExplored() {
        List<Candidate> cs = List.of(estimated("a", new TtftEstimate(100, 110, true, 0.05)),
                estimated("slower", new TtftEstimate(300, 330, true, 0.05)));
        for (long cursor = 1; cursor <= 100; cursor++) {
            assertEquals(List.of("a", "slower"), ids(auto.order(cs, ctx(cursor))));
        }
    }

    @Test
    void routesMeasuredNearThisPromptSizeAreNeverExplored() {
        List<Candidate> cs = List.of(cand("a", 100, true, meets()), cand("b", 900, true, meets()));
        for (long cursor = 1; cursor <= 100; cursor++) {
            assertEquals(List.of("a", "b"), ids(auto.order(cs, ctx(cursor))));
        }
    }
}
