package dev.hedgerow.catalog;

import org.junit.jupiter.api.Test;

import java.io.IOException;
import java.io.InputStream;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.Set;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

class CatalogLoaderTest {
    private static final Map<String, String> FULL_ENV = Map.of(
            "ACME_KEY", "acme-client-secret",
            "ACME_ADMIN_KEY", "acme-admin-secret",
            "FIREWORKS_API_KEY", "fw-upstream-secret");

    static String resource(String name) {
        try (InputStream in = CatalogLoaderTest.class.getClassLoader().getResourceAsStream(name)) {
            return new String(in.readAllBytes(), StandardCharsets.UTF_8);
        } catch (IOException e) {
            throw new IllegalStateException(e);
        }
    }

    static CatalogLoader loader(Map<String, String> env) {
        return new CatalogLoader(env::get);
    }

    @Test
    void minimalFileLoadsWithDocumentedDefaults() {
        Org org = loader(Map.of()).parse(resource("catalog/valid-minimal.yaml")).orgs().get(0);

        Route r = org.routes().get(0);
        assertEquals("kimi3-fireworks", r.id());
        assertEquals(CatalogLoader.DEFAULT_WEIGHT, r.weight());
        assertEquals(100, r.weight());
        assertEquals(1, r.priority());
        assertEquals(131_072, r.contextWindow());
        assertEquals(Set.of(), r.capabilities());
        assertEquals(Set.of(), r.parameters());
        assertEquals(Route.Price.FREE, r.price());
        assertNull(r.description());
        assertFalse(r.embeddings());
        Provider p = org.provider("fireworks").orElseThrow();
        assertEquals(Dialect.OPENAI, p.dialect());
        assertEquals("https://api.fireworks.ai/inference/v1", p.baseUrl(), "trailing slash dropped");
        assertNull(p.apiKey());
        assertEquals(List.of(), org.adminKeys());
        assertEquals(RoutingRules.defaults(), org.routing());
    }

    @Test
    void aliasWithRoutesButNoGroupEntryGetsDefaultSettings() {
        Org org = loader(Map.of()).parse(resource("catalog/valid-minimal.yaml")).orgs().get(0);

        assertEquals(Map.of(), org.groups());
        assertEquals(GroupSettings.defaults(), org.group("kimi3"));
    }

