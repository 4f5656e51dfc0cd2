package dev.hedgerow.function.gateway;

import dev.hedgerow.api.ProviderPrefs;
import dev.hedgerow.catalog.Org;
import dev.hedgerow.routing.Explanation;
import dev.hedgerow.routing.RequestFacts;
import dev.hedgerow.routing.Router;
import dev.hedgerow.sim.ModelScript;
import dev.hedgerow.sim.SimConfig;
import dev.hedgerow.testsupport.GatewayHarness;
import io.restassured.RestAssured;
import io.restassured.response.Response;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

import java.util.ArrayList;
import java.util.Collections;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;

import static dev.hedgerow.testsupport.Eventually.eventually;
import static io.restassured.RestAssured.given;
import static org.hamcrest.Matchers.containsString;
import static org.hamcrest.Matchers.equalTo;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * The auto strategy over real HTTP: route standing, the slow-route bar, SLO preference and recovery, bounded
 * exploration of new routes, prefix-cache affinity (and capability and standing winning over it), and the
 * explanation the console's admin endpoint returns.
 */
class AutoRoutingTest {
    static final String YAML = """
            orgs:
              - id: acme
                keys: [{ name: app, key: "k-acme" }]
                providers:
                  - { id: alpha, base_url: "${SIM_ALPHA_URL}", api_key: "sk-alpha" }
                  - { id: beta, base_url: "${SIM_BETA_URL}", api_key: "sk-beta" }
                  - { id: gamma, base_url: "${SIM_GAMMA_URL}", api_key: "sk-gamma" }
                routes:
                  - { id: pair-fast, alias: pair, provider: alpha, model: fast2, capabilities: [tools] }
                  - { id: pair-slow, alias: pair, provider: beta, model: slow60 }
                  - { id: one-only, alias: one, provider: alpha, model: fast2 }
                  - { id: s-quick, alias: slo, provider: gamma, model: quick }
                  - { id: s-steady, alias: slo, provider: alpha, model: steady }
                  - { id: g-old, alias: grow, provider: alpha, model: fast2 }
                  - { id: g-new, alias: grow, provider: beta, model: slow60 }
                  - { id: p-old, alias: growp, provider: alpha, model: fast2 }
                  - { id: p-new, alias: growp, provider: beta, model: slow60 }
                  - { id: a-one, alias: aff, provider: alpha, model: a20, capabilities: [tools] }
                  - { id: a-two, alias: aff, provider: beta, model: b35 }
                  - { id: x-one, alias: affx, provider: alpha, model: a20 }
                  - { id: x-two, alias: affx, provider: beta, model: b35 }
                  - { id: w-alpha, alias: warm, provider: alpha, model: fast2 }
                  - { id: w-beta, alias: warm, provider: beta, model: b35 }
                  - { id: w-gamma, alias: warm, provider: gamma, model: quick }
                  - { id: h-prefill, alias: huge, provider: alpha, model: prefill, context_window: 131072 }
                  - { id: h-steady, alias: huge, provider: beta, model: slow60, context_window: 131072 }
                  - { id: hc-prefill, alias: hugec, provider: alpha, model: prefill, context_window: 131072 }
                  - { id: hc-steady, alias: hugec, provider: beta, model: slow60, context_window: 131072 }
                groups:
                  affx: { slow_bar: 10 }   # both routes always within the bar: only exploration could move a prefix
                  # a 500 ms first-token target: judged on prompts up to 1000 tokens, or (hugec) on every prompt
                  huge: { slo: { first_token: 500ms, standard_prompt_max_tokens: 1000 } }
                  hugec: { slo: { first_token: 500ms, standard_prompt_max_tokens: 100000 } }
            """;
    static GatewayHarness gw;

