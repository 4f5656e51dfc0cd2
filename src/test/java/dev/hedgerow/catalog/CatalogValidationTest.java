package dev.hedgerow.catalog;

import org.junit.jupiter.api.Test;

import java.time.Duration;
import java.util.List;
import java.util.Map;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

class CatalogValidationTest {
    private static final String ORG = """
            orgs:
              - id: acme
                keys: [{ name: app, key: k1 }]
                providers:
                  - { id: fireworks, base_url: "https://api.fireworks.ai/v1" }
                routes:
                  - { alias: kimi3, provider: fireworks, model: m }
            """;

    private static List<CatalogError> errors(String yaml, Map<String, String> env) {
        CatalogException e = assertThrows(CatalogException.class, () -> new CatalogLoader(env::get).parse(yaml));
        return e.errors();
    }

    private static List<CatalogError> errors(String yaml) {
        return errors(yaml, Map.of());
    }

    /** The one error at {@code path}; fails listing all errors when there is none or more than one. */
    private static CatalogError errorAt(List<CatalogError> errors, String path) {
        List<CatalogError> at = errors.stream().filter(e -> e.path().equals(path)).toList();
        if (at.size() != 1) {
            fail("expected one error at " + path + " but got: " + errors);
        }
        return at.get(0);
    }

    private static void assertOnlyError(String yaml, String expected) {
        List<CatalogError> errors = errors(yaml);
        assertEquals(List.of(expected), errors.stream().map(CatalogError::toString).toList());
    }

    private static String withGroup(String settings) {
        return ORG + "    groups:\n      kimi3: " + settings + "\n";
    }

    private static String withRoute(String route) {
        return ORG + "      - " + route + "\n";
    }

    @Test
    void validBaseLoads() {
        assertEquals(1, new CatalogLoader(k -> null).parse(ORG).orgs().size());
    }

    @Test
    void revisionIsAPositiveWholeNumberAndOptional() {
        assertEquals(0, new CatalogLoader(k -> null).parse(ORG).revision(), "none");
        assertEquals(7, new CatalogLoader(k -> null).parse("revision: 7\n" + ORG).revision());
        assertEquals(20261201, new CatalogLoader(Map.of("REV", "20261201")::get)
                .parse("revision: ${REV}\n" + ORG).revision(), "from the environment (a CI build number)");
        assertEquals(3, new CatalogLoader(k -> null).parse(ORG + "revision: \"3\"\n").revision(), "anywhere at the top");
    }

    @Test
    void aRevisionThatIsNotAPositiveWholeNumberIsAnErrorAtItsPath() {
        for (String bad : List.of("0", "-1", "two", "1.5", "1e3", "\"\"", "99999999999999999999")) {
            CatalogError e = errorAt(errors("revision: " + bad + "\n" + ORG), "revision");
            assertEquals(1, e.line(), bad);
            assertTrue(e.message().startsWith("must be a whole number from 1 up, raised with every change of the "
                    + "file (got "), bad + ": " + e.message());
        }
        assertEquals("revision: must be a whole number from 1 up, raised with every change of the file (got \"v2\")",
                errorAt(errors("revision: v2\n" + ORG), "revision").toString());
        assertEquals("must be a single value, not a list",
                errorAt(errors("revision: [1]\n" + ORG), "revision").message());
    }

    @Test
    void emptyFileIsAnError() {
        assertOnlyError("# nothing here\n", "empty configuration: expected a mapping with \"orgs\"");
    }

    @Test
    void emptyOrgListIsAnError() {
        assertOnlyError("orgs: []\n", "orgs: at least one org is required");
    }

    @Test
    void missingOrgsIsAnError() {
        List<CatalogError> errors = errors("version: 1\n");
        assertEquals("unknown field", errorAt(errors, "version").message());
        assertEquals("required: at least one org", errorAt(errors, "orgs").message());
    }

    @Test
    void documentThatIsNotAMappingIsAnError() {
        assertOnlyError("- a\n- b\n", "the document must be a mapping with \"orgs\"");
    }

    @Test
    void missingRequiredFieldsAreReportedEach() {
        List<CatalogError> errors = errors("""
                orgs:
                  - keys: [{ name: app }]
                    providers: [{ id: fireworks }]
                    routes: [{ provider: fireworks }]
                """);
        assertEquals("required", errorAt(errors, "orgs[0].id").message());
        assertEquals("required", errorAt(errors, "orgs[0].keys[0].key").message());
        assertEquals("required", errorAt(errors, "orgs[0].providers[0].base_url").message());
        assertEquals("required", errorAt(errors, "orgs[0].routes[0].alias").message());
        assertEquals("required", errorAt(errors, "orgs[0].routes[0].model").message());
    }

    @Test
    void orgWithoutKeysProvidersOrRoutesIsAnError() {
        List<CatalogError> errors = errors("orgs: [{ id: acme, keys: [] }]\n");
        assertEquals("at least one entry is required", errorAt(errors, "orgs[0].keys").message());
        assertEquals("required: at least one entry", errorAt(errors, "orgs[0].providers").message());
        assertEquals("required: at least one entry", errorAt(errors, "orgs[0].routes").message());
    }

    @Test
    void unknownGroupFieldIsReportedWithSuggestion() {
        assertOnlyError(withGroup("{ stratgy: weighted }"),
                "orgs[0].groups.kimi3.stratgy: unknown field; did you mean \"strategy\"?");
    }

    /** Kong's balancer keys with no flat form say where they go (slots was told "did you mean "slo"?"; hunt25). */
    @Test
    void kongBalancerKeysWrittenFlatOnTheGroupSayWhereTheyGo() {
        assertOnlyError(withGroup("{ slots: 100 }"),
                "orgs[0].groups.kimi3.slots: unknown field; it goes under Kong's \"balancer\"");
        assertOnlyError(withGroup("{ max_fails: 3 }"),
                "orgs[0].groups.kimi3.max_fails: unknown field; it goes under \"breaker\" (or Kong's \"balancer\")");
        assertEquals(3, new CatalogLoader(k -> null).parse(withGroup("{ balancer: { max_fails: 3, slots: 100 } }"))
                .orgs().get(0).group("kimi3").breaker().threshold(), "nested, as Kong writes them");
    }

    @Test
    void unknownFieldIsReportedAtEveryLevel() {
        List<CatalogError> errors = errors("""
                orgs:
                  - id: acme
                    colour: blue
                    keys: [{ name: app, key: k1, scope: all }]
                    providers: [{ id: fireworks, base_url: "https://x.ai/v1", apikey: s }]
                    routes: [{ alias: kimi3, provider: fireworks, modle: m, model: m, price: { prompt: 1 } }]
                    groups:
                      kimi3: { breaker: { max_fail: 2 }, slo: { ttft: 1s } }
                    routing: { header: X-A }
                extra: true
                """);
        for (String path : List.of("extra", "orgs[0].colour", "orgs[0].keys[0].scope", "orgs[0].providers[0].apikey",
                "orgs[0].routes[0].modle", "orgs[0].routes[0].price.prompt", "orgs[0].groups.kimi3.breaker.max_fail",
                "orgs[0].groups.kimi3.slo.ttft", "orgs[0].routing.header")) {
            assertTrue(errorAt(errors, path).message().startsWith("unknown field"), path);
        }
        assertEquals(9, errors.size(), errors.toString());
    }

    @Test
    void duplicateOrgIdIsAnError() {
        String second = ORG.replace("orgs:\n", "").replace("k1", "k2");
        assertOnlyError(ORG + second, "orgs[1].id: duplicate org id \"acme\" (also orgs[0].id)");
    }