    @Test
    void everyFieldOfTheSchemaIsRead() {
        Org acme = loader(FULL_ENV).parse(resource("catalog/valid-full.yaml")).orgs().get(0);

        Provider self = acme.provider("selfhosted").orElseThrow();
        assertEquals(Dialect.VLLM, self.dialect());
        assertEquals("http://10.0.0.7:8000/metrics", self.metricsUrl());
        assertEquals(Keys.sha256Hex("capacity-secret"), self.capacityKeyHash());
        assertEquals("fw-upstream-secret", acme.provider("fireworks").orElseThrow().apiKey());

        Route fw = acme.route("kimi3-fw").orElseThrow();
        assertEquals(70, fw.weight());
        assertEquals(0, fw.priority());
        assertEquals(262_144, fw.contextWindow());
        assertEquals(Set.of("tools", "json_mode:nonstream", "prefill"), fw.capabilities());
        assertEquals(Set.of("temperature", "top_p", "seed"), fw.parameters());
        assertEquals(new Route.Price(0.6, 2.5), fw.price());
        assertEquals("general chat and tool use", fw.description());
        assertEquals(List.of("primary"), fw.tags());
        assertTrue(acme.route("embed").orElseThrow().embeddings());
        assertTrue(acme.route("kimi3-selfhosted").isPresent());

        GroupSettings g = acme.group("kimi3");
        assertEquals(Strategy.LOWEST_LATENCY, g.strategy());
        assertFalse(g.resumeMidStream());
        assertFalse(g.hedging());
        assertEquals(Duration.ofSeconds(45), g.headHold());
        assertEquals(new GroupSettings.Breaker(3, Duration.ofSeconds(10)), g.breaker());
        assertEquals(new GroupSettings.Retry(5, 1,
                java.util.Set.of(FailoverCriterion.ERROR, FailoverCriterion.TIMEOUT, FailoverCriterion.HTTP_429),
                Duration.ofMillis(1500)), g.retry());
        assertEquals(new GroupSettings.Timeouts(Duration.ofSeconds(2), Duration.ofMinutes(2), Duration.ofMillis(500),
                Duration.ofMillis(250), Duration.ofSeconds(90), Duration.ofSeconds(3), Duration.ZERO), g.timeouts());
        assertEquals(new GroupSettings.Balancer("X-User-Id", GroupSettings.LatencyStrategy.E2E,
                GroupSettings.TokensCountStrategy.COST, Duration.ofHours(1), null, GroupSettings.DistanceMetric.COSINE,
                0.8, 1.5, null), g.balancer());
        assertEquals(new GroupSettings.Slo(80, Duration.ofSeconds(1), 4096), g.slo());

        GroupSettings expert = acme.group("expert");
        assertEquals(Strategy.SEMANTIC, expert.strategy());
        assertEquals("embed", expert.balancer().embeddingsRoute());
        assertEquals(GroupSettings.DistanceMetric.EUCLIDEAN, expert.balancer().distanceMetric());
        assertEquals(1.2, expert.balancer().threshold());
        assertEquals(new RoutingRules("X-Hedgerow-Model", false, Map.of("kimi-k2", "kimi3",
                "moonshotai/kimi-k2:latest", "kimi3", "specialist", "expert")), acme.routing());
        assertEquals(List.of("kimi-k2", "moonshotai/kimi-k2:latest"), acme.routing().namesOf("kimi3"));
        assertEquals("expert", acme.routing().alias("specialist"));
        assertEquals("kimi3", acme.routing().alias("kimi3"));
    }

    private static GroupSettings group(String settings) {
        return loader(Map.of()).parse("""
                orgs:
                  - id: acme
                    keys: [{ name: app, key: k1 }]
                    providers: [{ id: p, base_url: "https://p.example/v1" }]
                    routes: [{ alias: a, provider: p, model: m }]
                    groups:
                      a: %s
                """.formatted(settings)).orgs().get(0).group("a");
    }

    @Test
    void kongsAlgorithmSpellingsAreHedgerowsStrategies() {
        Map<String, Strategy> kong = Map.of("round-robin", Strategy.WEIGHTED,
                "consistent-hashing", Strategy.CONSISTENT_HASHING, "least-connections", Strategy.LEAST_CONNECTIONS,
                "lowest-usage", Strategy.LOWEST_USAGE, "lowest-latency", Strategy.LOWEST_LATENCY,
                "priority", Strategy.PRIORITY);
        kong.forEach((spelling, strategy) -> {
            assertEquals(strategy, group("{ strategy: " + spelling + " }").strategy(), spelling);
            assertEquals(strategy, group("{ algorithm: " + spelling + " }").strategy(), "algorithm: " + spelling);
        });
    }

    @Test
    void kongsKnobSpellingsAreHedgerowsValues() {
        Map<String, GroupSettings.TokensCountStrategy> kong = Map.of(
                "prompt-tokens", GroupSettings.TokensCountStrategy.PROMPT_TOKENS,
                "completion-tokens", GroupSettings.TokensCountStrategy.COMPLETION_TOKENS,
                "total-tokens", GroupSettings.TokensCountStrategy.TOTAL_TOKENS,
                "cost", GroupSettings.TokensCountStrategy.COST);
        kong.forEach((spelling, value) -> assertEquals(value,
                group("{ strategy: lowest-usage, tokens_count_strategy: " + spelling + " }").balancer()
                        .tokensCountStrategy(), spelling));
        assertEquals(GroupSettings.LatencyStrategy.E2E,
                group("{ algorithm: lowest-latency, latency_strategy: e2e }").balancer().latencyStrategy());
    }