    @BeforeAll
    static void start() {
        ModelScript base = ModelScript.defaults().withLength(6);
        gw = GatewayHarness.start(YAML, Map.of(
                "alpha", SimConfig.of(1).withApiKey("sk-alpha")
                        .withModel("fast2", base.withLatency(ModelScript.Latency.of(2, 0)))
                        .withModel("a20", base.withLatency(ModelScript.Latency.of(20, 0)))
                        .withModel("steady", base.withLength(12).withLatency(ModelScript.Latency.of(30, 1000)))
                        // 2 ms plus a second per thousand prompt tokens to the first token: prefill dominates
                        .withModel("prefill", base.withLatency(ModelScript.Latency.of(2, 0)
                                .withTtftPer1kPromptTokens(1000))),
                "beta", SimConfig.of(1).withApiKey("sk-beta")
                        .withModel("slow60", base.withLatency(ModelScript.Latency.of(60, 0)))
                        .withModel("b35", base.withLatency(ModelScript.Latency.of(35, 0))),
                "gamma", SimConfig.of(1).withApiKey("sk-gamma")
                        .withModel("quick", base.withLength(12).withLatency(ModelScript.Latency.of(2, 40)))));
        RestAssured.baseURI = gw.baseUrl();
        // the first requests of a fresh JVM are slow (class loading, JIT, connection set-up): spend them on a
        // throwaway alias, so the routes under test are measured at their own speed
        warm("warm", "alpha", "beta", "gamma");
        warm("pair", "alpha", "beta");
        warm("aff", "alpha", "beta");
    }

    @AfterAll
    static void stop() {
        gw.close();
    }

    /** Measures each listed provider's route of the alias with forced requests. */
    static void warm(String alias, String... providers) {
        for (String p : providers) {
            for (int i = 0; i < 3; i++) {
                chat(alias, "warm up " + i, ",\"provider\":{\"only\":[\"" + p + "\"]}");
            }
        }
    }

    static Response send(String alias, String content, String extra) {
        return given().auth().oauth2("k-acme").contentType("application/json")
                .body("{\"model\":\"" + alias + "\",\"stream\":true,\"messages\":[{\"role\":\"user\",\"content\":\""
                        + content + "\"}]" + extra + "}")
                .post("/v1/chat/completions");
    }

    static String chat(String alias, String content, String extra) {
        Response r = send(alias, content, extra);
        assertEquals(200, r.statusCode(), r.asString());
        return r.header("x-hedgerow-route");
    }

    static List<String> routes(int n, String alias, String extra) {
        List<String> out = new ArrayList<>();
        for (int i = 0; i < n; i++) {
            out.add(chat(alias, "question " + i, extra));
        }
        return out;
    }

    static void blob(String route, String name, String value) {
        gw.core().store().putRouteBlob("acme/" + route, name, value, null).await().indefinitely();
    }

    /** A prompt whose first 64-token blocks are shared by every request built from the same {@code topic}. */
    static String withPrefix(String topic, String question) {
        return ("Context about " + topic + ": " + "the quick brown fox jumps over the lazy dog ".repeat(30)
                + " Question: " + question).trim();
    }

    @Test
    void theRoutePredictedFastestServesAndTheSlowRouteIsPassedOver() {
        assertEquals(Set.of("pair-fast"), new HashSet<>(routes(5, "pair", "")));
    }

    @Test
    void aSlowRouteStillServesWhenItIsTheOnlyCapacity() {
        assertEquals(Set.of("pair-slow"), new HashSet<>(routes(3, "pair", ",\"provider\":{\"ignore\":[\"alpha\"]}")));
    }

    @Test
    void aRouteFailingVerificationIsExcluded() {
        blob("pair-fast", Router.VERIFICATION, "failed: wrong model");
        try {
            assertEquals(Set.of("pair-slow"), new HashSet<>(routes(3, "pair", "")));
        } finally {
            blob("pair-fast", Router.VERIFICATION, "passed");
        }
        assertEquals(Set.of("pair-fast"), new HashSet<>(routes(2, "pair", "")));
    }

    @Test
    void aRouteWhoseOperatorIsNotInGoodStandingIsExcluded() {
        blob("pair-fast", Router.STANDING, "suspended");
        try {
            assertEquals(Set.of("pair-slow"), new HashSet<>(routes(3, "pair", "")));
        } finally {
            blob("pair-fast", Router.STANDING, Router.GOOD_STANDING);
        }
        assertEquals(Set.of("pair-fast"), new HashSet<>(routes(2, "pair", "")));
    }

    @Test
    void whenStandingExcludesEveryRouteTheRequestIsRefusedNamingWhy() {
        blob("one-only", Router.STANDING, "suspended");
        try {
            send("one", "hi", "").then().statusCode(503)
                    .body("error.code", equalTo("no_healthy_provider"))
                    .body("error.message", containsString("one-only: operator not in good standing"));
        } finally {
            blob("one-only", Router.STANDING, Router.GOOD_STANDING);
        }
    }

