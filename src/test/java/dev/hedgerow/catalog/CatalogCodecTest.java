package dev.hedgerow.catalog;

import org.junit.jupiter.api.Test;

import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.Set;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

class CatalogCodecTest {
    private static final Map<String, String> ENV = Map.of("ACME_KEY", "a", "ACME_ADMIN_KEY", "b",
            "FIREWORKS_API_KEY", "c");

    private static List<Org> fullOrgs() {
        return new CatalogLoader(ENV::get).parse(CatalogLoaderTest.resource("catalog/valid-full.yaml")).orgs();
    }

    @Test
    void loadedOrgsRoundTripExactly() {
        for (Org org : fullOrgs()) {
            assertEquals(org, CatalogCodec.fromJson(CatalogCodec.toJson(org)));
        }
    }

    @Test
    void demoOrgRoundTripsExactly() {
        Org demo = new CatalogLoader(k -> null).loadResource(CatalogLoader.DEMO_RESOURCE).orgs().get(0);
        assertEquals(demo, CatalogCodec.fromJson(CatalogCodec.toJson(demo)));
    }

    @Test
    void handBuiltOrgWithNullsAndOddValuesRoundTrips() {
        GroupSettings.Retry retry = new GroupSettings.Retry(1, 0, java.util.Set.of(),
                Duration.ZERO);
        GroupSettings g = new GroupSettings(Strategy.CONSISTENT_HASHING, false, true,
                new GroupSettings.Breaker(7, Duration.ofNanos(1_500)), retry, GroupSettings.Timeouts.defaults(),
                new GroupSettings.Balancer("X-Session", GroupSettings.LatencyStrategy.TPOT,
                        GroupSettings.TokensCountStrategy.PROMPT_TOKENS, Duration.ofMinutes(59), null,
                        GroupSettings.DistanceMetric.EUCLIDEAN, 7.25, 1e-9, null),
                new GroupSettings.Slo(12.75, Duration.ofMillis(1), 1), Duration.ofNanos(2_500));
        Org org = new Org("o", List.of(), List.of(new ApiKey("ops", Keys.sha256Hex("x"))),
                List.of(new Provider("p", "http://h:1", null, Dialect.ANTHROPIC, null, null)),
                List.of(new Route("r", "vendor/model:free", "p", "m", 0, 0, 1, Set.of("tools:stream"), Set.of(),
                        new Route.Price(0.1, 1e6), "ü \"quoted\"\n", null)),
                Map.of("vendor/model:free", g), new RoutingRules(null, false),
                new HedgeBudget(0.025, 7, Duration.ofSeconds(90)));

        assertEquals(org, CatalogCodec.fromJson(CatalogCodec.toJson(org)));
    }

    /**
     * A usage_window stored before the 1 h bound (an older version's admin edit) is read as 1 h: every request's
     * routing summed its minutes in Redis (found by review7).
     */
    @Test
    void aStoredUsageWindowOverTheBoundIsReadAsTheBound() {
        Org org = fullOrgs().get(0);
        String json = CatalogCodec.toJson(org).replace("\"usage_window\":\"PT10M\"", "\"usage_window\":\"PT720H\"");
        assertTrue(json.contains("PT720H"), "precondition: " + json);
        for (GroupSettings g : CatalogCodec.fromJson(json).groups().values()) {
            assertEquals(Duration.ofHours(1), g.balancer().usageWindow());
        }
    }

    @Test
    void outputIsStableAndUsesExplicitFieldNames() {
        Org org = fullOrgs().get(0);
        String json = CatalogCodec.toJson(org);

        assertEquals(json, CatalogCodec.toJson(CatalogCodec.fromJson(json)));
        assertTrue(json.startsWith("{\"schema\":1,\"id\":\"acme\",\"keys\":[{\"name\":\"app\",\"sha256\":\""), json);
        assertTrue(json.contains("\"context_window\":262144"), json);
        assertTrue(json.contains("\"breaker\":{\"max_fails\":3,\"fail_timeout\":\"PT10S\"}"), json);
        assertTrue(json.contains("\"capabilities\":[\"json_mode:nonstream\",\"prefill\",\"tools\"]"), json);
    }