    @Test
    void aKongSpelledGroupEqualsItsHedgerowSpelledTwin() {
        assertEquals(group("{ strategy: lowest_usage, tokens_count_strategy: completion_tokens }"),
                group("{ algorithm: lowest-usage, tokens_count_strategy: completion-tokens }"));
        // both keys may be given when they name the same strategy
        assertEquals(group("{ strategy: weighted }"), group("{ strategy: weighted, algorithm: round-robin }"));
    }

    @Test
    void kongsBalancerBlockIsTheSameGroupAsTheFlatKeys() {
        GroupSettings nested = group("""
                { balancer: { algorithm: consistent-hashing, hash_on_header: X-Session, retries: 3,
                              failover_criteria: [error, timeout, http_429, non_idempotent],
                              connect_timeout: 60000, read_timeout: 60000, write_timeout: 60000,
                              latency_strategy: e2e, tokens_count_strategy: total-tokens,
                              max_fails: 3, fail_timeout: 10000, slots: 10000 },
                  hedging: false }""");
        GroupSettings flat = group("""
                { strategy: consistent_hashing, hash_on_header: X-Session, retries: 3,
                  failover_criteria: [error, timeout, http_429, non_idempotent],
                  connect_timeout: 60s, read_timeout: 1m, write_timeout: 60000ms,
                  latency_strategy: e2e, tokens_count_strategy: total_tokens,
                  breaker: { max_fails: 3, fail_timeout: 10s }, hedging: false }""");
        assertEquals(flat, nested);
        assertEquals(Strategy.CONSISTENT_HASHING, nested.strategy());
        assertEquals("X-Session", nested.balancer().hashOnHeader());
        assertEquals(4, nested.retry().maxAttempts());
        assertEquals(Duration.ofSeconds(60), nested.timeouts().connect(), "Kong's 60000 is milliseconds");
        assertEquals(Duration.ofSeconds(60), nested.timeouts().read());
        assertEquals(Duration.ofSeconds(60), nested.timeouts().write());
        assertEquals(new GroupSettings.Breaker(3, Duration.ofSeconds(10)), nested.breaker());
    }

    @Test
    void aSettingGivenFlatAndUnderBalancerLoadsWhenBothNameTheSameValue() {
        assertEquals(group("{ strategy: weighted, retries: 2, connect_timeout: 5s, "
                        + "breaker: { fail_timeout: 10s } }"),
                group("{ strategy: weighted, retries: 2, connect_timeout: 5s, breaker: { fail_timeout: 10s }, "
                        + "balancer: { algorithm: round-robin, retries: 2, connect_timeout: 5000, "
                        + "fail_timeout: 10000 } }"));
    }

    @Test
    void kongsTimeoutsTakeABareNumberAsMillisecondsAndOtherDurationsAsSeconds() {
        GroupSettings g = group("{ connect_timeout: 60000, read_timeout: 250, write_timeout: 1500, "
                + "breaker: { fail_timeout: 10000 }, first_token_ceiling: 45, stall_floor: 2.5 }");
        assertEquals(Duration.ofMinutes(1), g.timeouts().connect());
        assertEquals(Duration.ofMillis(250), g.timeouts().read());
        assertEquals(Duration.ofMillis(1500), g.timeouts().write());
        assertEquals(Duration.ofSeconds(10), g.breaker().failTimeout());
        assertEquals(Duration.ofSeconds(45), g.timeouts().firstTokenCeiling(), "not one of Kong's: seconds");
        assertEquals(Duration.ofMillis(2500), g.timeouts().stallFloor());
        // with a unit, a Kong timeout reads as any duration
        assertEquals(Duration.ofSeconds(90), group("{ read_timeout: 1m30s }").timeouts().read());
    }