    @Test
    void supplyBelowTheSloServesOnlyWhenNothingBetterAndReturnsOnceMeasuredHealthy() {
        // both measured: s-quick has the faster first token but decodes at 40 tokens/s, below the 50 target
        warm("slo", "gamma", "alpha");
        assertEquals(Set.of("s-steady"), new HashSet<>(routes(4, "slo", "")));
        assertEquals(Set.of("s-quick"), new HashSet<>(routes(1, "slo", ",\"provider\":{\"ignore\":[\"alpha\"]}")));
        // the operator fixes the route; traffic it gets while nothing better is available measures it healthy
        gw.sim("gamma").script("quick", ModelScript.defaults().withLength(12)
                .withLatency(ModelScript.Latency.of(2, 1000)));
        routes(3, "slo", ",\"provider\":{\"only\":[\"gamma\"]}");
        assertEquals(Set.of("s-quick"), new HashSet<>(routes(4, "slo", "")));
    }

    /**
     * Keln judges the first-token target on standard-size prompts: a huge prompt's prefill is slow on every route and
     * says nothing about the target. The same routes under two groups: huge prompts outside the standard size leave
     * the route that served them meeting the target; counted (hugec), they put it below, and it is passed over.
     */
    @Test
    void hugePromptsDoNotCountAgainstTheFirstTokenTarget() {
        String huge = "word ".repeat(1500).strip();   // ~1500 tokens: ~1.5 s to the first token, over the target
        for (String alias : List.of("huge", "hugec")) {
            warm(alias, "alpha", "beta");
            for (int i = 0; i < 3; i++) {
                chat(alias, huge + " " + i, ",\"provider\":{\"only\":[\"alpha\"]}");
            }
        }
        assertEquals("meets", slo("huge", "h-prefill"));
        assertEquals("below", slo("hugec", "hc-prefill"));
        assertEquals(Set.of("hc-steady"), new HashSet<>(routes(4, "hugec", "")), "below the target: passed over");
    }

    private static String slo(String alias, String route) {
        Org org = gw.core().catalog().current().org("acme").orElseThrow();
        RequestFacts facts = new RequestFacts(20, null, true, false, Set.of(), Set.of(), ProviderPrefs.NONE,
                List.of(), Map.of(), "x");
        return gw.core().router().explain(org, alias, facts).await().indefinitely().routes().stream()
                .filter(r -> r.routeId().equals(route)).findFirst().orElseThrow().slo();
    }

    @Test
    void aNewRouteIsMeasuredByBoundedExploration() {
        routes(3, "grow", ",\"provider\":{\"only\":[\"alpha\"]}");
        List<String> first = routes(40, "grow", "");
        int explored = Collections.frequency(first, "g-new");
        assertTrue(explored >= 1 && explored <= 8, "explored " + explored + " of 40: " + first);
        List<String> next = routes(10, "grow", "");
        assertEquals(0, Collections.frequency(next, "g-new"), "measured slow now: " + next);
    }

    /**
     * Where every request shares a prefix (a system prompt), every request is placed by affinity: a new route is
     * still explored, once measured no more. Before, a request placed by affinity never explored, so in such a group
     * traffic never measured a new route.
     */
    @Test
    void aNewRouteIsExploredWhereEveryRequestSharesAPrefixAndOnceMeasuredNoMore() {
        chat("growp", withPrefix("sagas", "why?"), ",\"provider\":{\"only\":[\"alpha\"]}");
        awaitAffinity("growp", withPrefix("sagas", "and?"), "p-old");
        List<String> first = new ArrayList<>();
        for (int i = 0; i < 40; i++) {
            first.add(chat("growp", withPrefix("sagas", "and then " + i + "?"), ""));
        }
        int explored = Collections.frequency(first, "p-new");
        assertTrue(explored >= 1 && explored <= 8, "explored " + explored + " of 40: " + first);
        List<String> next = new ArrayList<>();
        for (int i = 0; i < 20; i++) {
            next.add(chat("growp", withPrefix("sagas", "and after " + i + "?"), ""));
        }
        assertEquals(Collections.nCopies(20, "p-old"), next, "measured slow now, and the prefix is p-old's");
    }

