package dev.hedgerow.testsupport;

import dev.hedgerow.sim.ModelScript;
import dev.hedgerow.sim.SimConfig;
import dev.hedgerow.sim.SimServer;
import io.quarkus.test.common.QuarkusTestResourceLifecycleManager;
import io.vertx.core.Vertx;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.Locale;
import java.util.Map;

/**
 * Everything the real Quarkus application needs for {@code @QuarkusTest}s: a private {@code redis-server} on a free
 * port, two simulated providers, and a catalog file pointing at them. The app is started with
 * {@code HEDGEROW_CONFIG} and {@code REDIS_URL} set through config. Tests reach the simulators through
 * {@link #sims()} and the Redis server through {@link #redis()}.
 *
 * <p>Catalog: org {@code acme} (client keys {@code k-acme}, named {@code app}, and {@code k-acme-batch}, named
 * {@code batch}; admin key {@code a-acme}) with alias {@code kimi3} on
 * providers {@code alpha} and {@code beta} (rr_health, fast 1 s cooldown), alias {@code solo} on {@code alpha},
 * and two more groups like {@code kimi3} that the console's tests edit freely: {@code duo} (admin API tests) and
 * {@code panel} (the dashboard's browser test, 4 s cooldown so a 2 s poll sees it), and {@code billed} (priced at
 * 1 per prompt token and 2 per completion token; only the usage test sends to it, so its ledger is that test's), and
 * {@code metered} (on alpha, priced at 0.5 and 1.5 per million prompt and completion tokens, so its cost has decimals;
 * only the dashboard's usage panel test sends to it), and {@code keyed} (on alpha, priced like {@code billed}; only
 * the per-key usage test sends to it), and {@code sdk} and {@code sdk-out} (priority: alpha's {@code sdk-a}, then
 * beta's {@code sdk-b}, models no other alias uses; 1 s cooldown; {@code sdk-out} does not resume mid-stream; only the
 * OpenAI Node SDK test sends to them and scripts their faults), and {@code vectors} (embeddings, on alpha's
 * {@code embed-a}; 1 s cooldown, so the prober's half-open recovery of it is seen in real time), and {@code judged}
 * ({@code lowest_usage} by {@code llm_accuracy}, no hedging: alpha's {@code judged-good} and {@code judged-bad}, whose
 * answers the judge route {@code grader}, alias {@code grader}, scores 87 and 12; only the dashboard's browser test
 * sends to it), and {@code crew} (alpha's {@code crew-alpha} alone) with {@code recruit} (beta's
 * {@code recruit-beta} alone, no hedging), whose route only the route-alias tests move between aliases, and
 * {@code deck} (alpha's {@code deck-alpha}) with {@code spare} (beta's {@code spare-beta}), whose route only the
 * dashboard's browser test moves; org {@code other} (keys
 * {@code k-other} / {@code a-other}, and {@code k-other-ops}, named {@code ops team | 100%}, used only by the
 * per-key usage test) with alias {@code secret} and its own alias {@code duo}, whose route id
 * {@code duo-alpha} collides with acme's on purpose (isolation tests) and which it also names {@code pair}, and the
 * alias header {@code X-Model-Alias}. Acme's provider {@code alpha} has a {@code metrics_url} (its simulator's
 * {@code /metrics}), so every prober round scrapes it into capacity reports for alpha's routes; only
 * {@code MetricsScrapeRoutingTest} raises its memory pressure, and puts it back. Provider keys are sealed at rest
 * ({@code hedgerow.secret-key} = {@link #SECRET_KEY}). The prober's timer is off
 * ({@code hedgerow.prober.interval=0s}): tests run rounds through {@code POST /prober/run} when they want one, with
 * the bearer token {@link #PROBER_TOKEN} ({@code hedgerow.prober.token}), as a scheduler would, and back to back
 * ({@code hedgerow.prober.min-interval=0s}; {@code ProberMinIntervalTest} runs with a minimum interval), each
 * verifying every route ({@code hedgerow.prober.verify-every=0s}; {@code ProberVerifyEveryTest} runs with a period,
 * the default's). Metrics are
 * scraped with the bearer token {@link #METRICS_TOKEN} ({@code hedgerow.metrics.token}; see {@link MetricsScrape}).
 */