    @Test
    void requestTimeoutIsOffUnlessAGroupSetsItWithAUnit() {
        assertEquals(Duration.ZERO, group("{ read_timeout: 3000 }").timeouts().request());
        assertFalse(group("{ read_timeout: 3000 }").timeouts().bounded());
        GroupSettings g = group("{ read_timeout: 1000, request_timeout: 3s }");
        assertEquals(Duration.ofSeconds(3), g.timeouts().request());
        assertTrue(g.timeouts().bounded());
        assertEquals(Duration.ofMillis(2500), group("{ request_timeout: 2500ms }").timeouts().request());
        assertFalse(group("{ request_timeout: off }").timeouts().bounded());
        assertFalse(group("{ request_timeout: 0 }").timeouts().bounded());
    }

    @Test
    void kongSpelledGroupsAreStoredUnderHedgerowsNames() {
        Org org = loader(Map.of()).parse("""
                orgs:
                  - id: acme
                    keys: [{ name: app, key: k1 }]
                    providers: [{ id: p, base_url: "https://p.example/v1" }]
                    routes: [{ alias: a, provider: p, model: m }]
                    groups:
                      a: { algorithm: round-robin, tokens_count_strategy: total-tokens }
                """).orgs().get(0);
        String json = CatalogCodec.toJson(org);
        assertTrue(json.contains("\"strategy\":\"weighted\""), json);
        assertTrue(json.contains("\"tokens_count_strategy\":\"total_tokens\""), json);
        assertFalse(json.contains("round-robin") || json.contains("total-tokens") || json.contains("algorithm"),
                json);
        assertEquals(org, CatalogCodec.fromJson(json));
    }

    @Test
    void distanceMetricDefaultsToCosineAndEachMetricHasItsOwnDefaultThreshold() {
        GroupSettings.Balancer cosine = group("{ strategy: weighted }").balancer();
        assertEquals(GroupSettings.DistanceMetric.COSINE, cosine.distanceMetric());
        assertEquals(0.5, cosine.threshold(), "a similarity of at least 0.5");
        GroupSettings.Balancer euclidean = group("{ distance_metric: euclidean }").balancer();
        assertEquals(GroupSettings.DistanceMetric.EUCLIDEAN, euclidean.distanceMetric());
        assertEquals(1.0, euclidean.threshold(), "a distance of at most 1: cosine 0.5 for unit-length embeddings");
        assertEquals(1.7, group("{ distance_metric: euclidean, threshold: 1.7 }").balancer().threshold());
        assertEquals(0.0, group("{ distance_metric: euclidean, threshold: 0 }").balancer().threshold());
    }

    @Test
    void kongRetriesCountsAttemptsAfterTheFirst() {
        LoadedCatalog c = loader(FULL_ENV).parse(resource("catalog/valid-full.yaml"));

        assertEquals(5, c.orgs().get(0).group("kimi3").retry().maxAttempts(), "retries: 4");
        assertEquals(2, c.orgs().get(1).group("kimi3").retry().maxAttempts(), "max_attempts: 2");
    }

    @Test
    void environmentReferencesAreSubstituted() {
        Org acme = loader(FULL_ENV).parse(resource("catalog/valid-full.yaml")).orgs().get(0);

        assertEquals(Keys.sha256Hex("acme-client-secret"), acme.keys().get(0).sha256());
        assertEquals(Keys.sha256Hex("acme-admin-secret"), acme.adminKeys().get(0).sha256());
    }

    @Test
    void defaultAppliesWhenVariableIsUnset() {
        Org acme = loader(FULL_ENV).parse(resource("catalog/valid-full.yaml")).orgs().get(0);

        assertEquals(Keys.sha256Hex("acme-batch-default"), acme.keys().get(1).sha256());
    }

    @Test
    void setVariableWinsOverDefault() {
        Map<String, String> env = new java.util.HashMap<>(FULL_ENV);
        env.put("ACME_BATCH_KEY", "from-env");

        Org acme = loader(env).parse(resource("catalog/valid-full.yaml")).orgs().get(0);

        assertEquals(Keys.sha256Hex("from-env"), acme.keys().get(1).sha256());
    }