    @Test
    void requestsSharingAPrefixGoBackToTheRouteThatServedIt() {
        // a-two is the slower of the two (within the bar); it served the prefix first
        chat("aff", withPrefix("tides", "why?"), ",\"provider\":{\"only\":[\"beta\"]}");
        awaitAffinity("aff", withPrefix("tides", "and?"), "a-two");
        List<String> same = new ArrayList<>();
        for (int i = 0; i < 4; i++) {
            same.add(chat("aff", withPrefix("tides", "and then " + i + "?"), ""));
        }
        assertEquals(List.of("a-two", "a-two", "a-two", "a-two"), same);
        Explanation.RouteView two = explainAff(withPrefix("tides", "once more?")).stream()
                .filter(r -> r.routeId().equals("a-two")).findFirst().orElseThrow();
        assertTrue(two.affinity());
        assertEquals("affinity", two.placement());
        assertTrue(explainAff(withPrefix("volcanoes", "why?")).stream().noneMatch(Explanation.RouteView::affinity));
    }

    /**
     * A prefix two routes served (a system prompt every request shares) goes to the faster of them, not to the last
     * that served it: before, affinity kept only the last, and a route up to {@code slow_bar} slower held all the
     * traffic while the faster one was as warm (found by hunt10).
     */
    @Test
    void aPrefixTwoRoutesServedGoesToTheFasterOfThem() {
        chat("aff", withPrefix("monsoons", "why?"), ",\"provider\":{\"only\":[\"alpha\"]}");
        chat("aff", withPrefix("monsoons", "and how?"), ",\"provider\":{\"only\":[\"beta\"]}"); // a-two: the last
        awaitAffinity("aff", withPrefix("monsoons", "and?"), "a-one");
        awaitAffinity("aff", withPrefix("monsoons", "and?"), "a-two");
        List<String> same = new ArrayList<>();
        for (int i = 0; i < 4; i++) {
            same.add(chat("aff", withPrefix("monsoons", "and then " + i + "?"), ""));
        }
        assertEquals(List.of("a-one", "a-one", "a-one", "a-one"), same);
        List<Explanation.RouteView> views = explainAff(withPrefix("monsoons", "once more?"));
        assertTrue(views.stream().allMatch(Explanation.RouteView::affinity), "both hold the prefix: " + views);
        assertEquals("affinity", views.stream().filter(r -> r.routeId().equals("a-one")).findFirst().orElseThrow()
                .placement());
    }

    @Test
    void explorationNeverMovesARequestAwayFromItsCachedPrefixToAMeasuredRoute() {
        // x-one is faster, so every exploring rotation position would try it first, were the prefix not cached
        warm("affx", "alpha", "beta");
        chat("affx", withPrefix("estuaries", "why?"), ",\"provider\":{\"only\":[\"beta\"]}");
        awaitAffinity("affx", withPrefix("estuaries", "and?"), "x-two");
        List<String> served = new ArrayList<>();
        for (int i = 0; i < 30; i++) { // about three exploring positions (one in ten)
            served.add(chat("affx", withPrefix("estuaries", "and then " + i + "?"), ""));
        }
        assertEquals(Collections.nCopies(served.size(), "x-two"), served);
    }

    /** The explanation of a prompt to the aff group, with its real prefix hashes. */
    static List<Explanation.RouteView> explainAff(String content) {
        return explain("aff", content);
    }

    /**
     * Waits until {@code route}, which served a prompt built like {@code content}, holds its prefix: the affinity
     * write follows the answer's end, so a request sent at once may not see it yet (a loaded full-suite run sent the
     * next four before it and failed).
     */
    static void awaitAffinity(String alias, String content, String route) {
        eventually(() -> explain(alias, content).stream().anyMatch(r -> r.routeId().equals(route) && r.affinity()),
                route + " holds the prefix of " + alias);
    }

    static List<Explanation.RouteView> explain(String alias, String content) {
        try {
            com.fasterxml.jackson.databind.JsonNode body = dev.hedgerow.api.Json.parse("{\"model\":\"" + alias
                    + "\",\"messages\":[{\"role\":\"user\",\"content\":\"" + content + "\"}]}");
            RequestFacts facts = new RequestFacts(100, null, true, false, Set.of(), Set.of(), ProviderPrefs.NONE,
                    gw.core().prefixes().hashRequest(alias, body), Map.of(), content);
            Org org = gw.core().catalog().current().org("acme").orElseThrow();
            return gw.core().router().explain(org, alias, facts).await().indefinitely().routes();
        } catch (java.io.IOException e) {
            throw new AssertionError(e);
        }
    }

