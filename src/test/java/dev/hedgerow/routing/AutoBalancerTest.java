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

    static Balancer.BalanceContext ctx(long cursor, String affinity) {
        RequestFacts f = new RequestFacts(100, null, true, false, Set.of(), Set.of(), ProviderPrefs.NONE, List.of(),
                Map.of(), null, "hi");
        return new Balancer.BalanceContext(f, cursor, SETTINGS, 0, affinity, Map.of());
    }

    static List<String> ids(List<Candidate> cs) {
        return cs.stream().map(c -> c.route().id()).toList();
    }

    @Test
    void ordersByPredictedTtftFastestFirst() {
        List<Candidate> cs = List.of(cand("b", 300, true, meets()), cand("a", 100, true, meets()),
                cand("c", 150, true, meets()));
        assertEquals(List.of("a", "c", "b"), ids(auto.order(cs, ctx(1, null))));
    }

    @Test
    void supplyBelowTheSloComesAfterSupplyMeetingItHoweverFast() {
        List<Candidate> cs = List.of(cand("slowdecode", 20, true, below()), cand("ok", 400, true, meets()),
                cand("new", 300, true, null));
        assertEquals(List.of("new", "ok", "slowdecode"), ids(auto.order(cs, ctx(1, null))));
    }

    @Test
    void belowSloSupplyStillServesWhenItIsTheOnlyCapacity() {
        assertEquals(List.of("slowdecode"), ids(auto.order(List.of(cand("slowdecode", 20, true, below())),
                ctx(1, null))));
    }

    @Test
    void affinityWinsWithinTheSlowBarOnly() {
        List<Candidate> cs = List.of(cand("a", 100, true, meets()), cand("b", 180, true, meets()),
                cand("c", 500, true, meets()));
        assertEquals(List.of("b", "a", "c"), ids(auto.order(cs, ctx(1, "o/b"))));
        assertEquals(List.of("a", "b", "c"), ids(auto.order(cs, ctx(1, "o/c"))), "c is past 2x the fastest");
    }

    @Test
    void affinityNeverLiftsARouteBelowTheSlo() {
        List<Candidate> cs = List.of(cand("a", 100, true, meets()), cand("b", 90, true, below()));
        assertEquals(List.of("a", "b"), ids(auto.order(cs, ctx(1, "o/b"))));
    }

    @Test
    void routesPastTheSlowBarAreMarkedAndKept() {
        List<Candidate> cs = List.of(cand("a", 100, true, meets()), cand("slow", 201, true, meets()));
        List<AutoBalancer.Placed> placed = auto.place(cs, ctx(1, null));
        assertEquals(AutoBalancer.Placement.FAST, placed.get(0).placement());
        assertEquals(AutoBalancer.Placement.SLOW_BAR, placed.get(1).placement());
        assertEquals("slow", placed.get(1).candidate().route().id());
    }

    @Test
    void anUnmeasuredRouteIsExploredAtOneRotationPositionInTen() {
        List<Candidate> cs = List.of(cand("a", 100, true, meets()), cand("new", 1000, false, null));
        int explored = 0;
        for (long cursor = 1; cursor <= 100; cursor++) {
            if (auto.order(cs, ctx(cursor, null)).get(0).route().id().equals("new")) {
                explored++;
                assertEquals(0, cursor % AutoBalancer.EXPLORE_EVERY);
            }
        }
        assertEquals(100 / AutoBalancer.EXPLORE_EVERY, explored);
    }

    @Test
    void explorationRotatesAmongSeveralUnmeasuredRoutes() {
        List<Candidate> cs = List.of(cand("a", 100, true, meets()), cand("n1", 1000, false, null),
                cand("n2", 1000, false, null));
        assertEquals(Set.of("n1", "n2"), Set.of(auto.order(cs, ctx(10, null)).get(0).route().id(),
                auto.order(cs, ctx(20, null)).get(0).route().id()));
    }

    @Test
    void measuredRoutesAreNeverExplored() {
        List<Candidate> cs = List.of(cand("a", 100, true, meets()), cand("b", 900, true, meets()));
        assertEquals(List.of("a", "b"), ids(auto.order(cs, ctx(10, null))));
    }
}