    @Test
    void duplicateExplicitRouteIdIsAnError() {
        String yaml = ORG.replace("{ alias: kimi3,", "{ id: r1, alias: kimi3,")
                + "      - { id: r1, alias: other, provider: fireworks, model: m }\n";
        assertOnlyError(yaml, "orgs[0].routes[1].id: duplicate route id \"r1\" (also orgs[0].routes[0])");
    }

    @Test
    void collidingDefaultRouteIdsAskForAnExplicitId() {
        assertOnlyError(withRoute("{ alias: kimi3, provider: fireworks, model: other }"),
                "orgs[0].routes[1].alias: duplicate route id \"kimi3-fireworks\" (also orgs[0].routes[0]); "
                        + "give one of them an explicit id");
    }

    @Test
    void sameSecretInTwoOrgsIsAnErrorThatDoesNotEchoTheSecret() {
        String second = ORG.replace("orgs:\n", "").replace("id: acme", "id: globex");
        List<CatalogError> errors = errors(ORG + second);
        assertEquals(List.of("orgs[1].keys[0].key: this secret is already used at orgs[0].keys[0].key; "
                + "a key must belong to exactly one org and one role"), errors.stream().map(String::valueOf).toList());
    }

    @Test
    void sameSecretAsClientAndAdminKeyIsAnError() {
        String yaml = ORG.replace("    providers:\n", "    admin_keys: [{ name: ops, key: k1 }]\n    providers:\n");
        CatalogError e = errorAt(errors(yaml), "orgs[0].admin_keys[0].key");
        assertTrue(e.message().startsWith("this secret is already used at orgs[0].keys[0].key"), e.message());
    }

    @Test
    void duplicateKeyNameIsAnError() {
        String yaml = ORG.replace("[{ name: app, key: k1 }]", "[{ name: app, key: k1 }, { name: app, key: k2 }]");
        assertOnlyError(yaml, "orgs[0].keys[1].name: duplicate key name \"app\"");
    }

    @Test
    void aClientKeyNameIsFreeTextButTheLedgersNoKeyAndJudgeMarks() {
        assertOnlyError(ORG.replace("[{ name: app, key: k1 }]", "[{ name: app, key: k1 }, { name: \"-\", key: k2 }]"),
                "orgs[0].keys[1].name: the key name \"-\" is reserved: usage billed before keys were recorded shows"
                        + " under it");
        assertOnlyError(ORG.replace("[{ name: app, key: k1 }]", "[{ name: app, key: k1 }, { name: \"@judge\", key: k2 }]"),
                "orgs[0].keys[1].name: the key name \"@judge\" is reserved: the gateway's own judge calls "
                        + "(tokens_count_strategy llm_accuracy) are billed under it");
        for (String name : List.of("app", "my app", "ops team | 100%", "_app", "--", "x".repeat(200))) {
            assertEquals(name, new CatalogLoader(k -> null).parse(ORG.replace("name: app", "name: \"" + name + "\""))
                    .orgs().get(0).keys().get(0).name());
        }
        // admin key names are never billed: "-" too
        assertEquals("-", new CatalogLoader(k -> null).parse(ORG.replace("    providers:",
                "    admin_keys: [{ name: \"-\", key: a1 }]\n    providers:")).orgs().get(0).adminKeys().get(0)
                .name());
    }

    @Test
    void unknownProviderIsAnError() {
        assertOnlyError(withRoute("{ alias: kimi3, provider: fw, model: m }"),
                "orgs[0].routes[1].provider: unknown provider \"fw\" (declared: fireworks)");
    }

    @Test
    void duplicateProviderIdIsAnError() {
        String yaml = ORG.replace("    routes:\n",
                "      - { id: fireworks, base_url: \"https://other.ai/v1\" }\n    routes:\n");
        assertOnlyError(yaml, "orgs[0].providers[1].id: duplicate provider id \"fireworks\"");
    }

    @Test
    void unknownStrategyListsTheAllowedOnes() {
        assertOnlyError(withGroup("{ strategy: fastest }"), "orgs[0].groups.kimi3.strategy: unknown strategy "
                + "\"fastest\" (allowed: " + ALLOWED_STRATEGIES + ")");
    }

    private static final String ALLOWED_STRATEGIES = "auto, rr_health, weighted, least_latency, lowest_latency, "
            + "consistent_hashing, least_connections, lowest_usage, priority, semantic; Kong's spellings: "
            + "round-robin (= weighted), lowest-latency, consistent-hashing, least-connections, lowest-usage";

    @Test
    void anUnderscoredKongNameOrAnotherCaseIsStillUnknown() {
        // Kong's spellings are synonyms, not a loosening: "round_robin" is neither Kong's nor Hedgerow's
        assertOnlyError(withGroup("{ strategy: round_robin }"), "orgs[0].groups.kimi3.strategy: unknown strategy "
                + "\"round_robin\" (allowed: " + ALLOWED_STRATEGIES + ")");
        assertOnlyError(withGroup("{ strategy: Round-Robin }"), "orgs[0].groups.kimi3.strategy: unknown strategy "
                + "\"Round-Robin\" (allowed: " + ALLOWED_STRATEGIES + ")");
    }

    @Test
    void anUnknownAlgorithmListsTheAllowedStrategies() {
        assertOnlyError(withGroup("{ algorithm: fastest }"), "orgs[0].groups.kimi3.algorithm: unknown algorithm "
                + "\"fastest\" (allowed: " + ALLOWED_STRATEGIES + ")");
    }

    @Test
    void algorithmAndStrategyNamingDifferentStrategiesIsAnError() {
        assertOnlyError(withGroup("{ strategy: weighted, algorithm: least-connections }"),
                "orgs[0].groups.kimi3.algorithm: \"least-connections\" (least_connections) differs from strategy "
                        + "\"weighted\" (weighted); algorithm is Kong's name for strategy: give one of them");
    }

    @Test
    void unknownDialectListsTheAllowedOnes() {
        String yaml = ORG.replace("base_url: \"https://api.fireworks.ai/v1\"",
                "base_url: \"https://api.fireworks.ai/v1\", dialect: grpc");
        assertOnlyError(yaml, "orgs[0].providers[0].dialect: unknown dialect \"grpc\" "
                + "(allowed: openai, vllm, sglang, prefix, anthropic)");
    }

    @Test
    void unknownFailoverCriterionIsReportedAtItsIndex() {
        CatalogError e = errorAt(errors(withGroup("{ failover_criteria: [error, http_418, http_abc] }")),
                "orgs[0].groups.kimi3.failover_criteria[2]");
        assertTrue(e.message().startsWith("unknown failover criterion \"http_abc\" (allowed: error, timeout, "),
                e.message());
    }

    /**
     * Any provider's error status may be listed as {@code http_NNN} (Cloudflare's 520 to 524, a 501), and
     * {@code http_5xx} names them all; a status that is no 4xx or 5xx, or no status, is refused where it is written.
     */
    @Test
    void anyErrorStatusIsAFailoverCriterionAndNothingElse() {
        GroupSettings g = new CatalogLoader(k -> null).parse(withGroup(
                "{ failover_criteria: [error, http_520, http_501, http_5xx, http_418] }")).orgs().get(0).group("kimi3");
        assertEquals(java.util.Set.of(FailoverCriterion.ERROR, FailoverCriterion.http(520),
                FailoverCriterion.http(501), FailoverCriterion.HTTP_5XX, FailoverCriterion.http(418)),
                g.retry().failoverCriteria());
        List<CatalogError> errors = errors(withGroup("{ failover_criteria: [http_520, http_abc, http_99, http_200, "
                + "http_5200] }"));
        for (int i = 1; i <= 4; i++) {
            CatalogError e = errorAt(errors, "orgs[0].groups.kimi3.failover_criteria[" + i + "]");
            assertTrue(e.message().startsWith("unknown failover criterion \"http_")
                    && e.message().contains("http_NNN for a status 400 to 599"), e.message());
        }
        assertEquals(4, errors.size(), errors.toString());
    }