    @Test
    void capabilityWinsOverPrefixAffinity() {
        chat("aff", withPrefix("glaciers", "why?"), ",\"provider\":{\"only\":[\"beta\"]}");
        String tools = ",\"tools\":[{\"type\":\"function\",\"function\":{\"name\":\"f\",\"parameters\":{}}}]";
        assertEquals("a-one", chat("aff", withPrefix("glaciers", "use the tool"), tools));
    }

    @Test
    void standingWinsOverPrefixAffinity() {
        chat("aff", withPrefix("comets", "why?"), ",\"provider\":{\"only\":[\"beta\"]}");
        blob("a-two", Router.VERIFICATION, "failed");
        try {
            assertEquals("a-one", chat("aff", withPrefix("comets", "and?"), ""));
        } finally {
            blob("a-two", Router.VERIFICATION, "passed");
        }
    }

    @Test
    void explainListsEveryRouteWithItsChecksPredictionSloAndRank() {
        Org org = gw.core().catalog().current().org("acme").orElseThrow();
        RequestFacts facts = new RequestFacts(500, null, false, false, Set.of("tools"), Set.of(), ProviderPrefs.NONE,
                List.of(), Map.of(), "explain me");
        Explanation e = gw.core().router().explain(org, "pair", facts).await().indefinitely();
        assertEquals("ready", e.outcome());
        Explanation.RouteView fast = e.routes().stream().filter(r -> r.routeId().equals("pair-fast")).findFirst()
                .orElseThrow();
        Explanation.RouteView slow = e.routes().stream().filter(r -> r.routeId().equals("pair-slow")).findFirst()
                .orElseThrow();
        assertEquals(1, fast.rank());
        assertTrue(fast.predicted().measured());
        assertTrue(fast.checks().stream().allMatch(Explanation.Check::passed), fast.checks().toString());
        assertEquals(0, slow.rank());
        Explanation.Check cap = slow.checks().stream().filter(c -> c.filter().equals("capabilities")).findFirst()
                .orElseThrow();
        assertEquals("lacks tools (non-streaming)", cap.detail());
        assertTrue(slow.predicted().meanMs() > fast.predicted().meanMs());
        assertEquals("fast", fast.placement());
        assertTrue(e.toNode().toString().contains("\"route\":\"pair-slow\""));
    }

    @Test
    void explainGivesDifferentPredictionsForAHugeAndAShortPrompt() {
        Org org = gw.core().catalog().current().org("acme").orElseThrow();
        double shortMs = explainOne(org, 500);
        double hugeMs = explainOne(org, 200_000);
        assertTrue(hugeMs > shortMs, shortMs + " vs " + hugeMs);
    }

    private static double explainOne(Org org, int tokens) {
        RequestFacts facts = new RequestFacts(tokens, null, true, false, Set.of(), Set.of(), ProviderPrefs.NONE,
                List.of(), Map.of(), "x");
        return gw.core().router().explain(org, "pair", facts).await().indefinitely().routes().stream()
                .filter(r -> r.routeId().equals("pair-fast")).findFirst().orElseThrow().predicted().meanMs();
    }

    /**
     * A conversation goes back to the route that served its longest prefix, even when a faster route
     * also holds a shorter prefix of it (the shared opening both served): the affinity set is the longest served
     * prefix's holders, not the shortest's.
     */
    @Test
    void theHolderOfTheLongestServedPrefixGoesFirstNotTheFastestHolderOfAShorterOne() {
        String conv = "Earlier turns: " + "a slow river bends around the old mill and the miller sleeps ".repeat(25);
        chat("aff", withPrefix("glaciers", "hello?"), ",\"provider\":{\"only\":[\"alpha\"]}");   // a-one: opening
        chat("aff", withPrefix("glaciers", conv + " first?"), ",\"provider\":{\"only\":[\"beta\"]}"); // a-two: all
        awaitAffinity("aff", withPrefix("glaciers", "again?"), "a-one");
        awaitAffinity("aff", withPrefix("glaciers", conv + " next?"), "a-two");
        List<String> same = new ArrayList<>();
        for (int i = 0; i < 4; i++) {
            same.add(chat("aff", withPrefix("glaciers", conv + " and then " + i + "?"), ""));
        }
        assertEquals(List.of("a-two", "a-two", "a-two", "a-two"), same);
    }
}