    @Test
    void referencesInsideLongerValuesAndNumbersAreSubstituted() {
        String yaml = """
                orgs:
                  - id: acme
                    keys: [{ name: app, key: "k-${SUFFIX}" }]
                    providers: [{ id: p, base_url: "${HOST:-http://localhost:1}/v1" }]
                    routes: [{ alias: a, provider: p, model: m, weight: "${W}" }]
                """;

        Org org = loader(Map.of("SUFFIX", "xyz", "W", "7")).parse(yaml).orgs().get(0);

        assertEquals(Keys.sha256Hex("k-xyz"), org.keys().get(0).sha256());
        assertEquals("http://localhost:1/v1", org.providers().get(0).baseUrl());
        assertEquals(7, org.routes().get(0).weight());
    }

    @Test
    void doubleDollarIsALiteralReference() {
        String yaml = """
                orgs:
                  - id: acme
                    keys: [{ name: app, key: "k" }]
                    providers: [{ id: p, base_url: "http://localhost:1/v1" }]
                    routes: [{ alias: a, provider: p, model: m, description: "costs $${PRICE}" }]
                """;

        Org org = loader(Map.of()).parse(yaml).orgs().get(0);

        assertEquals("costs ${PRICE}", org.routes().get(0).description());
    }

    @Test
    void sourceHashChangesWithTheEnvironmentItReferences() {
        String text = resource("catalog/valid-full.yaml");
        Map<String, String> other = new java.util.HashMap<>(FULL_ENV);
        other.put("ACME_KEY", "rotated");

        String a = loader(FULL_ENV).parse(text).sourceHash();
        String b = loader(other).parse(text).sourceHash();

        assertNotEquals(a, b);
        assertEquals(a, loader(FULL_ENV).parse(text).sourceHash());
        assertEquals(CatalogCodec.sourceHash(loader(FULL_ENV).substitute(text)), a);
    }

    @Test
    void demoConfigLoadsWithoutAnyEnvironment() {
        LoadedCatalog c = loader(Map.of()).loadResource(CatalogLoader.DEMO_RESOURCE);

        Org demo = c.orgs().get(0);
        assertEquals("demo", demo.id());
        assertEquals(Keys.sha256Hex("hr-demo-key"), demo.keys().get(0).sha256());
        assertEquals(Keys.sha256Hex("hr-demo-admin"), demo.adminKeys().get(0).sha256());
        assertEquals(List.of("openrouter", "digitalocean", "fireworks", "together"),
                demo.providers().stream().map(Provider::id).toList());
        assertEquals("http://127.0.0.1:8090/v1", demo.provider("fireworks").orElseThrow().baseUrl());
        assertEquals(4, demo.routesOf("kimi3").size());
        assertEquals(Strategy.RR_HEALTH, demo.group("kimi3").strategy());
        assertEquals(3, demo.routesOf("fast").size());
        assertEquals(Strategy.AUTO, demo.group("fast").strategy());
        assertTrue(demo.routes().stream().anyMatch(Route::embeddings));
    }

    @Test
    void demoConfigFollowsSimulatorAddress() {
        Map<String, String> env = Map.of("SIM_TOGETHER_URL", "http://127.0.0.1:49152/v1", "HEDGEROW_DEMO_KEY", "mine");

        Org demo = loader(env).loadResource(CatalogLoader.DEMO_RESOURCE).orgs().get(0);

        assertEquals("http://127.0.0.1:49152/v1", demo.provider("together").orElseThrow().baseUrl());
        assertEquals(Keys.sha256Hex("mine"), demo.keys().get(0).sha256());
    }

    @Test
    void loadConfiguredFallsBackToTheDemoWithoutHedgerowConfig() {
        assertEquals("demo", loader(Map.of()).loadConfigured().orgs().get(0).id());
    }
}
