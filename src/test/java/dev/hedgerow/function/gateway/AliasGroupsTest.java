package dev.hedgerow.function.gateway;

import com.fasterxml.jackson.databind.JsonNode;
import dev.hedgerow.catalog.Org;
import dev.hedgerow.catalog.Route;
import dev.hedgerow.sim.Fault;
import dev.hedgerow.sim.ModelScript;
import dev.hedgerow.sim.SimConfig;
import dev.hedgerow.testsupport.GatewayHarness;
import io.restassured.response.Response;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

import static dev.hedgerow.function.gateway.GroupKit.ORG;
import static dev.hedgerow.function.gateway.GroupKit.await;
import static dev.hedgerow.function.gateway.GroupKit.chat;
import static dev.hedgerow.function.gateway.GroupKit.health;
import static dev.hedgerow.function.gateway.GroupKit.received;
import static dev.hedgerow.function.gateway.GroupKit.route;
import static dev.hedgerow.function.gateway.GroupKit.trail;
import static dev.hedgerow.function.gateway.GroupKit.trailRoutes;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Alias groups end to end: rr_health rotates evenly over the healthy members and keeps its cursor and health
 * memory across catalog writes; weighted follows smooth weighted round-robin and fails over by weight; least_latency
 * explores unmeasured members first, then keeps to the fastest; one route alone is pinned.
 */
class AliasGroupsTest {
    static final List<String> KIMI = List.of("kimi3-openrouter", "kimi3-digitalocean", "kimi3-fireworks",
            "kimi3-together");
    static final String YAML = GroupKit.yaml("""
                  - { alias: kimi3, provider: openrouter, model: kimi-k2 }
                  - { alias: kimi3, provider: digitalocean, model: kimi-k2 }
                  - { alias: kimi3, provider: fireworks, model: kimi-k2 }
                  - { alias: kimi3, provider: together, model: kimi-k2 }
                  - { alias: w, provider: openrouter, model: w-model, weight: 1 }
                  - { alias: w, provider: digitalocean, model: w-model, weight: 3 }
                  - { alias: w, provider: fireworks, model: w-model, weight: 2 }
                  - { alias: ll, provider: openrouter, model: ll-model }
                  - { alias: ll, provider: digitalocean, model: ll-model }
                  - { alias: ll, provider: fireworks, model: ll-model }
                  - { alias: solo, provider: fireworks, model: solo-model }
            """, """
                  kimi3: { strategy: rr_health, hedging: false }
                  w: { strategy: weighted, hedging: false }
                  ll: { strategy: least_latency, hedging: false }
                  solo: { strategy: rr_health, hedging: false }
            """);

    static GatewayHarness gw;

    @BeforeAll
    static void start() {
        Map<String, SimConfig> sims = new LinkedHashMap<>(GroupKit.sims(GroupKit.quick(8), "kimi-k2", "w-model",
                "solo-model"));
        // least_latency members: distinct, steady first-token times (no jitter)
        long[] ttft = {5, 80, 160};
        for (int i = 0; i < 3; i++) {
            String p = GroupKit.PROVIDERS.get(i);
            sims.put(p, sims.get(p).withModel("ll-model", ModelScript.defaults().withLength(4)
                    .withLatency(ModelScript.Latency.of(ttft[i], 0))));
        }
        gw = GatewayHarness.start(YAML, sims);
    }

    @AfterAll
    static void stop() {
        gw.close();
    }

    @BeforeEach
    void reset() {
        GroupKit.reset(gw);
    }

    /** Moves the group's shared cursor so that the next request starts the rotation at member {@code index}. */
    static void alignCursor(String alias, int members, int index) {
        long c;
        do {
            c = await(gw.core().store().nextCursor(ORG, alias));
        } while (Math.floorMod(c + 1, (long) members) != index);
    }

