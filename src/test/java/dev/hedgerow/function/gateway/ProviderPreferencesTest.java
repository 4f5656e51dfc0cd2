package dev.hedgerow.function.gateway;

import dev.hedgerow.sim.Fault;
import dev.hedgerow.sim.ModelScript;
import dev.hedgerow.sim.SimConfig;
import dev.hedgerow.sim.SimStats;
import dev.hedgerow.testsupport.GatewayHarness;
import io.restassured.response.Response;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;

import static dev.hedgerow.function.gateway.GroupKit.PROVIDERS;
import static dev.hedgerow.function.gateway.GroupKit.chat;
import static dev.hedgerow.function.gateway.GroupKit.received;
import static dev.hedgerow.function.gateway.GroupKit.route;
import static dev.hedgerow.function.gateway.GroupKit.trail;
import static dev.hedgerow.function.gateway.GroupKit.trailRoutes;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * The request's OpenRouter-style {@code provider} preferences over an alias group, end to end: only (strict),
 * ignore, order (soft), allow_fallbacks, sort by price / latency / throughput, their composition, failover that
 * never escapes them, one blocked audit event per refusal, and nothing of them upstream.
 */
class ProviderPreferencesTest {
    static final String YAML = GroupKit.yaml("""
                  - { alias: kimi3, provider: openrouter, model: kimi-k2, price: { prompt_per_mtok: 0.6, completion_per_mtok: 2.5 } }
                  - { alias: kimi3, provider: digitalocean, model: kimi-k2, price: { prompt_per_mtok: 0.55, completion_per_mtok: 2.2 } }
                  - { alias: kimi3, provider: fireworks, model: kimi-k2, price: { prompt_per_mtok: 0.3, completion_per_mtok: 1.0 } }
                  - { alias: kimi3, provider: together, model: kimi-k2, price: { prompt_per_mtok: 1.0, completion_per_mtok: 3.0 } }
            """, """
                  kimi3: { strategy: rr_health, hedging: false }
            """);

    static GatewayHarness gw;

    @BeforeAll
    static void start() {
        // distinct first-token times and decode speeds, no jitter: openrouter answers first, digitalocean decodes fastest
        // (2000 tokens/s against at most 50: a loaded machine adds ms to every measured gap, which once made 2000
        // against 300 look alike)
        long[] ttft = {5, 60, 90, 120};
        double[] tps = {50, 2000, 40, 25};
        Map<String, SimConfig> sims = new LinkedHashMap<>();
        for (int i = 0; i < 4; i++) {
            sims.put(PROVIDERS.get(i), SimConfig.of(GroupKit.SEED).withModel("kimi-k2",
                    ModelScript.defaults().withLength(12).withLatency(ModelScript.Latency.of(ttft[i], tps[i]))));
        }
        gw = GatewayHarness.start(YAML, sims);
        chat(gw, "kimi3", "warm up");
    }

    @AfterAll
    static void stop() {
        gw.close();
    }

    @BeforeEach
    void reset() {
        GroupKit.reset(gw);
    }

    static long total() {
        return PROVIDERS.stream().mapToLong(p -> received(gw, p, "kimi-k2")).sum();
    }

    static void failAll() {
        PROVIDERS.forEach(p -> gw.sim(p).enqueue("kimi-k2", Fault.status(500)));
    }

    @Test
    void onlyRestrictsTheGroupAndFailoverNeverEscapesIt() {
        failAll();
        Response r = chat(gw, "kimi3", "only two", false, "{\"only\":[\"openrouter\",\"together\"]}");
        assertEquals(502, r.statusCode());
        assertEquals(Set.of("kimi3-openrouter", "kimi3-together"), Set.copyOf(trailRoutes(trail(r))));
        assertEquals(2, trail(r).size());
        assertEquals(0, received(gw, "digitalocean", "kimi-k2") + received(gw, "fireworks", "kimi-k2"));
    }

