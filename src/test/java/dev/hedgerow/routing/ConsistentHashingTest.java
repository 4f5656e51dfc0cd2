package dev.hedgerow.routing;

import dev.hedgerow.api.ProviderPrefs;
import dev.hedgerow.catalog.Dialect;
import dev.hedgerow.catalog.GroupSettings;
import dev.hedgerow.catalog.Provider;
import dev.hedgerow.catalog.Route;
import dev.hedgerow.catalog.Strategy;
import dev.hedgerow.state.RouteSnapshot;
import dev.hedgerow.state.UsageSample;
import org.junit.jupiter.api.Test;

import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;

import static org.junit.jupiter.api.Assertions.assertEquals;

/** {@link Balancers#consistentHashing}: by the header's key when the request has one, by weight when it has none. */
class ConsistentHashingTest {
    static final GroupSettings SETTINGS = GroupSettings.defaults().withStrategy(Strategy.CONSISTENT_HASHING);
    static final String HEADER = SETTINGS.balancer().hashOnHeader().toLowerCase(java.util.Locale.ROOT);

    static Candidate cand(String id, int weight) {
        RouteSnapshot s = new RouteSnapshot("o/" + id, false, 0, 0, false, 0, 0, UsageSample.ZERO, Map.of());
        Route r = new Route(id, "ch", "p", "m-" + id, weight, 1, 0, Set.of(), Set.of(), Route.Price.FREE, null, null);
        return new Candidate("o/" + id, r, new Provider("p", "http://x", "k", Dialect.OPENAI, null, null), s, false,
                new TtftEstimate(100, 150, false));
    }

    static Balancer.BalanceContext ctx(long cursor, Map<String, String> headers) {
        RequestFacts f = new RequestFacts(100, null, false, false, Set.of(), Set.of(), ProviderPrefs.NONE, List.of(),
                headers, "hi");
        return new Balancer.BalanceContext(f, cursor, SETTINGS, 0, Set.of(), Map.of());
    }

    static final List<Candidate> GROUP = List.of(cand("ch-p1", 300), cand("ch-p2", 0), cand("ch-p3", 100));

    @Test
    void aRequestWithoutTheHeaderIsSharedByWeightAndNeverFirstOnAStandby() {
        // the hunt's group: 300/0/100. A plain rotation split 12 requests 4/4/4, the standby taking a third
        Map<String, Integer> firsts = new HashMap<>();
        for (long c = 0; c < 12; c++) {
            List<Candidate> order = Balancers.consistentHashing(GROUP, ctx(c, Map.of()));
            firsts.merge(order.get(0).route().id(), 1, Integer::sum);
            assertEquals("ch-p2", order.get(order.size() - 1).route().id(), "the standby is the last resort");
            assertEquals(3, order.size(), "no member is dropped");
        }
        assertEquals(Map.of("ch-p1", 9, "ch-p3", 3), firsts);
        // an empty header is no key either
        assertEquals(Balancers.consistentHashing(GROUP, ctx(5, Map.of())),
                Balancers.consistentHashing(GROUP, ctx(5, Map.of(HEADER, ""))));
    }

    @Test
    void aRequestWithTheHeaderStaysOnItsKeysMemberWhateverTheCursor() {
        Map<String, Integer> keysPerMember = new HashMap<>();
        for (int k = 0; k < 200; k++) {
            String first = null;
            for (long c = 0; c < 3; c++) {
                String now = Balancers.consistentHashing(GROUP, ctx(c, Map.of(HEADER, "session-" + k))).get(0)
                        .route().id();
                assertEquals(first == null ? now : first, now);
                first = now;
            }
            keysPerMember.merge(first, 1, Integer::sum);
        }
        assertEquals(null, keysPerMember.get("ch-p2"), "a weight-0 member wins no key: " + keysPerMember);
    }
}
