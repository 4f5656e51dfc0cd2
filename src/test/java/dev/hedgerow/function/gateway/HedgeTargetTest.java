package dev.hedgerow.function.gateway;

import com.fasterxml.jackson.databind.JsonNode;
import dev.hedgerow.sim.ModelScript;
import dev.hedgerow.sim.SimConfig;
import dev.hedgerow.testsupport.GatewayHarness;
import io.restassured.response.Response;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

import java.util.List;
import java.util.Map;

import static org.junit.jupiter.api.Assertions.assertEquals;

/**
 * Where a hedge goes, through the HTTP API: to an untried route of the slow one's own kind first (its priority tier;
 * under a strategy that shares by weight, a member with a share), and only when there is none to a standby or the
 * next tier, as README says. A hedge went to the next tier first, even beside a same-tier peer (found by hunt9). Every
 * route is learnt at 30 ms to its first token; p1's model takes 1.5 s, so its attempt misses its window (the 200 ms
 * floor) and a hedge is due.
 */
class HedgeTargetTest {
    static final String YAML = """
            orgs:
              - id: acme
                keys: [{ name: app, key: "k-acme" }]
                hedge_budget: { ratio: 1, min_per_window: 1000 }
                providers:
                  - { id: p1, base_url: "${SIM_P1_URL}" }
                  - { id: p2, base_url: "${SIM_P2_URL}" }
                  - { id: p3, base_url: "${SIM_P3_URL}" }
                routes:
                  - { id: pr-a, alias: tiers, provider: p1, model: m, priority: 1 }
                  - { id: pr-b, alias: tiers, provider: p2, model: m, priority: 1 }
                  - { id: pr-c, alias: tiers, provider: p3, model: m, priority: 2 }
                  - { id: so-a, alias: single, provider: p1, model: m, priority: 1 }
                  - { id: so-c, alias: single, provider: p3, model: m, priority: 2 }
                  - { id: wz-a, alias: standby, provider: p1, model: m, weight: 100 }
                  - { id: wz-b, alias: standby, provider: p2, model: m, weight: 0 }
                  - { id: wp-a, alias: shared, provider: p1, model: m, weight: 100 }
                  - { id: wp-b, alias: shared, provider: p2, model: m, weight: 0 }
                  - { id: wp-c, alias: shared, provider: p3, model: m, weight: 50 }
                groups:
                  tiers: { strategy: priority, first_token_floor: 200ms }
                  single: { strategy: priority, first_token_floor: 200ms }
                  standby: { strategy: weighted, first_token_floor: 200ms }
                  shared: { strategy: weighted, first_token_floor: 200ms }
            """;

    static GatewayHarness gw;

    @BeforeAll
    static void start() {
        ModelScript slow = ModelScript.defaults().withLength(4).withLatency(ModelScript.Latency.of(1500, 0));
        ModelScript fast = ModelScript.defaults().withLength(4).withLatency(ModelScript.Latency.of(5, 0));
        gw = GatewayHarness.start(YAML, Map.of("p1", SimConfig.of(5).withModel("m", slow),
                "p2", SimConfig.of(5).withModel("m", fast), "p3", SimConfig.of(5).withModel("m", fast)));
        for (String route : List.of("pr-a", "pr-b", "pr-c", "so-a", "so-c", "wz-a", "wz-b", "wp-a", "wp-b", "wp-c")) {
            GroupKit.learntTtft(gw.core().store(), "acme/" + route, 30);
        }
    }

    @AfterAll
    static void stop() {
        gw.close();
    }

    /** A streamed request asking for p1's route first, and the routes its attempts went to. */
    static List<String> tried(String alias) {
        Response r = GroupKit.chat(gw, alias, "hedge me", true, "{\"order\":[\"p1\"]}");
        assertEquals(200, r.statusCode(), r.asString());
        JsonNode trail = GroupKit.trail(r);
        return GroupKit.trailRoutes(trail);
    }

    @Test
    void aHedgeStaysInThePriorityTierOfTheSlowRoute() {
        assertEquals(List.of("pr-a", "pr-b"), tried("tiers"), "pr-b, its tier's peer, not pr-c of the next tier");
    }

    @Test
    void aSlowRouteAloneInItsTierIsHedgedOnTheNextTier() {
        assertEquals(List.of("so-a", "so-c"), tried("single"));
    }

    @Test
    void aHedgeGoesToAMemberWithAShareBeforeAStandby() {
        assertEquals(List.of("wp-a", "wp-c"), tried("shared"), "wp-c has a share; wp-b is the standby");
        assertEquals(List.of("wz-a", "wz-b"), tried("standby"), "no other member: the standby");
    }

    /**
     * The routes a hedged request tried when the client's order ranks the next tier, or a standby, before the slow
     * route's peer (untested; found by hunt25's mutation testing).
     */
    static List<String> tried(String alias, String order) {
        Response r = GroupKit.chat(gw, alias, "hedge me", true, "{\"order\":" + order + "}");
        assertEquals(200, r.statusCode(), r.asString());
        return GroupKit.trailRoutes(GroupKit.trail(r));
    }

    @Test
    void aHedgeStaysInTheSlowRoutesTierWhenTheClientsOrderRanksTheNextTierFirst() {
        assertEquals(List.of("pr-a", "pr-b"), tried("tiers", "[\"p1\",\"p3\"]"));
    }

    @Test
    void aHedgeGoesToAMemberWithAShareWhenTheClientsOrderRanksTheStandbyFirst() {
        assertEquals(List.of("wp-a", "wp-c"), tried("shared", "[\"p1\",\"p2\"]"));
    }
}