    @Test
    void onlyNamingANonMemberIs400ProviderNotInGroupWithOneBlockedEvent() {
        long before = GroupKit.blocked(gw.core().store(), "provider_not_in_group");
        Response r = chat(gw, "kimi3", "typo", false, "{\"only\":[\"openrouter\",\"fireworkz\"]}");
        assertEquals(400, r.statusCode());
        assertEquals("provider_not_in_group", r.jsonPath().getString("error.code"));
        assertEquals("provider.only", r.jsonPath().getString("error.param"));
        assertEquals(before + 1, GroupKit.blocked(gw.core().store(), "provider_not_in_group"));
        Map<String, String> e = GroupKit.audit(gw.core().store(), "blocked").get(0);
        assertEquals("kimi3", e.get("alias"));
        assertEquals("acme", e.get("org"));
        assertEquals(0, total(), "a typo never silently re-routes");
    }

    /**
     * {@code max_price} leaves out the routes priced above either cap (a route at the cap stays), and failover stays
     * within what is left; a cap no member meets is 400 {@code provider_excluded_all}. Nothing tested that a cap
     * leaves a route out (found by hunt25's mutation testing).
     */
    @Test
    void maxPriceLeavesOutTheRoutesPricedAboveEitherCap() {
        failAll();
        Response r = chat(gw, "kimi3", "capped prompt", false, "{\"max_price\":{\"prompt\":0.55}}");
        assertEquals(502, r.statusCode());
        assertEquals(Set.of("kimi3-digitalocean", "kimi3-fireworks"), Set.copyOf(trailRoutes(trail(r))),
                "0.55 at the cap stays; 0.6 and 1.0 are left out");
        GroupKit.reset(gw);
        failAll();
        r = chat(gw, "kimi3", "capped completion", false, "{\"max_price\":{\"completion\":2.2}}");
        assertEquals(502, r.statusCode());
        assertEquals(Set.of("kimi3-digitalocean", "kimi3-fireworks"), Set.copyOf(trailRoutes(trail(r))));
        r = chat(gw, "kimi3", "capped below all", false, "{\"max_price\":{\"prompt\":0.1}}");
        assertEquals(400, r.statusCode(), r.asString());
        assertEquals("provider_excluded_all", r.jsonPath().getString("error.code"));
    }

    @Test
    void anUnknownProviderFieldIs400NamingItWithOneBlockedEvent() {
        long before = GroupKit.blocked(gw.core().store(), "unknown_field");
        Response r = chat(gw, "kimi3", "typo field", false, "{\"onyl\":[\"openrouter\"]}");
        assertEquals(400, r.statusCode());
        assertEquals("unknown_field", r.jsonPath().getString("error.code"));
        assertEquals("provider.onyl", r.jsonPath().getString("error.param"));
        assertEquals(before + 1, GroupKit.blocked(gw.core().store(), "unknown_field"));
        assertEquals(0, total(), "a misspelt restriction never silently routes anywhere");
    }

    @Test
    void openRoutersRestrictionsHedgerowCannotShowAreRefusedUnlessAtTheirDefaults() {
        for (String prefs : new String[]{"{\"zdr\":true}", "{\"data_collection\":\"deny\"}",
                "{\"quantizations\":[\"fp8\"]}", "{\"enforce_distillable_text\":true}",
                "{\"max_price\":{\"prompt\":5,\"request\":0.01}}"}) {
            Response r = chat(gw, "kimi3", "restricted", false, prefs);
            assertEquals(400, r.statusCode(), prefs);
            assertEquals("unsupported_provider_preference", r.jsonPath().getString("error.code"), prefs);
            assertTrue(r.jsonPath().getString("error.param").startsWith("provider."), prefs);
        }
        assertEquals(0, total());
        Response ok = chat(gw, "kimi3", "defaults", false, "{\"zdr\":false,\"data_collection\":\"allow\","
                + "\"quantizations\":[],\"enforce_distillable_text\":false,\"preferred_max_latency\":2,"
                + "\"preferred_min_throughput\":{\"p90\":50},\"max_price\":{\"prompt\":100,\"request\":null}}");
        assertEquals(200, ok.statusCode(), ok.asString());
    }