    @Test
    void rrHealthRotatesEvenlyOverEveryMember() {
        List<String> served = new ArrayList<>();
        for (int i = 0; i < 8; i++) {
            Response r = chat(gw, "kimi3", "rotate " + i);
            assertEquals(200, r.statusCode());
            served.add(route(r));
        }
        for (String p : GroupKit.PROVIDERS) {
            assertEquals(2, received(gw, p, "kimi-k2"), p + " in " + served);
        }
        assertEquals(4, new HashSet<>(served.subList(0, 4)).size(), served.toString());
    }

    @Test
    void rrHealthRotatesEvenlyOverTheHealthyMembersWhileOneCoolsDown() {
        GroupKit.failOnce(gw, "kimi3", "digitalocean", "kimi-k2");
        assertTrue(health(gw.core().store(), "kimi3-digitalocean").coolingDown());
        gw.sim("digitalocean").resetStats();
        for (int i = 0; i < 6; i++) {
            assertEquals(200, chat(gw, "kimi3", "healthy " + i).statusCode());
        }
        assertEquals(0, received(gw, "digitalocean", "kimi-k2"));
        for (String p : List.of("openrouter", "fireworks", "together")) {
            assertEquals(2, received(gw, p, "kimi-k2"), p);
        }
    }

    @Test
    void theRotationCursorSurvivesACatalogWrite() {
        alignCursor("kimi3", 4, 0);
        List<String> served = new ArrayList<>();
        served.add(route(chat(gw, "kimi3", "before 1")));
        served.add(route(chat(gw, "kimi3", "before 2")));
        long version = gw.core().catalog().current().versions().get(ORG);
        await(gw.core().catalog().update(ORG, org -> withWeight(org, "kimi3-together", 7)));
        assertTrue(gw.core().catalog().current().versions().get(ORG) > version);
        assertEquals(7, gw.core().catalog().current().org(ORG).orElseThrow().route("kimi3-together")
                .orElseThrow().weight());
        served.add(route(chat(gw, "kimi3", "after 1")));
        served.add(route(chat(gw, "kimi3", "after 2")));
        assertEquals(KIMI, served, "the rotation goes on where it was, it does not restart");
    }

    @Test
    void healthMemorySurvivesACatalogWrite() {
        gw.sim("fireworks").enqueue("kimi-k2", Fault.status(503));
        chat(gw, "kimi3", "cool fireworks", false, "{\"only\":[\"fireworks\"]}");
        assertTrue(health(gw.core().store(), "kimi3-fireworks").coolingDown());
        await(gw.core().catalog().update(ORG, org -> withWeight(org, "kimi3-fireworks", 5)));
        assertTrue(health(gw.core().store(), "kimi3-fireworks").coolingDown());
        gw.sim("fireworks").resetStats();
        for (int i = 0; i < 4; i++) {
            assertEquals(200, chat(gw, "kimi3", "after write " + i).statusCode());
        }
        assertEquals(0, received(gw, "fireworks", "kimi-k2"));
    }

    @Test
    void healthIsKeptPerRouteNotPerProvider() {
        gw.sim("fireworks").enqueue("kimi-k2", Fault.status(500));
        chat(gw, "kimi3", "cool one model", false, "{\"only\":[\"fireworks\"]}");
        assertTrue(health(gw.core().store(), "kimi3-fireworks").coolingDown());
        assertFalse(health(gw.core().store(), "solo-fireworks").coolingDown());
        Response r = chat(gw, "solo", "the other model of the same provider");
        assertEquals(200, r.statusCode());
        assertEquals("solo-fireworks", route(r));
    }

    @Test
    void weightedFollowsSmoothWeightedRoundRobin() {
        List<String> served = new ArrayList<>();
        for (int i = 0; i < 12; i++) {
            Response r = chat(gw, "w", "weigh " + i);
            assertEquals(200, r.statusCode());
            served.add(route(r));
        }
        assertEquals(2, received(gw, "openrouter", "w-model"), served.toString());
        assertEquals(6, received(gw, "digitalocean", "w-model"), served.toString());
        assertEquals(4, received(gw, "fireworks", "w-model"), served.toString());
        for (int i = 0; i + 6 <= served.size(); i++) {
            List<String> window = served.subList(i, i + 6);
            assertEquals(3, window.stream().filter("w-digitalocean"::equals).count(), "smooth: " + served);
            assertEquals(2, window.stream().filter("w-fireworks"::equals).count(), "smooth: " + served);
        }
    }