    @Test
    void aJudgeIsStoredWithEverySettingAndAGroupWithoutOneHasNone() {
        Org globex = fullOrgs().get(1);
        GroupSettings.Judge judge = globex.group("judged").balancer().judge();
        assertEquals(new GroupSettings.Judge("grader", "Score the response from 1 to 100. Answer with the number only.",
                0.25, 5, false, true, false, 6, Duration.ofSeconds(15)), judge);
        String json = CatalogCodec.toJson(globex);
        assertTrue(json.contains("\"tokens_count_strategy\":\"llm_accuracy\""), json);
        assertTrue(json.contains("\"judge\":{\"route\":\"grader\""), json);
        assertEquals(judge, CatalogCodec.fromJson(json).group("judged").balancer().judge());
        assertEquals(null, CatalogCodec.fromJson(json).group("kimi3").balancer().judge());
    }

    @Test
    void theHeadHoldIsStoredAndAGroupStoredBeforeItHadOneGetsTheDefault() {
        Org org = fullOrgs().get(0);
        String json = CatalogCodec.toJson(org);
        assertTrue(json.contains("\"head_hold\":\"PT45S\""), json);
        assertEquals(Duration.ofSeconds(45), CatalogCodec.fromJson(json).group("kimi3").headHold());

        Org old = CatalogCodec.fromJson("""
                {"id":"o","routes":[{"id":"r","alias":"a","provider":"p","model":"m"}],
                 "groups":{"a":{"strategy":"auto","hedging":false}}}""");
        assertEquals(GroupSettings.DEFAULT_HEAD_HOLD, old.group("a").headHold());
    }

    @Test
    void theDistanceMetricIsStoredAndAGroupStoredBeforeItHadOneIsCosine() {
        Org org = fullOrgs().get(0);
        assertEquals(GroupSettings.DistanceMetric.EUCLIDEAN, org.group("expert").balancer().distanceMetric());
        String json = CatalogCodec.toJson(org);
        assertTrue(json.contains("\"distance_metric\":\"euclidean\",\"threshold\":1.2"), json);
        assertEquals(org.group("expert"), CatalogCodec.fromJson(json).group("expert"));

        Org old = CatalogCodec.fromJson("""
                {"id":"o","routes":[{"id":"r","alias":"a","provider":"p","model":"m"}],
                 "groups":{"a":{"strategy":"semantic","balancer":{"embeddings_route":"r","threshold":0.7}}}}""");
        assertEquals(GroupSettings.DistanceMetric.COSINE, old.group("a").balancer().distanceMetric());
        assertEquals(0.7, old.group("a").balancer().threshold());
    }

    @Test
    void missingOptionalFieldsTakeDefaults() {
        Org org = CatalogCodec.fromJson("""
                {"id":"o","routes":[{"id":"r","alias":"a","provider":"p","model":"m"}],
                 "groups":{"a":{"strategy":"weighted","future_field":1}}}""");

        Route r = org.routes().get(0);
        assertEquals(100, r.weight());
        assertEquals(131_072, r.contextWindow());
        assertEquals(GroupSettings.defaults().withStrategy(Strategy.WEIGHTED), org.group("a"));
        assertEquals(RoutingRules.defaults(), org.routing());
    }

    @Test
    void newerSchemaIsRefused() {
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
                () -> CatalogCodec.fromJson("{\"schema\":2,\"id\":\"o\"}"));
        assertTrue(e.getMessage().contains("schema 2"), e.getMessage());
    }

    @Test
    void wrongTypeNamesTheField() {
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> CatalogCodec.fromJson(
                "{\"id\":\"o\",\"routes\":[{\"id\":\"r\",\"alias\":\"a\",\"provider\":\"p\",\"model\":\"m\","
                        + "\"weight\":\"heavy\"}]}"));
        assertEquals("stored catalog: routes[0].weight must be an integer", e.getMessage());
    }

    @Test
    void contentHashFollowsContent() {
        List<Org> orgs = fullOrgs();

        assertEquals(CatalogCodec.contentHash(orgs.get(0)), CatalogCodec.contentHash(
                CatalogCodec.fromJson(CatalogCodec.toJson(orgs.get(0)))));
        assertNotEquals(CatalogCodec.contentHash(orgs.get(0)), CatalogCodec.contentHash(orgs.get(1)));
    }
}