    @Test
    void unknownBalancerEnumsAreErrors() {
        List<CatalogError> errors = errors(withGroup("{ latency_strategy: p99, tokens_count_strategy: money }"));
        assertEquals("unknown latency_strategy \"p99\" (allowed: tpot, e2e)",
                errorAt(errors, "orgs[0].groups.kimi3.latency_strategy").message());
        assertEquals("unknown tokens_count_strategy \"money\" (allowed: prompt_tokens, completion_tokens, "
                + "total_tokens, cost, llm_accuracy; Kong's spellings: prompt-tokens, completion-tokens, total-tokens, "
                + "llm-accuracy)",
                errorAt(errors, "orgs[0].groups.kimi3.tokens_count_strategy").message());
    }

    @Test
    void aSettingGivenFlatAndUnderBalancerMustNameTheSameValue() {
        assertOnlyError(withGroup("{ retries: 2, balancer: { retries: 3 } }"),
                "orgs[0].groups.kimi3.balancer.retries: \"3\" differs from retries \"2\"; balancer.retries is the "
                        + "same setting, as Kong writes it: give one of them");
        assertOnlyError(withGroup("{ read_timeout: 60s, balancer: { read_timeout: 6000 } }"),
                "orgs[0].groups.kimi3.balancer.read_timeout: \"6000\" differs from read_timeout \"60s\"; "
                        + "balancer.read_timeout is the same setting, as Kong writes it: give one of them");
        assertOnlyError(withGroup("{ failover_criteria: [error, timeout], "
                        + "balancer: { failover_criteria: [error, timeout, http_429] } }"),
                "orgs[0].groups.kimi3.balancer.failover_criteria: [error, timeout, http_429] differs from "
                        + "failover_criteria [error, timeout]; balancer.failover_criteria is the same setting, as Kong "
                        + "writes it: give one of them");
        // Kong keeps its circuit breaker in config.balancer; Hedgerow in breaker
        assertOnlyError(withGroup("{ breaker: { max_fails: 2 }, balancer: { max_fails: 3 } }"),
                "orgs[0].groups.kimi3.balancer.max_fails: \"3\" differs from breaker.max_fails \"2\"; "
                        + "balancer.max_fails is the same setting, as Kong writes it: give one of them");
        assertOnlyError(withGroup("{ hash_on_header: X-Session, balancer: { hash_on_header: X-User } }"),
                "orgs[0].groups.kimi3.balancer.hash_on_header: \"X-User\" differs from hash_on_header "
                        + "\"X-Session\"; balancer.hash_on_header is the same setting, as Kong writes it: "
                        + "give one of them");
        // a header name is the same whatever its case: both forms load
        String loaded = new CatalogLoader(k -> null).parse(withGroup(
                "{ hash_on_header: X-Session, balancer: { hash_on_header: x-session } }")).orgs().get(0).group("kimi3")
                .balancer().hashOnHeader();
        assertTrue("X-Session".equalsIgnoreCase(loaded), loaded);
    }

    @Test
    void anAlgorithmUnderBalancerMustNameTheGroupsStrategy() {
        assertOnlyError(withGroup("{ strategy: weighted, balancer: { algorithm: least-connections } }"),
                "orgs[0].groups.kimi3.balancer.algorithm: \"least-connections\" (least_connections) differs from "
                        + "strategy \"weighted\" (weighted); algorithm is Kong's name for strategy: give one of them");
        assertOnlyError(withGroup("{ algorithm: round-robin, balancer: { algorithm: priority } }"),
                "orgs[0].groups.kimi3.balancer.algorithm: \"priority\" differs from algorithm \"round-robin\"; "
                        + "balancer.algorithm is the same setting, as Kong writes it: give one of them");
        assertOnlyError(withGroup("{ balancer: { algorithm: fastest } }"), "orgs[0].groups.kimi3.balancer.algorithm: "
                + "unknown algorithm \"fastest\" (allowed: " + ALLOWED_STRATEGIES + ")");
    }

    @Test
    void unknownKeysUnderBalancerAreErrorsAsElsewhere() {
        List<CatalogError> errors = errors(withGroup("{ balancer: { algorithm: round-robin, retires: 2, "
                + "hedging: false } }"));
        assertEquals("unknown field; did you mean \"retries\"?",
                errorAt(errors, "orgs[0].groups.kimi3.balancer.retires").message());
        // balancer holds Kong's config.balancer only; Hedgerow's own settings stay on the group
        assertEquals("unknown field", errorAt(errors, "orgs[0].groups.kimi3.balancer.hedging").message());
        assertEquals(2, errors.size(), errors.toString());
        assertOnlyError(withGroup("{ balancer: round-robin }"), "orgs[0].groups.kimi3.balancer: must be a mapping");
    }

    @Test
    void badValuesUnderBalancerAreReportedAtTheirNestedPath() {
        List<CatalogError> errors = errors(withGroup("{ balancer: { latency_strategy: p99, retries: -1, "
                + "failover_criteria: [error, http_99], hash_on_header: \"bad header\", slots: 5 } }"));
        assertEquals("unknown latency_strategy \"p99\" (allowed: tpot, e2e)",
                errorAt(errors, "orgs[0].groups.kimi3.balancer.latency_strategy").message());
        assertEquals("must be ≥ 0 (got -1)", errorAt(errors, "orgs[0].groups.kimi3.balancer.retries").message());
        assertTrue(errorAt(errors, "orgs[0].groups.kimi3.balancer.failover_criteria[1]").message()
                .startsWith("unknown failover criterion \"http_99\""));
        assertEquals("invalid header name \"bad header\"",
                errorAt(errors, "orgs[0].groups.kimi3.balancer.hash_on_header").message());
        assertEquals("must be ≥ 10 (got 5)", errorAt(errors, "orgs[0].groups.kimi3.balancer.slots").message());
        assertEquals(5, errors.size(), errors.toString());
        assertOnlyError(withGroup("{ balancer: { slots: 65537 } }"),
                "orgs[0].groups.kimi3.balancer.slots: must be ≤ 65536 (got 65537)");
    }

    @Test
    void retriesUnderBalancerFollowTheFlatRules() {
        assertOnlyError(withGroup("{ max_attempts: 3, balancer: { retries: 2 } }"),
                "orgs[0].groups.kimi3.max_attempts: give retries or max_attempts, not both "
                        + "(retries = max_attempts - 1)");
        assertOnlyError(withGroup("{ balancer: { retries: 10 } }"),
                "orgs[0].groups.kimi3.balancer.retries: must be ≤ 9 (at most 10 attempts), got 10");
    }

    @Test
    void retriesPastTheBoundAreRefusedEvenAtTheLargestInt() {
        // the bound in the unit written (found by hunt22: "at most 10 attempts" read as allowing retries: 10)
        assertOnlyError(withGroup("{ retries: 10 }"),
                "orgs[0].groups.kimi3.retries: must be ≤ 9 (at most 10 attempts), got 10");
        assertOnlyError(withGroup("{ max_attempts: 11 }"), "orgs[0].groups.kimi3.max_attempts: must be ≤ 10, got 11");
        // the largest int once overflowed retries + 1 into a negative attempt count that passed the check
        assertOnlyError(withGroup("{ retries: 2147483647 }"),
                "orgs[0].groups.kimi3.retries: must be ≤ 9 (at most 10 attempts), got 2147483647");
    }

