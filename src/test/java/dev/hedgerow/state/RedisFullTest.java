package dev.hedgerow.state;

import dev.hedgerow.sim.Fault;
import dev.hedgerow.sim.ModelScript;
import dev.hedgerow.sim.SimConfig;
import dev.hedgerow.sim.SimServer;
import dev.hedgerow.testsupport.GatewayHarness;
import dev.hedgerow.testsupport.RedisServer;
import dev.hedgerow.testsupport.RedisStores;
import dev.hedgerow.testsupport.Resp;
import dev.hedgerow.time.Ticker;
import io.vertx.core.Vertx;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

import java.io.IOException;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.time.Duration;
import java.util.List;
import java.util.Map;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * A Redis at its memory limit with {@code noeviction} answers reads and refuses every write. The failure of a route
 * that keeps answering 500 is then counted on the instance only, and its cooldown (max_fails 1, fail_timeout 30 s)
 * must keep the route out while Redis answers the instance's reads: each read answered dropped the local cooldown,
 * the guard's breaker closing on them every open delay, and the failing route took a request each time (found by
 * hunt29-c: 14 attempts in 20 s against 2 with Redis healthy). Over HTTP, on a real Redis.
 */
class RedisFullTest {
    static final String YAML = """
            orgs:
              - id: acme
                keys: [{ name: app, key: "k-acme" }]
                providers:
                  - { id: alpha, base_url: "${SIM_ALPHA_URL}", api_key: "sk-alpha" }
                  - { id: beta, base_url: "${SIM_BETA_URL}", api_key: "sk-beta" }
                routes:
                  - { alias: chat, provider: alpha, model: alpha-model }
                  - { alias: chat, provider: beta, model: beta-model }
                groups:
                  chat: { strategy: rr_health, hedging: false, breaker: { max_fails: 1, fail_timeout: 30s } }
            """;
    /** A short open delay, so that the breaker goes half-open many times while the test runs. */
    static final ResilientStateStore.Settings SETTINGS =
            new ResilientStateStore.Settings(Duration.ofMillis(500), 4, 0.5, Duration.ofMillis(100), 1);

    static RedisServer redis;
    static Vertx vertx;
    static Map<String, SimServer> sims;
    static RedisStores.Opened client;
    static GatewayHarness gw;
    static final HttpClient http = HttpClient.newHttpClient();

    @BeforeAll
    static void start() {
        redis = RedisServer.start();
        vertx = Vertx.vertx();
        ModelScript fast = ModelScript.defaults().withLength(4).withLatency(ModelScript.Latency.of(1, 0));
        sims = GatewayHarness.startSims(vertx, Map.of(
                "alpha", SimConfig.of(3).withApiKey("sk-alpha").withModel("alpha-model",
                        fast.withFaults(List.of(new ModelScript.FaultChance(1.0, Fault.status(500))))),
                "beta", SimConfig.of(3).withApiKey("sk-beta").withModel("beta-model", fast)));
        client = RedisStores.open(vertx, redis.url());
        gw = GatewayHarness.start(vertx, YAML, sims,
                new ResilientStateStore(client.store(), new MemoryStateStore(Ticker.system()), SETTINGS));
    }

    @AfterAll
    static void stop() {
        gw.close();
        client.close();
        sims.values().forEach(SimServer::close);
        vertx.close().toCompletionStage().toCompletableFuture().join();
        redis.close();
    }

    static int chat() throws IOException, InterruptedException {
        return http.send(HttpRequest.newBuilder(URI.create(gw.baseUrl() + "/v1/chat/completions"))
                .header("Authorization", "Bearer k-acme").header("Content-Type", "application/json")
                .POST(HttpRequest.BodyPublishers.ofString("{\"model\":\"chat\",\"messages\":[{\"role\":\"user\","
                        + "\"content\":\"full\"}]}")).build(), HttpResponse.BodyHandlers.ofString()).statusCode();
    }

    @Test
    void aFailingRoutesCooldownHoldsWhileRedisRefusesWritesAndAnswersReads() throws Exception {
        Resp.command(redis.port(), "CONFIG", "SET", "maxmemory-policy", "noeviction");
        Resp.command(redis.port(), "CONFIG", "SET", "maxmemory", "1");   // below what Redis uses: writes refused
        try {
            for (int i = 0; i < 40; i++) {
                assertEquals(200, chat(), "served by beta");
                Thread.sleep(40);   // 1.6 s in all: many open delays of the guard's breaker
            }
            long tried = sims.get("alpha").stats("alpha-model").received();
            assertTrue(tried >= 1, "precondition: the failing route was tried");
            assertEquals(1L, tried, "tried once, then out for its 30 s cooldown");
        } finally {
            Resp.command(redis.port(), "CONFIG", "SET", "maxmemory", "0");
        }
    }
}