    @Test
    void ignoreExcludesMembersEvenOnFailover() {
        for (int i = 0; i < 4; i++) {
            String served = route(chat(gw, "kimi3", "ignore " + i, false, "{\"ignore\":[\"openrouter\",\"digitalocean\"]}"));
            assertTrue(Set.of("kimi3-fireworks", "kimi3-together").contains(served), served);
        }
        failAll();
        Response r = chat(gw, "kimi3", "ignored fail", false, "{\"ignore\":[\"openrouter\",\"digitalocean\"]}");
        assertEquals(Set.of("kimi3-fireworks", "kimi3-together"), Set.copyOf(trailRoutes(trail(r))));
        assertEquals(0, received(gw, "openrouter", "kimi-k2") + received(gw, "digitalocean", "kimi-k2"));
    }

    @Test
    void ignoreThatEmptiesTheGroupIs400ProviderExcludedAllWithOneBlockedEvent() {
        long before = GroupKit.blocked(gw.core().store(), "provider_excluded_all");
        Response r = chat(gw, "kimi3", "nobody", false,
                "{\"ignore\":[\"openrouter\",\"digitalocean\",\"fireworks\",\"together\"]}");
        assertEquals(400, r.statusCode());
        assertEquals("provider_excluded_all", r.jsonPath().getString("error.code"));
        assertEquals(before + 1, GroupKit.blocked(gw.core().store(), "provider_excluded_all"));
        assertEquals(0, total());
        Response r2 = chat(gw, "kimi3", "nobody either", false,
                "{\"only\":[\"openrouter\"],\"ignore\":[\"openrouter\"]}");
        assertEquals("provider_excluded_all", r2.jsonPath().getString("error.code"));
        assertEquals(before + 2, GroupKit.blocked(gw.core().store(), "provider_excluded_all"));
    }

    @Test
    void orderIsASoftPreferenceThatNeverExcludes() {
        for (int i = 0; i < 3; i++) {
            assertEquals("kimi3-together", route(chat(gw, "kimi3", "order " + i, false,
                    "{\"order\":[\"together\",\"nosuch\"]}")));
        }
        gw.sim("together").enqueue("kimi-k2", Fault.status(503));
        Response r = chat(gw, "kimi3", "order fails over", false, "{\"order\":[\"together\"]}");
        assertEquals(200, r.statusCode());
        assertEquals("kimi3-together", trailRoutes(trail(r)).get(0));
        assertEquals(2, trail(r).size());
        assertEquals(200, chat(gw, "kimi3", "unknown slugs only", false, "{\"order\":[\"nosuch\"]}").statusCode());
    }

    @Test
    void allowFallbacksFalseStopsAfterTheFirstChoice() {
        gw.sim("fireworks").enqueue("kimi-k2", Fault.status(500));
        Response r = chat(gw, "kimi3", "no fallbacks", false,
                "{\"order\":[\"fireworks\"],\"allow_fallbacks\":false}");
        assertEquals(502, r.statusCode());
        assertEquals(List.of("kimi3-fireworks"), trailRoutes(trail(r)));
        assertEquals(1, total());
    }