    /** The base org with a judge route ({@code judge-r}) and an embeddings route ({@code emb}), and kimi3's group. */
    private static String withJudgedGroup(String settings) {
        return ORG + "      - { id: judge-r, alias: judge, provider: fireworks, model: j }\n"
                + "      - { id: emb, alias: emb, provider: fireworks, model: e, embeddings: true }\n"
                + "    groups:\n      kimi3: " + settings + "\n";
    }

    private static GroupSettings judgedGroup(String settings) {
        return new CatalogLoader(k -> null).parse(withJudgedGroup(settings)).orgs().get(0).group("kimi3");
    }

    @Test
    void llmAccuracyLoadsWithAJudgeInEitherSpellingAndKongsDefaults() {
        GroupSettings.Judge expected = new GroupSettings.Judge("judge-r", GroupSettings.Judge.DEFAULT_PROMPT, 1, 3,
                true, true, true, 8, Duration.ofSeconds(60));
        for (String group : List.of(
                "{ algorithm: lowest-usage, tokens_count_strategy: llm-accuracy, judge: { route: judge-r } }",
                "{ strategy: lowest_usage, tokens_count_strategy: llm_accuracy, judge: { route: judge-r } }",
                "{ balancer: { algorithm: lowest-usage, tokens_count_strategy: llm-accuracy }, "
                        + "judge: { route: judge-r } }")) {
            GroupSettings g = judgedGroup(group);
            assertEquals(GroupSettings.TokensCountStrategy.LLM_ACCURACY, g.balancer().tokensCountStrategy(), group);
            assertEquals(expected, g.balancer().judge(), group);
        }
        assertTrue(GroupSettings.Judge.DEFAULT_PROMPT.startsWith("You are a strict evaluator."));
        assertTrue(GroupSettings.Judge.DEFAULT_PROMPT.contains("a single number only \u2014 no text"));
    }

    @Test
    void everyJudgeSettingIsRead() {
        GroupSettings g = judgedGroup("{ strategy: lowest_usage, tokens_count_strategy: llm_accuracy, judge: { "
                + "route: judge-r, prompt: \"Grade it.\", sampling_rate: 0.25, message_countback: 5, "
                + "ignore_system_prompts: false, ignore_assistant_prompts: false, ignore_tool_prompts: false, "
                + "max_tokens: 4, timeout: 1500 } }");
        assertEquals(new GroupSettings.Judge("judge-r", "Grade it.", 0.25, 5, false, false, false, 4,
                Duration.ofMillis(1500)), g.balancer().judge(), "a bare timeout is milliseconds, as Kong's");
        assertEquals(Duration.ofSeconds(2), judgedGroup("{ strategy: lowest_usage, tokens_count_strategy: "
                + "llm_accuracy, judge: { route: judge-r, timeout: 2s } }").balancer().judge().timeout());
        assertEquals(null, judgedGroup("{ strategy: lowest_usage }").balancer().judge(), "no judge elsewhere");
    }

    @Test
    void llmAccuracyWithoutAJudgeIsAnErrorAtJudge() {
        assertOnlyError(withJudgedGroup("{ strategy: lowest_usage, tokens_count_strategy: llm_accuracy }"),
                "orgs[0].groups.kimi3.judge: required by tokens_count_strategy llm_accuracy: a mapping with at least "
                        + "route (the id of a chat route of this org that scores answers)");
        assertOnlyError(withJudgedGroup("{ strategy: lowest_usage, tokens_count_strategy: llm_accuracy, judge: {} }"),
                "orgs[0].groups.kimi3.judge.route: required");
    }

    @Test
    void aJudgeRouteMustBeAChatRouteOfTheOrg() {
        assertOnlyError(withJudgedGroup("{ strategy: lowest_usage, tokens_count_strategy: llm_accuracy, "
                + "judge: { route: nope } }"),
                "orgs[0].groups.kimi3.judge.route: unknown route \"nope\" (not a route of this org)");
        assertOnlyError(withJudgedGroup("{ strategy: lowest_usage, tokens_count_strategy: llm_accuracy, "
                + "judge: { route: emb } }"),
                "orgs[0].groups.kimi3.judge.route: route \"emb\" is an embeddings route; a judge must be a chat route");
    }

    /** An embeddings alias has no chat answer to judge: llm_accuracy there loaded and never judged (hunt9). */
    @Test
    void llmAccuracyOnAnEmbeddingsAliasIsRefused() {
        String yaml = ORG + "      - { id: judge-r, alias: judge, provider: fireworks, model: j }\n"
                + "      - { id: emb, alias: emb, provider: fireworks, model: e, embeddings: true }\n"
                + "    groups:\n      emb: { strategy: lowest_usage, tokens_count_strategy: llm_accuracy, "
                + "judge: { route: judge-r } }\n";
        assertOnlyError(yaml, "orgs[0].groups.emb.tokens_count_strategy: llm_accuracy scores chat answers, and alias "
                + "emb serves embeddings");
    }

    @Test
    void aJudgeOrLlmAccuracyOnAnyOtherStrategyIsRefused() {
        assertOnlyError(withJudgedGroup("{ strategy: lowest_usage, judge: { route: judge-r } }"),
                "orgs[0].groups.kimi3.judge: only for strategy lowest_usage with tokens_count_strategy llm_accuracy "
                        + "(this group's: lowest_usage, total_tokens)");
        List<CatalogError> errors = errors(withJudgedGroup("{ strategy: weighted, tokens_count_strategy: "
                + "llm-accuracy, judge: { route: judge-r } }"));
        assertEquals("llm_accuracy ranks members by a judge's scores under strategy lowest_usage only (this group's "
                + "strategy is weighted)", errorAt(errors, "orgs[0].groups.kimi3.tokens_count_strategy").message());
        errorAt(errors, "orgs[0].groups.kimi3.judge");
        assertEquals(2, errors.size(), errors.toString());
        assertOnlyError(withJudgedGroup("{ balancer: { algorithm: round-robin, "
                        + "tokens_count_strategy: llm-accuracy } }"),
                "orgs[0].groups.kimi3.balancer.tokens_count_strategy: llm_accuracy ranks members by a judge's scores "
                        + "under strategy lowest_usage only (this group's strategy is weighted)");
    }

    @Test
    void badJudgeSettingsAreErrorsAtTheirPaths() {
        List<CatalogError> errors = errors(withJudgedGroup("{ strategy: lowest_usage, tokens_count_strategy: "
                + "llm_accuracy, judge: { route: judge-r, prompt: \" \", sampling_rate: 1.5, message_countback: 0, "
                + "max_tokens: 0, timeout: soon, ignore_tool_prompts: maybe, rate: 1 } }"));
        String at = "orgs[0].groups.kimi3.judge.";
        assertEquals("must be between 0 and 1 (the share of answers judged), got 1.5",
                errorAt(errors, at + "sampling_rate").message());
        assertEquals("must be a non-empty text (leave it out for Kong's default)",
                errorAt(errors, at + "prompt").message());
        errorAt(errors, at + "message_countback");
        errorAt(errors, at + "max_tokens");
        assertTrue(errorAt(errors, at + "timeout").message().startsWith("bad timeout \"soon\""));
        errorAt(errors, at + "ignore_tool_prompts");
        errorAt(errors, at + "rate");
        assertEquals(7, errors.size(), errors.toString());
        assertOnlyError(withJudgedGroup("{ strategy: lowest_usage, tokens_count_strategy: llm_accuracy, "
                + "judge: { route: judge-r, sampling_rate: -0.1 } }"),
                "orgs[0].groups.kimi3.judge.sampling_rate: must be between 0 and 1 (the share of answers judged), "
                        + "got -0.1");
        assertOnlyError(withJudgedGroup("{ strategy: lowest_usage, tokens_count_strategy: llm_accuracy, "
                + "judge: { route: judge-r, message_countback: 1001 } }"),
                "orgs[0].groups.kimi3.judge.message_countback: must be ≤ 1000 (got 1001)");
    }