    @Test
    void weightedFailsOverByWeightDescending() {
        Map<String, Integer> weight = Map.of("w-openrouter", 1, "w-digitalocean", 3, "w-fireworks", 2);
        List<String> firsts = new ArrayList<>();
        for (int i = 0; i < 6; i++) {
            GroupKit.reset(gw);
            for (String p : List.of("openrouter", "digitalocean", "fireworks")) {
                gw.sim(p).enqueue("w-model", Fault.status(500));
            }
            Response r = chat(gw, "w", "all fail " + i);
            assertEquals(502, r.statusCode());
            List<String> routes = trailRoutes(trail(r));
            assertEquals(3, routes.size(), routes.toString());
            firsts.add(routes.get(0));
            assertTrue(weight.get(routes.get(1)) > weight.get(routes.get(2)),
                    "failover by weight descending after the first pick: " + routes);
        }
        assertEquals(3, new HashSet<>(firsts).size(), "the first pick still rotates: " + firsts);
    }

    @Test
    void leastLatencyExploresUnmeasuredMembersFirstThenKeepsToTheFastest() {
        List<String> explored = new ArrayList<>();
        for (int i = 0; i < 3; i++) {
            Response r = chat(gw, "ll", "explore " + i);
            assertEquals(200, r.statusCode());
            explored.add(route(r));
        }
        assertEquals(3, new HashSet<>(explored).size(), "every member measured once: " + explored);
        for (int i = 0; i < 4; i++) {
            assertEquals("ll-openrouter", route(chat(gw, "ll", "exploit " + i)));
        }
    }

    @Test
    void oneRouteAloneIsPinnedAndNeverFailsOverElsewhere() {
        Response ok = chat(gw, "solo", "pinned");
        assertEquals("solo-fireworks", route(ok));
        gw.sim("fireworks").enqueue("solo-model", Fault.status(500));
        Response r = chat(gw, "solo", "pinned failure");
        assertEquals(502, r.statusCode());
        JsonNode t = trail(r);
        assertEquals(List.of("solo-fireworks"), trailRoutes(t));
        assertEquals("http_500", t.get(0).path("error").asText());
    }

    @Test
    void aRequestWithOneCapableRouteLeavesTheRotationAlone() {
        long before = await(gw.core().store().nextCursor(ORG, "solo"));
        long kimiBefore = await(gw.core().store().nextCursor(ORG, "kimi3"));
        for (int i = 0; i < 3; i++) {
            assertEquals(200, chat(gw, "solo", "alone " + i).statusCode());
            // narrowed to one route by the caller's preferences: nothing to rotate either
            assertEquals(200, chat(gw, "kimi3", "only one " + i, false, "{\"only\":[\"fireworks\"]}").statusCode());
        }
        assertEquals(before + 1, await(gw.core().store().nextCursor(ORG, "solo")));
        assertEquals(kimiBefore + 1, await(gw.core().store().nextCursor(ORG, "kimi3")));
        assertEquals(200, chat(gw, "kimi3", "rotates").statusCode());
        assertEquals(kimiBefore + 3, await(gw.core().store().nextCursor(ORG, "kimi3")));
    }

    static Org withWeight(Org org, String routeId, int weight) {
        List<Route> routes = new ArrayList<>();
        for (Route r : org.routes()) {
            routes.add(!r.id().equals(routeId) ? r : new Route(r.id(), r.alias(), r.provider(), r.model(), weight,
                    r.priority(), r.contextWindow(), r.capabilities(), r.parameters(), r.price(), r.description(),
                    r.tags(), r.embeddings()));
        }
        return new Org(org.id(), org.keys(), org.adminKeys(), org.providers(), routes, new HashMap<>(org.groups()),
                org.routing(), org.hedgeBudget());
    }
}