public final class AppTestResource implements QuarkusTestResourceLifecycleManager {
    public static final long SEED = 11;
    /** Base64 of a 32-byte AES key: the app seals provider API keys in Redis with it. */
    public static final String SECRET_KEY = java.util.Base64.getEncoder()
            .encodeToString("hedgerow-test-secret-key-32bytes".getBytes(java.nio.charset.StandardCharsets.US_ASCII));
    /** The prober endpoint's bearer token. */
    public static final String PROBER_TOKEN = "prober-test-token";
    /** The bearer token a scrape of {@code /q/metrics} sends ({@code hedgerow.metrics.token}). */
    public static final String METRICS_TOKEN = "metrics-test-token";
    /** What {@code judged-good} answers; the {@code grader} scores an answer with {@code GOOD} in it 87. */
    public static final String JUDGED_GOOD = "GOOD hedgerows shelter birds";
    /** What {@code judged-bad} answers; the {@code grader} scores an answer with {@code BAD} in it 12. */
    public static final String JUDGED_BAD = "BAD the moon is cheese";
    private static final Map<String, Integer> JUDGE_SCORES = Map.of("GOOD", 87, "BAD", 12);
    public static final String YAML = """
            revision: 1
            orgs:
              - id: acme
                keys: [{ name: app, key: "k-acme" }, { name: batch, key: "k-acme-batch" }]
                admin_keys: [{ name: ops, key: "a-acme" }]
                providers:
                  - { id: alpha, base_url: "${SIM_ALPHA_URL}", api_key: "sk-alpha", capacity_key: "cap-alpha",
                      metrics_url: "${SIM_ALPHA_METRICS_URL}" }
                  - { id: beta, base_url: "${SIM_BETA_URL}", api_key: "sk-beta", capacity_key: "cap-beta" }
                routes:
                  - { alias: kimi3, provider: alpha, model: kimi-a, weight: 100 }
                  - { alias: kimi3, provider: beta, model: kimi-b, weight: 100 }
                  - { alias: solo, provider: alpha, model: solo-a }
                  - { alias: duo, provider: alpha, model: kimi-a }
                  - { alias: duo, provider: beta, model: kimi-b }
                  - { alias: panel, provider: alpha, model: kimi-a }
                  - { alias: panel, provider: beta, model: kimi-b }
                  - { alias: vectors, provider: alpha, model: embed-a, embeddings: true }
                  - { alias: billed, provider: alpha, model: kimi-a,
                      price: { prompt_per_mtok: 1000000, completion_per_mtok: 2000000 } }
                  - { alias: billed, provider: beta, model: kimi-b,
                      price: { prompt_per_mtok: 1000000, completion_per_mtok: 2000000 } }
                  - { alias: metered, provider: alpha, model: kimi-a,
                      price: { prompt_per_mtok: 0.5, completion_per_mtok: 1.5 } }
                  - { alias: keyed, provider: alpha, model: kimi-a,
                      price: { prompt_per_mtok: 1000000, completion_per_mtok: 2000000 } }
                  - { alias: sdk, provider: alpha, model: sdk-a, priority: 1, capabilities: [tools, json_mode] }
                  - { alias: sdk, provider: beta, model: sdk-b, priority: 2, capabilities: [tools, json_mode] }
                  - { alias: sdk-out, provider: alpha, model: sdk-a, priority: 1 }
                  - { alias: sdk-out, provider: beta, model: sdk-b, priority: 2 }
                  - { id: judged-good, alias: judged, provider: alpha, model: judged-good }
                  - { id: judged-bad, alias: judged, provider: alpha, model: judged-bad }
                  - { id: grader, alias: grader, provider: alpha, model: grader }
                  - { id: crew-alpha, alias: crew, provider: alpha, model: kimi-a }
                  - { id: recruit-beta, alias: recruit, provider: beta, model: kimi-b }
                  - { id: deck-alpha, alias: deck, provider: alpha, model: kimi-a }
                  - { id: spare-beta, alias: spare, provider: beta, model: kimi-b }
                groups:
                  kimi3: { strategy: rr_health, breaker: { max_fails: 1, fail_timeout: 1s } }
                  duo: { strategy: rr_health, breaker: { max_fails: 1, fail_timeout: 1s }, head_hold: 45s }
                  panel: { strategy: rr_health, breaker: { max_fails: 1, fail_timeout: 4s } }
                  sdk: { strategy: priority, breaker: { max_fails: 1, fail_timeout: 1s } }
                  sdk-out: { strategy: priority, breaker: { max_fails: 1, fail_timeout: 1s }, resume_mid_stream: false }
                  vectors: { breaker: { max_fails: 1, fail_timeout: 1s } }
                  judged: { strategy: lowest_usage, tokens_count_strategy: llm_accuracy, hedging: false,
                            judge: { route: grader } }
                  crew: { strategy: rr_health, breaker: { max_fails: 1, fail_timeout: 1s } }
                  recruit: { hedging: false }
                  deck: { strategy: rr_health, breaker: { max_fails: 1, fail_timeout: 1s } }
              - id: other
                keys: [{ name: app, key: "k-other" }, { name: "ops team | 100%", key: "k-other-ops" }]
                admin_keys: [{ name: ops, key: "a-other" }]
                routing: { alias_header: X-Model-Alias, aliases: { duo: [pair] } }
                providers:
                  - { id: gamma, base_url: "${SIM_BETA_URL}", api_key: "sk-beta" }
                  - { id: alpha, base_url: "${SIM_ALPHA_URL}", api_key: "sk-alpha" }
                routes:
                  - { alias: secret, provider: gamma, model: kimi-b }
                  - { alias: duo, provider: alpha, model: kimi-a }
            """;

