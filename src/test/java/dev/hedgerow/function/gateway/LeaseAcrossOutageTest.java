package dev.hedgerow.function.gateway;

import dev.hedgerow.function.HedgerowApp;
import dev.hedgerow.sim.Fault;
import dev.hedgerow.sim.ModelScript;
import dev.hedgerow.sim.SimConfig;
import dev.hedgerow.sim.SimServer;
import dev.hedgerow.sim.SimText;
import dev.hedgerow.state.ResilientStateStore;
import dev.hedgerow.state.StateKeys;
import dev.hedgerow.testsupport.GatewayHarness;
import dev.hedgerow.testsupport.RedisServer;
import dev.hedgerow.testsupport.Resp;
import dev.hedgerow.testsupport.Sse;
import dev.hedgerow.testsupport.TcpLink;
import io.vertx.core.Vertx;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

import java.io.IOException;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;

import static dev.hedgerow.testsupport.Eventually.eventually;
import static org.junit.jupiter.api.Assertions.assertEquals;

/**
 * A least-connections lease across a network fault between one gateway instance and Redis, through the HTTP API: a
 * stream whose lease is in Redis ends while Redis does not answer that instance, and its release is sent to Redis when
 * it answers again. Before, the lease stayed in Redis for the rest of its 90 s TTL, and every instance counted the
 * route one request busier than it was (found by hunt7).
 */
class LeaseAcrossOutageTest {
    static final long SEED = 11;
    static final String YAML = """
            orgs:
              - id: acme
                keys: [{ name: app, key: "k-acme" }]
                providers:
                  - { id: alpha, base_url: "${SIM_ALPHA_URL}", api_key: "sk-alpha" }
                routes:
                  - { alias: chat, provider: alpha, model: m }
                groups:
                  chat: { strategy: least_connections }
            """;

    static RedisServer redis;
    static Vertx vertx;
    static Map<String, SimServer> sims;

    @BeforeAll
    static void start() {
        redis = RedisServer.start();
        vertx = Vertx.vertx();
        sims = GatewayHarness.startSims(vertx, Map.of("alpha", SimConfig.of(SEED).withApiKey("sk-alpha")
                .withModel("m", ModelScript.defaults().withLength(12).withLatency(ModelScript.Latency.of(5, 0)))));
    }

    @AfterAll
    static void stop() {
        sims.values().forEach(SimServer::close);
        vertx.close().toCompletionStage().toCompletableFuture().join();
        redis.close();
    }

    static long leasesInRedis() {
        try {
            return Long.parseLong(Resp.command(redis.port(), "ZCARD", StateKeys.leases("acme/chat-alpha")));
        } catch (IOException e) {
            throw new IllegalStateException(e);
        }
    }

    @Test
    void aLeaseReleasedWhileRedisDidNotAnswerIsReleasedThereWhenItDoes() throws Exception {
        try (TcpLink link = TcpLink.to(vertx, redis.port())) {
            // the production client and guard: a command sent on a blackholed connection fails when the connection's
            // read-idle timer closes it, and is not sent again (a refused connection's commands wait and land late)
            ResilientStateStore store = HedgerowApp.redisStore(vertx, link.redisUrl(), false);
            GatewayHarness gw = GatewayHarness.start(vertx, YAML, sims, store);
            try {
                gw.sim("alpha").enqueue("m", Fault.gate(3, "held"));
                CompletableFuture<HttpResponse<String>> answer = HttpClient.newHttpClient().sendAsync(
                        HttpRequest.newBuilder(URI.create(gw.baseUrl() + "/v1/chat/completions"))
                                .header("Authorization", "Bearer k-acme").header("Content-Type", "application/json")
                                .POST(HttpRequest.BodyPublishers.ofString("{\"model\":\"chat\",\"stream\":true,"
                                        + "\"messages\":[{\"role\":\"user\",\"content\":\"held\"}]}")).build(),
                        HttpResponse.BodyHandlers.ofString());
                eventually(() -> gw.sim("alpha").gate("held").waiting() == 1 && leasesInRedis() == 1,
                        "the stream waits at the gate with its lease in Redis");

                link.freeze();
                gw.sim("alpha").openGate("held");
                HttpResponse<String> r = answer.get(10, TimeUnit.SECONDS);
                assertEquals(200, r.statusCode(), r.body());
                assertEquals(SimText.expected(SEED, "held", 12), Sse.content(r.body()));
                assertEquals(1, leasesInRedis(), "precondition: the release did not reach Redis");

                link.thaw();
                eventually(() -> leasesInRedis() == 0, "the lease is released in Redis");
            } finally {
                gw.close();
            }
        }
    }
}