    /**
     * OpenRouter's meaning: without fallbacks the request is served by the providers its {@code order} names, tried in
     * that order, and by no other.
     */
    @Test
    void allowFallbacksFalseTriesTheOrderedProvidersInOrderAndNoOther() {
        String prefs = "{\"order\":[\"together\",\"openrouter\"],\"allow_fallbacks\":false}";
        gw.sim("together").enqueue("kimi-k2", Fault.status(500));
        Response r = chat(gw, "kimi3", "second ordered", false, prefs);
        assertEquals(200, r.statusCode(), r.asString());
        assertEquals(List.of("kimi3-together", "kimi3-openrouter"), trailRoutes(trail(r)));
        GroupKit.reset(gw);
        failAll();
        Response all = chat(gw, "kimi3", "every ordered one fails", false, prefs);
        assertEquals(502, all.statusCode());
        assertEquals(List.of("kimi3-together", "kimi3-openrouter"), trailRoutes(trail(all)));
        assertEquals(0, received(gw, "digitalocean", "kimi-k2") + received(gw, "fireworks", "kimi-k2"),
                "never a provider the order does not name");
    }

    /**
     * OpenRouter: with fallbacks off, a request whose ordered providers cannot serve it fails; it is refused as the
     * router refuses a request every allowed member of which is out (503 no_healthy_provider with Retry-After, one
     * blocked event), never served by a provider the order does not name. It was served by the next member before.
     */
    @Test
    void allowFallbacksFalseIsRefusedWhenNoProviderItsOrderNamesCanServe() {
        GroupKit.failOnce(gw, "kimi3", "together", "kimi-k2");
        GroupKit.failOnce(gw, "kimi3", "openrouter", "kimi-k2");
        PROVIDERS.forEach(p -> gw.sim(p).resetStats());
        long before = GroupKit.blocked(gw.core().store(), "no_healthy_provider");
        String prefs = "{\"order\":[\"together\",\"openrouter\"],\"allow_fallbacks\":false}";
        Response r = chat(gw, "kimi3", "ordered ones cooling down", false, prefs);
        assertEquals(503, r.statusCode(), r.asString());
        assertEquals("no_healthy_provider", r.jsonPath().getString("error.code"));
        assertTrue(Integer.parseInt(r.header("Retry-After")) >= 1, r.headers().toString());
        assertTrue(r.jsonPath().getString("error.message").contains("kimi3-together: cooling down"), r.asString());
        assertEquals(before + 1, GroupKit.blocked(gw.core().store(), "no_healthy_provider"));
        assertEquals(0, total(), "never a provider the order does not name");
        // with fallbacks allowed the same order is only a preference: another member serves
        Response soft = chat(gw, "kimi3", "fallbacks allowed", false, "{\"order\":[\"together\",\"openrouter\"]}");
        assertEquals(200, soft.statusCode(), soft.asString());
        assertTrue(Set.of("kimi3-digitalocean", "kimi3-fireworks").contains(route(soft)), route(soft));
    }

    @Test
    void allowFallbacksFalseWithAnOrderNamingNoMemberIs400ProviderExcludedAllWithOneBlockedEvent() {
        long before = GroupKit.blocked(gw.core().store(), "provider_excluded_all");
        Response r = chat(gw, "kimi3", "ordered nobody", false,
                "{\"order\":[\"nosuch\"],\"allow_fallbacks\":false}");
        assertEquals(400, r.statusCode(), r.asString());
        assertEquals("provider_excluded_all", r.jsonPath().getString("error.code"));
        assertEquals("provider", r.jsonPath().getString("error.param"));
        assertTrue(r.jsonPath().getString("error.message").contains("allow_fallbacks"), r.asString());
        assertEquals(before + 1, GroupKit.blocked(gw.core().store(), "provider_excluded_all"));
        assertEquals(0, total());
    }

    /** Without an order, no fallbacks means the first choice alone (kept as it was). */
    @Test
    void allowFallbacksFalseWithoutAnOrderStaysOnTheFirstChoice() {
        failAll();
        Response r = chat(gw, "kimi3", "first choice only", false, "{\"allow_fallbacks\":false}");
        assertEquals(502, r.statusCode(), r.asString());
        assertEquals(1, trail(r).size(), trail(r).toString());
        assertEquals(1, total(), "no second provider was asked");
    }