    @Test
    void unknownCapabilityIsReportedAtItsIndex() {
        String yaml = withRoute("{ alias: kimi3, provider: fireworks, model: m2, id: r2, "
                + "capabilities: [tools:stream, tool, json_mode:sometimes] }");
        List<CatalogError> errors = errors(yaml);
        assertTrue(errorAt(errors, "orgs[0].routes[1].capabilities[1]").message()
                .startsWith("unknown capability \"tool\" (allowed: images, json_mode, prefill, reasoning, reasoning_off, tools"));
        errorAt(errors, "orgs[0].routes[1].capabilities[2]");
        assertEquals(2, errors.size());
    }

    @Test
    void badDurationIsAnError() {
        assertOnlyError(withGroup("{ stall_floor: 30 seconds }"),
                "orgs[0].groups.kimi3.stall_floor: bad duration \"30 seconds\"; "
                        + "write e.g. 500ms, 30s, 2m, 1h, 1m30s or a number of seconds");
    }

    @Test
    void aBadHeadHoldIsAnErrorAtItsPath() {
        String hint = "write e.g. 500ms, 30s, 2m, 1h, 1m30s or a number of seconds, or off (or 0) to turn it off";
        assertOnlyError(withGroup("{ head_hold: soon }"),
                "orgs[0].groups.kimi3.head_hold: bad duration \"soon\"; " + hint);
        assertOnlyError(withGroup("{ head_hold: -5s }"),
                "orgs[0].groups.kimi3.head_hold: bad duration \"-5s\"; " + hint);
        assertOnlyError(withGroup("{ head_hold: on }"),
                "orgs[0].groups.kimi3.head_hold: bad duration \"on\"; " + hint);
        assertOnlyError(withGroup("{ head_hold: [30s] }"),
                "orgs[0].groups.kimi3.head_hold: must be a single value, not a list");
    }

    @Test
    void theHeadHoldIsReadTurnedOffByOffOrZeroAndDefaultsTo30s() {
        assertEquals(Duration.ofMillis(1500), headHold("{ head_hold: 1500ms }"));
        assertEquals(Duration.ofSeconds(45), headHold("{ head_hold: 45 }"));
        for (String off : List.of("off", "Off", "\"off\"", "false", "0", "0s")) {
            assertEquals(Duration.ZERO, headHold("{ head_hold: " + off + " }"), off);
        }
        assertEquals(Duration.ofSeconds(30), headHold("{ strategy: auto }"));
        assertEquals(Duration.ofSeconds(30), new CatalogLoader(k -> null).parse(ORG).orgs().get(0).group("kimi3")
                .headHold());
    }

    private static Duration headHold(String group) {
        return new CatalogLoader(k -> null).parse(withGroup(group)).orgs().get(0).group("kimi3").headHold();
    }

    private static final String BAD_TIMEOUT = "a bare number is milliseconds, as in Kong (60000 is a minute), so "
            + "write a whole number of milliseconds or a duration with its unit, e.g. 500ms, 30s, 2m";

    @Test
    void aKongTimeoutTakesABareNumberAsWholeMillisecondsOnly() {
        // a fraction has no meaning a reader could rely on: Kong's are whole milliseconds, other durations seconds
        assertOnlyError(withGroup("{ read_timeout: 0.5 }"),
                "orgs[0].groups.kimi3.read_timeout: bad timeout \"0.5\"; " + BAD_TIMEOUT);
        assertOnlyError(withGroup("{ breaker: { fail_timeout: 30 seconds } }"),
                "orgs[0].groups.kimi3.breaker.fail_timeout: bad timeout \"30 seconds\"; " + BAD_TIMEOUT);
        assertOnlyError(withGroup("{ connect_timeout: 99999999999999999999 }"),
                "orgs[0].groups.kimi3.connect_timeout: bad timeout \"99999999999999999999\"; " + BAD_TIMEOUT);
        assertOnlyError(withGroup("{ write_timeout: 0 }"), "orgs[0].groups.kimi3.write_timeout: must be longer than 0");
        // the same under Kong's balancer block
        assertOnlyError(withGroup("{ balancer: { read_timeout: 1.5 } }"),
                "orgs[0].groups.kimi3.balancer.read_timeout: bad timeout \"1.5\"; " + BAD_TIMEOUT);
        assertOnlyError(withGroup("{ balancer: { fail_timeout: 0 } }"),
                "orgs[0].groups.kimi3.balancer.fail_timeout: must be longer than 0");
    }

    @Test
    void zeroTimeoutIsAnError() {
        assertOnlyError(withGroup("{ read_timeout: 0s }"), "orgs[0].groups.kimi3.read_timeout: must be longer than 0");
    }

    /** request_timeout sits beside Kong's millisecond timeouts, so a bare number is refused, not read as seconds. */
    @Test
    void aBareRequestTimeoutIsAnErrorAtItsPath() {
        assertOnlyError(withGroup("{ request_timeout: 3000 }"), "orgs[0].groups.kimi3.request_timeout: give a unit "
                + "(e.g. 3s or 3000ms): a bare number would be seconds here but milliseconds in Kong's timeouts; or off");
    }

    @Test
    void aRequestTimeoutThatIsNoDurationIsAnErrorAtItsPath() {
        assertOnlyError(withGroup("{ request_timeout: soon }"),
                "orgs[0].groups.kimi3.request_timeout: bad duration \"soon\"; write e.g. 500ms, 3s, 2m, or off");
    }

    /** Kong's balancer block takes Kong's keys only: request_timeout is Hedgerow's, on the group. */
    @Test
    void requestTimeoutInKongsBalancerBlockIsAnUnknownField() {
        List<CatalogError> errors = errors(withGroup("{ balancer: { read_timeout: 3000, request_timeout: 3s } }"));
        assertEquals(1, errors.size(), errors.toString());
        assertTrue(errorAt(errors, "orgs[0].groups.kimi3.balancer.request_timeout").message()
                .startsWith("unknown field"), errors.toString());
    }

    @Test
    void firstTokenFloorAboveCeilingIsAnError() {
        assertOnlyError(withGroup("{ first_token_floor: 10s, first_token_ceiling: 5s }"),
                "orgs[0].groups.kimi3.first_token_floor: first_token_floor must not exceed first_token_ceiling");
    }

    @Test
    void negativeWeightIsAnError() {
        assertOnlyError(withRoute("{ id: r2, alias: kimi3, provider: fireworks, model: m, weight: -1 }"),
                "orgs[0].routes[1].weight: must be ≥ 0 (got -1)");
    }

    @Test
    void weightThatIsNotANumberIsAnError() {
        assertOnlyError(withRoute("{ id: r2, alias: kimi3, provider: fireworks, model: m, weight: heavy }"),
                "orgs[0].routes[1].weight: must be a whole number (got \"heavy\")");
    }