    private static final Map<String, SimServer> SIMS = new LinkedHashMap<>();
    private static RedisServer redis;
    private static Vertx vertx;

    public static Map<String, SimServer> sims() {
        return SIMS;
    }

    /** The app's private Redis, for outage tests (stop, then restart it before the test ends). */
    public static RedisServer redis() {
        return redis;
    }

    /** Init arg naming the metrics token the app is given; empty: none (a deployment that never set one). */
    public static final String METRICS_TOKEN_ARG = "metrics-token";
    private String metricsToken = METRICS_TOKEN;
    /** Init arg naming the prober token the app is given; empty: none (a deployment that never set one). */
    public static final String PROBER_TOKEN_ARG = "prober-token";
    /** An init arg: "true" runs the app on a Redis it reaches with TLS only ({@link TlsRedis}). */
    public static final String TLS_ARG = "tls";
    /**
     * An init arg: milliseconds the app's first Redis connection takes to reach Redis (through a {@link TcpLink}), as
     * a cold start's first TLS handshake to a cluster can; the connections after it go straight through.
     */
    public static final String SLOW_FIRST_CONNECTION_ARG = "slow-first-connection-ms";
    private String proberToken = PROBER_TOKEN;
    private boolean tls;
    private TlsRedis tlsRedis;
    private long slowFirstConnectionMs;
    private TcpLink link;

    @Override
    public void init(Map<String, String> initArgs) {
        metricsToken = initArgs.getOrDefault(METRICS_TOKEN_ARG, METRICS_TOKEN);
        proberToken = initArgs.getOrDefault(PROBER_TOKEN_ARG, PROBER_TOKEN);
        tls = "true".equals(initArgs.get(TLS_ARG));
        slowFirstConnectionMs = Long.parseLong(initArgs.getOrDefault(SLOW_FIRST_CONNECTION_ARG, "0"));
    }

    @Override
    public Map<String, String> start() {
        vertx = Vertx.vertx();
        tlsRedis = tls ? TlsRedis.start() : null;
        redis = tls ? tlsRedis.server() : RedisServer.start();
        ModelScript fast = ModelScript.defaults().withLength(24).withLatency(ModelScript.Latency.of(10, 400));
        SIMS.put("alpha", SimServer.startBlocking(vertx, SimConfig.of(SEED).withApiKey("sk-alpha")
                .withModel("kimi-a", fast).withModel("solo-a", fast).withModel("sdk-a", fast)
                .withModel("embed-a", fast).withModel("judged-good", fast.withReply(JUDGED_GOOD))
                .withModel("judged-bad", fast.withReply(JUDGED_BAD))
                .withModel("grader", fast.withScores(JUDGE_SCORES))));
        SIMS.put("beta", SimServer.startBlocking(vertx, SimConfig.of(SEED).withApiKey("sk-beta")
                .withModel("kimi-b", fast).withModel("sdk-b", fast)));
        Map<String, String> env = new HashMap<>();
        SIMS.forEach((id, s) -> {
            env.put("SIM_" + id.toUpperCase(Locale.ROOT) + "_URL", s.baseUrl());
            env.put("SIM_" + id.toUpperCase(Locale.ROOT) + "_METRICS_URL", s.rootUrl() + "/metrics");
        });
        String yaml = YAML;
        for (Map.Entry<String, String> e : env.entrySet()) {
            yaml = yaml.replace("${" + e.getKey() + "}", e.getValue());
        }
        try {
            Path file = Files.createTempFile("hedgerow-test", ".yaml");
            Files.writeString(file, yaml);
            Map<String, String> cfg = new HashMap<>();
            cfg.put("hedgerow.config", file.toString());
            String redisUrl = tls ? tlsRedis.url() : redis.url();
            if (slowFirstConnectionMs > 0) {
                link = TcpLink.to(vertx, redis.port());
                link.slowFirstConnection(java.time.Duration.ofMillis(slowFirstConnectionMs));
                redisUrl = link.redisUrl();
            }
            cfg.put("redis.url", redisUrl);
            if (tls) {
                cfg.put("hedgerow.redis.tls-ca", tlsRedis.caFile());
            }
            cfg.put("hedgerow.prober.interval", "0s");
            cfg.put("hedgerow.prober.min-interval", "0s");
            cfg.put("hedgerow.prober.verify-every", "0s");
            cfg.put("hedgerow.secret-key", SECRET_KEY);
            if (!proberToken.isEmpty()) {
                cfg.put("hedgerow.prober.token", proberToken);
            }
            if (!metricsToken.isEmpty()) {
                cfg.put("hedgerow.metrics.token", metricsToken);
            }
            return cfg;
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    @Override
    public void stop() {
        if (link != null) {
            link.close();
        }
        SIMS.values().forEach(SimServer::close);
        SIMS.clear();
        if (tlsRedis != null) {
            tlsRedis.close();
        } else if (redis != null) {
            redis.close();
        }
        if (vertx != null) {
            vertx.close();
        }
    }
}