    @Test
    void allowFallbacksFalseNeverResumesABrokenStreamOnAnotherProvider() {
        gw.sim("fireworks").enqueue("kimi-k2", Fault.dropAfter(3));
        Response r = chat(gw, "kimi3", "no fallbacks mid-stream", true,
                "{\"order\":[\"fireworks\"],\"allow_fallbacks\":false}");
        assertEquals(200, r.statusCode());
        List<String> routes = trailRoutes(trail(r));
        assertTrue(routes.size() >= 2, "the break is in the trail: " + routes);
        assertEquals(Set.of("kimi3-fireworks"), Set.copyOf(routes), "resumed only where the client allowed");
        assertEquals(0, received(gw, "openrouter", "kimi-k2") + received(gw, "digitalocean", "kimi-k2")
                + received(gw, "together", "kimi-k2"));
    }

    @Test
    void sortByPriceTakesTheCheapestFirstAndFailsOverToTheNextCheapest() {
        for (int i = 0; i < 3; i++) {
            assertEquals("kimi3-fireworks", route(chat(gw, "kimi3", "cheap " + i, false, "{\"sort\":\"price\"}")));
        }
        gw.sim("fireworks").enqueue("kimi-k2", Fault.status(502));
        Response r = chat(gw, "kimi3", "cheap fails", false, "{\"sort\":\"price\"}");
        assertEquals(List.of("kimi3-fireworks", "kimi3-digitalocean"), trailRoutes(trail(r)));
    }

    /** Measures every member a few times (first token and decode speed are learned from traffic). */
    static void measureEveryMember() {
        for (String p : PROVIDERS) {
            for (int i = 0; i < 3; i++) {
                assertEquals(200, chat(gw, "kimi3", "measure " + i, true, "{\"only\":[\"" + p + "\"]}")
                        .statusCode());
            }
        }
    }

    @Test
    void sortByLatencyTakesTheMemberWithTheLowestPredictedFirstToken() {
        measureEveryMember();
        for (int i = 0; i < 3; i++) {
            assertEquals("kimi3-openrouter", route(chat(gw, "kimi3", "quick " + i, false, "{\"sort\":\"latency\"}")));
        }
    }

    @Test
    void sortByThroughputTakesTheFastestDecoder() {
        measureEveryMember();
        for (int i = 0; i < 3; i++) {
            assertEquals("kimi3-digitalocean", route(chat(gw, "kimi3", "fast " + i, false,
                    "{\"sort\":\"throughput\"}")));
        }
    }

    @Test
    void preferencesComposeAndFailoverStaysInsideThem() {
        gw.sim("digitalocean").enqueue("kimi-k2", Fault.status(500));
        gw.sim("openrouter").enqueue("kimi-k2", Fault.status(500));
        Response r = chat(gw, "kimi3", "composed", false, "{\"only\":[\"openrouter\",\"digitalocean\","
                + "\"fireworks\"],\"ignore\":[\"fireworks\"],\"order\":[\"digitalocean\"]}");
        assertEquals(502, r.statusCode());
        assertEquals(List.of("kimi3-digitalocean", "kimi3-openrouter"), trailRoutes(trail(r)));
        assertEquals(0, received(gw, "fireworks", "kimi-k2") + received(gw, "together", "kimi-k2"));
    }

    @Test
    void preferencesAreStrippedBeforeTheRequestGoesUpstream() {
        assertEquals(200, chat(gw, "kimi3", "strip", false, "{\"order\":[\"together\"],\"sort\":\"price\","
                + "\"allow_fallbacks\":true,\"ignore\":[\"fireworks\"]}").statusCode());
        String served = null;
        for (String p : PROVIDERS) {
            SimStats s = gw.sim(p).stats("kimi-k2");
            if (s.received() > 0) {
                served = s.recent().get(s.recent().size() - 1).body();
            }
        }
        assertFalse(served == null || served.contains("\"provider\"") || served.contains("allow_fallbacks"), served);
    }
}