    @Test
    void groupWhoseWeightsAreAllZeroIsAnError() {
        String yaml = ORG.replace("model: m }", "model: m, weight: 0 }")
                + "      - { id: r2, alias: kimi3, provider: fireworks, model: m, weight: 0 }\n";
        assertOnlyError(yaml, "orgs[0].routes[0].weight: every route of alias \"kimi3\" has weight 0; "
                + "at least one must be > 0");
    }

    @Test
    void zeroWeightBesideAPositiveOneIsAllowed() {
        String yaml = withRoute("{ id: r2, alias: kimi3, provider: fireworks, model: m, weight: 0 }");
        assertEquals(0, new CatalogLoader(k -> null).parse(yaml).orgs().get(0).route("r2").orElseThrow().weight());
    }

    @Test
    void negativePriorityIsAnError() {
        assertOnlyError(withRoute("{ id: r2, alias: kimi3, provider: fireworks, model: m, priority: -2 }"),
                "orgs[0].routes[1].priority: must be ≥ 0 (got -2)");
    }

    @Test
    void zeroContextWindowIsAnError() {
        assertOnlyError(withRoute("{ id: r2, alias: kimi3, provider: fireworks, model: m, context_window: 0 }"),
                "orgs[0].routes[1].context_window: must be ≥ 1 (got 0)");
    }

    /** A whole number over the bound is told so, not told to be at least the minimum (hunt10). */
    @Test
    void aWholeNumberOverTheBoundIsSaidToBeOverIt() {
        assertOnlyError(withRoute("{ id: r2, alias: kimi3, provider: fireworks, model: m, context_window: 1000000000000 }"),
                "orgs[0].routes[1].context_window: must be at most 2147483647 (got 1000000000000)");
    }

    @Test
    void negativePriceIsAnError() {
        assertOnlyError(withRoute("{ id: r2, alias: kimi3, provider: fireworks, model: m, "
                + "price: { prompt_per_mtok: -0.1 } }"), "orgs[0].routes[1].price.prompt_per_mtok: must be ≥ 0");
    }

    /**
     * A decimal beyond what a double holds ({@code 1e400}, or 401 digits) was taken as Infinity: the stored catalog
     * could not be read back, and the org's every key was answered 401 while the file had been accepted; any number
     * field is refused so, as {@code .inf} is (found by hunt19).
     */
    @Test
    void aNumberBeyondWhatADoubleHoldsIsAnError() {
        assertOnlyError(withRoute("{ id: r2, alias: kimi3, provider: fireworks, model: m, "
                + "price: { prompt_per_mtok: 1e400 } }"), "orgs[0].routes[1].price.prompt_per_mtok: must be a finite "
                + "number (got \"1e400\", beyond the largest a double holds)");
        String digits = "1" + "0".repeat(400);
        assertOnlyError(withGroup("{ slow_bar: " + digits + " }"), "orgs[0].groups.kimi3.slow_bar: must be a finite "
                + "number (got \"" + digits + "\", beyond the largest a double holds)");
        assertOnlyError(withRoute("{ id: r2, alias: kimi3, provider: fireworks, model: m, "
                + "price: { prompt_per_mtok: .inf } }"), "orgs[0].routes[1].price.prompt_per_mtok: must be a number "
                + "(got \".inf\")");
    }

    /**
     * A price has a ceiling: at 1e308 per million tokens the cost of four requests overflowed to Infinity, and the
     * usage API answered 500 for as long as the ledger kept that day (found by hunt19).
     */
    @Test
    void aPriceAboveTheCeilingIsAnError() {
        assertOnlyError(withRoute("{ id: r2, alias: kimi3, provider: fireworks, model: m, "
                + "price: { prompt_per_mtok: 1, completion_per_mtok: 1e308 } }"),
                "orgs[0].routes[1].price.completion_per_mtok: must be at most 1000000000 per million tokens (got 1e308)");
        assertEquals(1, new CatalogLoader(k -> null).parse(withRoute("{ id: r2, alias: kimi3, provider: fireworks, "
                + "model: m, price: { prompt_per_mtok: 1e9, completion_per_mtok: 1e9 } }")).orgs().size(),
                "the ceiling itself is a price");
    }

    @Test
    void baseUrlMustBeHttp() {
        assertOnlyError(ORG.replace("https://api.fireworks.ai/v1", "ftp://api.fireworks.ai/v1"),
                "orgs[0].providers[0].base_url: must be an absolute http:// or https:// URL");
    }

    @Test
    void baseUrlMustBeAbsolute() {
        assertOnlyError(ORG.replace("https://api.fireworks.ai/v1", "/v1"),
                "orgs[0].providers[0].base_url: must be an absolute http:// or https:// URL");
    }

    @Test
    void baseUrlWithCredentialsIsRejectedWithoutEchoingThem() {
        List<CatalogError> errors = errors(ORG.replace("https://api.fireworks.ai/v1",
                "https://user:hunter2@api.fireworks.ai/v1"));
        assertEquals("orgs[0].providers[0].base_url: must not contain credentials (user:password@); "
                + "put the key in api_key", errors.get(0).toString());
        assertFalse(errors.toString().contains("hunter2"));
    }

    @Test
    void baseUrlWithQueryIsAnError() {
        assertOnlyError(ORG.replace("https://api.fireworks.ai/v1", "https://api.fireworks.ai/v1?x=1"),
                "orgs[0].providers[0].base_url: must not have a query or fragment");
    }

    @Test
    void malformedBaseUrlIsAnError() {
        CatalogError e = errorAt(errors(ORG.replace("https://api.fireworks.ai/v1", "http://exa mple.com/v1")),
                "orgs[0].providers[0].base_url");
        assertTrue(e.message().startsWith("not a valid URL"), e.message());
    }

    @Test
    void metricsUrlIsValidatedLikeBaseUrl() {
        String yaml = ORG.replace("base_url: \"https://api.fireworks.ai/v1\"",
                "base_url: \"https://api.fireworks.ai/v1\", metrics_url: \"localhost:9090\"");
        assertOnlyError(yaml, "orgs[0].providers[0].metrics_url: must be an absolute http:// or https:// URL");
    }

    @Test
    void groupForAliasWithoutRoutesIsAnError() {
        String yaml = ORG + "    groups:\n      kimi4: { strategy: weighted }\n";
        assertOnlyError(yaml, "orgs[0].groups.kimi4: no route has alias \"kimi4\"");
    }

    @Test
    void embeddingsRouteMustExistInTheSameOrg() {
        assertOnlyError(withGroup("{ embeddings_route: nope }"),
                "orgs[0].groups.kimi3.embeddings_route: unknown route \"nope\" (not a route of this org)");
    }

    @Test
    void embeddingsRouteFromAnotherOrgIsUnknown() {
        String other = """
                  - id: globex
                    keys: [{ name: app, key: k2 }]
                    providers: [{ id: together, base_url: "https://api.together.xyz/v1" }]
                    routes: [{ id: emb, alias: embed, provider: together, model: e, embeddings: true }]
                """;
        String yaml = withGroup("{ embeddings_route: emb }") + other;
        assertOnlyError(yaml, "orgs[0].groups.kimi3.embeddings_route: unknown route \"emb\" (not a route of this org)");
    }

    @Test
    void embeddingsRouteMustBeMarkedEmbeddings() {
        assertOnlyError(withGroup("{ embeddings_route: kimi3-fireworks }"),
                "orgs[0].groups.kimi3.embeddings_route: route \"kimi3-fireworks\" is not an embeddings route "
                        + "(mark it embeddings: true)");
    }

    @Test
    void semanticGroupNeedsAnEmbeddingsRoute() {
        String yaml = ORG.replace("model: m }", "model: m, description: chat }")
                + "    groups:\n      kimi3: { strategy: semantic }\n";
        assertOnlyError(yaml, "orgs[0].groups.kimi3.embeddings_route: required by strategy semantic: "
                + "the id of an embeddings route");
    }

    @Test
    void semanticGroupRoutesNeedDescriptions() {
        String yaml = withRoute("{ id: emb, alias: embed, provider: fireworks, model: e, embeddings: true }")
                + "    groups:\n      kimi3: { strategy: semantic, embeddings_route: emb }\n";
        assertOnlyError(yaml, "orgs[0].routes[0].description: required: group \"kimi3\" uses strategy semantic, "
                + "which matches prompts against descriptions");
    }

    @Test
    void aliasMixingChatAndEmbeddingsRoutesIsAnError() {
        assertOnlyError(withRoute("{ id: emb, alias: kimi3, provider: fireworks, model: e, embeddings: true }"),
                "orgs[0].routes[1].embeddings: alias \"kimi3\" mixes embeddings and chat routes; "
                        + "give the embeddings model its own alias");
    }

    @Test
    void thresholdOutsideZeroToOneIsAnError() {
        assertOnlyError(withGroup("{ threshold: 1.5 }"),
                "orgs[0].groups.kimi3.threshold: must be between 0 and 1 (got 1.5): a cosine similarity; with "
                        + "distance_metric: euclidean it is a distance ≥ 0");
        assertOnlyError(withGroup("{ distance_metric: cosine, threshold: -0.1 }"),
                "orgs[0].groups.kimi3.threshold: must be between 0 and 1 (got -0.1): a cosine similarity; with "
                        + "distance_metric: euclidean it is a distance ≥ 0");
    }

    @Test
    void aEuclideanThresholdIsAnyDistanceFromZeroUp() {
        new CatalogLoader(k -> null).parse(withGroup("{ distance_metric: euclidean, threshold: 1.5 }"));
        new CatalogLoader(k -> null).parse(withGroup("{ distance_metric: euclidean, threshold: 0 }"));
        assertOnlyError(withGroup("{ distance_metric: euclidean, threshold: -0.5 }"),
                "orgs[0].groups.kimi3.threshold: must be ≥ 0 (got -0.5): with distance_metric: euclidean it is the "
                        + "greatest distance of a match");
    }

    @Test
    void anUnknownDistanceMetricListsTheAllowedOnes() {
        assertOnlyError(withGroup("{ distance_metric: dot_product }"),
                "orgs[0].groups.kimi3.distance_metric: unknown distance_metric \"dot_product\" "
                        + "(allowed: cosine, euclidean)");
    }

    @Test
    void invalidHashHeaderNameIsAnError() {
        assertOnlyError(withGroup("{ strategy: consistent_hashing, hash_on_header: \"X User\" }"),
                "orgs[0].groups.kimi3.hash_on_header: invalid header name \"X User\"");
    }

    @Test
    void invalidAliasHeaderNameIsAnError() {
        assertOnlyError(ORG + "    routing: { alias_header: \"X:Model\" }\n",
                "orgs[0].routing.alias_header: invalid header name \"X:Model\"");
    }

    @Test
    void anotherNameForAnAliasMustStandForOneAliasOfRoutesAndNotBeOneItself() {
        String two = withRoute("{ alias: glm, provider: fireworks, model: g }");
        assertOnlyError(ORG + "    routing: { aliases: { kimi4: [k4] } }\n",
                "orgs[0].routing.aliases.kimi4: no route has alias \"kimi4\"");
        assertOnlyError(two + "    routing: { aliases: { kimi3: [k2, glm] } }\n",
                "orgs[0].routing.aliases.kimi3[1]: \"glm\" is an alias of routes itself; a name may only stand for "
                        + "another alias");
        assertOnlyError(two + "    routing: { aliases: { kimi3: [k2], glm: k2 } }\n",
                "orgs[0].routing.aliases.glm: \"k2\" already stands for alias \"kimi3\"");
        assertOnlyError(ORG + "    routing: { aliases: { kimi3: [\"bad name\"] } }\n",
                "orgs[0].routing.aliases.kimi3[0]: invalid name \"bad name\": letters, digits and . _ : / @ + -, "
                        + "starting with a letter or digit, no . or .. or empty segment between slashes, no trailing "
                        + "/, at most 128");
        assertOnlyError(ORG + "    routing: { aliases: { kimi3: [\"k/../k2\"] } }\n",
                "orgs[0].routing.aliases.kimi3[0]: invalid name \"k/../k2\": letters, digits and . _ : / @ + -, "
                        + "starting with a letter or digit, no . or .. or empty segment between slashes, no trailing "
                        + "/, at most 128");
        assertOnlyError(ORG + "    routing: { aliases: { kimi3: [{ name: k2 }] } }\n",
                "orgs[0].routing.aliases.kimi3[0]: must be a name, or a list of names");
        assertOnlyError(ORG + "    routing: { aliases: [k2] }\n", "orgs[0].routing.aliases: must be a mapping");
    }

    /**
     * An alias or route id sits in admin paths ({@code /admin/groups/{alias}}): a dot segment, an empty one or a
     * trailing slash, which a browser or client writing the slash as is would resolve to another endpoint, is refused;
     * a dot inside a segment ({@code kimi-2.5}, {@code vendor/model.v2}) is not.
     */
    @Test
    void aNameWithADotOrEmptyPathSegmentIsRefused() {
        for (String bad : List.of("a/../../whoami", "a/./b", "a/..", "a//b", "a/")) {
            assertFalse(CatalogLoader.validAlias(bad), bad);
            assertFalse(CatalogLoader.validRouteId(bad), bad);
        }
        for (String good : List.of("kimi-2.5", "vendor/model.v2:free", "a/b..c", "a/...", "x.")) {
            assertTrue(CatalogLoader.validAlias(good), good);
            assertTrue(CatalogLoader.validRouteId(good), good);
        }
    }

    @Test
    void aHedgeBudgetOutsideItsRangesIsAnError() {
        assertOnlyError(ORG + "    hedge_budget: { ratio: 1.5 }\n",
                "orgs[0].hedge_budget.ratio: must be between 0 and 1 (hedges per request; 0.05 = 5 %), got 1.5");
        assertOnlyError(ORG + "    hedge_budget: { min_per_window: -1 }\n",
                "orgs[0].hedge_budget.min_per_window: must be ≥ 0 (got -1)");
        assertOnlyError(ORG + "    hedge_budget: { window: 0s }\n",
                "orgs[0].hedge_budget.window: must be longer than 0");
        assertOnlyError(ORG + "    hedge_budget: { share: 0.1 }\n",
                "orgs[0].hedge_budget.share: unknown field");
    }

    @Test
    void aHedgeBudgetIsReadAndDefaulted() {
        Org custom = new CatalogLoader(k -> null).parse(ORG
                + "    hedge_budget: { ratio: 0.02, min_per_window: 0, window: 2m }\n").orgs().get(0);
        assertEquals(new HedgeBudget(0.02, 0, Duration.ofMinutes(2)), custom.hedgeBudget());
        Org partial = new CatalogLoader(k -> null).parse(ORG + "    hedge_budget: { ratio: 0.1 }\n").orgs().get(0);
        assertEquals(new HedgeBudget(0.1, 3, Duration.ofSeconds(60)), partial.hedgeBudget());
        assertEquals(HedgeBudget.defaults(), new CatalogLoader(k -> null).parse(ORG).orgs().get(0).hedgeBudget());
    }

    @Test
    void retriesAndMaxAttemptsTogetherIsAnError() {
        assertOnlyError(withGroup("{ retries: 2, max_attempts: 3 }"),
                "orgs[0].groups.kimi3.max_attempts: give retries or max_attempts, not both "
                        + "(retries = max_attempts - 1)");
    }

    @Test
    void breakerNeedsAtLeastOneFail() {
        assertOnlyError(withGroup("{ breaker: { max_fails: -1 } }"),
                "orgs[0].groups.kimi3.breaker.max_fails: must be ≥ 0 (got -1)");
    }

    @Test
    void nonBooleanFlagIsAnError() {
        assertOnlyError(withGroup("{ hedging: sometimes }"),
                "orgs[0].groups.kimi3.hedging: must be true or false (got \"sometimes\")");
    }

    @Test
    void invalidOrgIdIsAnError() {
        CatalogError e = errorAt(errors(ORG.replace("id: acme", "id: \"Ac{me}\"")), "orgs[0].id");
        assertTrue(e.message().startsWith("invalid org id \"Ac{me}\""), e.message());
    }

    @Test
    void unsetVariableIsReportedAtItsPath() {
        assertOnlyError(ORG.replace("key: k1", "key: \"${ACME_KEY}\""), "orgs[0].keys[0].key: environment variable "
                + "ACME_KEY is not set (write ${ACME_KEY:-default} to give a default)");
    }

    @Test
    void emptyVariableLeavesARequiredValueEmpty() {
        List<CatalogError> errors = errors(ORG.replace("key: k1", "key: \"${ACME_KEY}\""), Map.of("ACME_KEY", ""));
        assertEquals("must not be empty", errorAt(errors, "orgs[0].keys[0].key").message());
    }

    @Test
    void malformedReferenceIsAnError() {
        CatalogError e = errorAt(errors(ORG.replace("key: k1", "key: \"${ACME KEY}\"")), "orgs[0].keys[0].key");
        assertTrue(e.message().startsWith("malformed reference \"${ACME KEY}\""), e.message());
    }

    @Test
    void duplicateYamlKeyIsAnError() {
        String yaml = ORG.replace("  - id: acme\n", "  - id: acme\n    id: acme2\n");
        assertOnlyError(yaml, "orgs[0].id: duplicate key (first on line 2)");
    }

    @Test
    void yamlSyntaxErrorIsOneError() {
        List<CatalogError> errors = errors("orgs:\n  - id: [acme\n");
        assertEquals(1, errors.size());
        assertTrue(errors.get(0).message().startsWith("not valid YAML"), errors.toString());
    }

    @Test
    void yamlSyntaxErrorNamesItsPlaceButNeverQuotesTheLine() {
        // SnakeYAML's own message ends with the offending line: here a provider's key
        List<CatalogError> broken = errors("orgs:\n  - id: acme\n    providers:\n      - id: fireworks\n"
                + "        api_key: sk-SUPERSECRET-123\" oops: [\n");
        assertEquals(1, broken.size(), broken.toString());
        assertEquals("not valid YAML: mapping values are not allowed here (line 5, column 42)",
                broken.get(0).message());
        assertEquals(5, broken.get(0).line());
        List<CatalogError> tabbed = errors("orgs:\n  - id: acme\n    providers:\n      - id: fireworks\n"
                + "\tapi_key: sk-SUPERSECRET-123\n");
        assertEquals(1, tabbed.size(), tabbed.toString());
        assertFalse(tabbed.get(0).message().contains("SUPERSECRET"), tabbed.get(0).message());
        assertTrue(tabbed.get(0).message().matches("not valid YAML: .+ \\(line 5, column \\d+\\)"),
                tabbed.get(0).message());
    }

    /**
     * The file may write the tags pin and drain set, under the same rules as the admin API: a file with every member
     * drained left its alias refusing every request, and every admin edit of its org refused, the mending undrain too
     * (found by audit5).
     */
    @Test
    void theFilesPinAndDrainTagsFollowTheAdminApisRules() {
        String two = ORG.replace("      - { alias: kimi3, provider: fireworks, model: m }\n",
                "      - { id: a, alias: kimi3, provider: fireworks, model: m, tags: [TA] }\n"
                        + "      - { id: b, alias: kimi3, provider: fireworks, model: n, tags: [TB] }\n");
        assertOnlyError(two.replace("TA", "hedgerow:drained").replace("TB", "hedgerow:drained"),
                "orgs[0].routes[0].tags: every member of alias \"kimi3\" is drained; at least one must take traffic");
        assertOnlyError(two.replace("TA", "hedgerow:pinned").replace("TB", "hedgerow:pinned"),
                "orgs[0].routes[1].tags: alias \"kimi3\" has more than one pinned member; pin exactly one");
        assertOnlyError(two.replace("TA", "hedgerow:pinned, hedgerow:drained").replace("TB", "gpu"),
                "orgs[0].routes[0].tags: a pinned member cannot be drained");
        // one drained and one pinned member: what drain and pin leave behind
        assertEquals(List.of(true, false), new CatalogLoader(Map.<String, String>of()::get)
                .parse(two.replace("TA", "hedgerow:drained").replace("TB", "hedgerow:pinned")).orgs().get(0)
                .routes().stream().map(r -> r.drained()).toList());
    }

    @Test
    void yamlAliasesAreRejected() {
        String yaml = ORG.replace("model: m }", "model: &m m }")
                + "      - { id: r2, alias: kimi3, provider: fireworks, model: *m }\n";
        CatalogError e = errorAt(errors(yaml), "orgs[0].routes[1].model");
        assertTrue(e.message().startsWith("YAML aliases"), e.message());
    }

    @Test
    void errorsCarryTheirLine() {
        CatalogError e = errorAt(errors(withGroup("{ strategy: fastest }")), "orgs[0].groups.kimi3.strategy");
        assertEquals(9, e.line());
    }

    @Test
    void severalErrorsAreReportedTogether() {
        List<CatalogError> errors = errors(CatalogLoaderTest.resource("catalog/invalid-many.yaml"));
        List<String> paths = errors.stream().map(CatalogError::path).toList();
        assertEquals(List.of(
                "orgs[0].providers[0].base_url",
                "orgs[0].providers[0].dialect",
                "orgs[0].routes[0].weight",
                "orgs[0].routes[1].provider",
                "orgs[0].groups.kimi3.stratgy",
                "orgs[0].groups.kimi3.breaker.max_fails",
                "orgs[0].groups.kimi3.breaker.fail_timeout",
                "orgs[0].groups.kimi4",
                "orgs[1].id",
                "orgs[1].keys[0].key"), paths);
    }

    @Test
    void exceptionMessageListsEveryErrorWithItsLine() {
        CatalogException e = assertThrows(CatalogException.class,
                () -> new CatalogLoader(k -> null).parse(withGroup("{ strategy: fastest, threshold: 2 }")));
        assertTrue(e.getMessage().startsWith("invalid Hedgerow configuration (2 errors):\n"), e.getMessage());
        assertTrue(e.getMessage().contains("  orgs[0].groups.kimi3.threshold: must be between 0 and 1 (got 2.0): "
                + "a cosine similarity; with distance_metric: euclidean it is a distance ≥ 0 (line 9)"), e.getMessage());
    }
}
