package dev.hedgerow.function.gateway;

import dev.hedgerow.function.HedgerowApp;
import dev.hedgerow.sim.Fault;
import dev.hedgerow.sim.ModelScript;
import dev.hedgerow.sim.SimConfig;
import dev.hedgerow.sim.SimText;
import dev.hedgerow.state.ResilientStateStore;
import dev.hedgerow.state.StateKeys;
import dev.hedgerow.testsupport.GatewayHarness;
import dev.hedgerow.testsupport.GatewayPair;
import dev.hedgerow.testsupport.RedisCluster;
import dev.hedgerow.testsupport.Resp;
import dev.hedgerow.testsupport.Sse;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

import java.io.IOException;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Two gateway instances on a private 3-master Redis Cluster, each with the store the real app builds from
 * {@code REDIS_URL=<node1>,<node2>,<node3>} and {@code HEDGEROW_REDIS_CLUSTER=true}: requests are served, and
 * rotation and breaker state written by one instance steer the other.
 */
class GatewayRedisClusterTest {
    static final long SEED = 9;
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
                  - { alias: cool, provider: alpha, model: alpha-cool }
                  - { alias: cool, provider: beta, model: beta-cool }
                groups:
                  chat: { strategy: rr_health }
                  cool: { strategy: rr_health, breaker: { max_fails: 1, fail_timeout: 30s } }
            """;

    static RedisCluster cluster;
    static GatewayPair pair;
    static ResilientStateStore storeA;
    static ResilientStateStore storeB;
    static GatewayHarness a;
    static GatewayHarness b;
    static final HttpClient http = HttpClient.newHttpClient();

    @BeforeAll
    static void start() {
        cluster = RedisCluster.start();
        ModelScript fast = ModelScript.defaults().withLength(12).withLatency(ModelScript.Latency.of(5, 0));
        String redisUrl = String.join(",", cluster.urls());
        pair = GatewayPair.on(YAML, Map.of(
                "alpha", SimConfig.of(SEED).withApiKey("sk-alpha").withModel("alpha-model", fast)
                        .withModel("alpha-cool", fast),
                "beta", SimConfig.of(SEED).withApiKey("sk-beta").withModel("beta-model", fast)
                        .withModel("beta-cool", fast)),
                vertx -> HedgerowApp.redisStore(vertx, redisUrl, true));
        storeA = (ResilientStateStore) pair.store1();
        storeB = (ResilientStateStore) pair.store2();
        a = pair.gw1();
        b = pair.gw2();
    }

    @AfterAll
    static void stop() {
        pair.close();
        cluster.close();
    }

    static HttpResponse<String> chat(GatewayHarness gw, String alias, String prompt) {
        try {
            return http.send(HttpRequest.newBuilder(URI.create(gw.baseUrl() + "/v1/chat/completions"))
                    .header("Authorization", "Bearer k-acme").header("Content-Type", "application/json")
                    .POST(HttpRequest.BodyPublishers.ofString("{\"model\":\"" + alias + "\",\"stream\":true,"
                            + "\"messages\":[{\"role\":\"user\",\"content\":\"" + prompt + "\"}]}")).build(),
                    HttpResponse.BodyHandlers.ofString());
        } catch (IOException | InterruptedException e) {
            throw new IllegalStateException(e);
        }
    }

    static String route(HttpResponse<String> r) {
        assertEquals(200, r.statusCode(), r.body());
        return r.headers().firstValue("x-hedgerow-route").orElseThrow();
    }

    @Test
    void streamsThroughBothInstancesOnTheCluster() {
        HttpResponse<String> r = chat(a, "chat", "on the cluster");
        assertEquals(200, r.statusCode(), r.body());
        assertEquals(SimText.expected(SEED, "on the cluster", 12), Sse.content(r.body()));
        assertEquals(200, chat(b, "chat", "on the cluster").statusCode());
        assertFalse(storeA.degraded());
        assertFalse(storeB.degraded());
        assertTrue(storeA.ping().await().indefinitely(), "the cluster answers through the guard");
    }

    @Test
    void storesTheCatalogInTheCluster() throws IOException {
        String slotOwnerReplies = "";
        for (int port : cluster.ports()) {
            try {
                slotOwnerReplies += Resp.command(port, "SMEMBERS", StateKeys.ORGS);
            } catch (IOException movedElsewhere) {
                // MOVED: the key lives on another master
            }
        }
        assertTrue(slotOwnerReplies.contains("acme"), slotOwnerReplies);
    }

    @Test
    void alternatingInstancesShareOneRotation() {
        List<String> routes = new ArrayList<>();
        for (int i = 0; i < 6; i++) {
            routes.add(route(chat(i % 2 == 0 ? a : b, "chat", "turn " + i)));
        }
        // one shared cursor: consecutive requests alternate whichever instance serves them
        for (int i = 1; i < routes.size(); i++) {
            assertFalse(routes.get(i).equals(routes.get(i - 1)), routes.toString());
        }
    }

    @Test
    void aFailureSeenByOneInstanceCoolsTheRouteForTheOther() {
        a.sim("alpha").enqueue("alpha-cool", Fault.status(500));
        // rotation reaches alpha within two requests on instance A; its 500 fails over to beta
        for (int i = 0; i < 2 && a.sim("alpha").stats("alpha-cool").received() == 0; i++) {
            assertEquals("cool-beta", route(chat(a, "cool", "on a " + i)));
        }
        assertEquals(1, a.sim("alpha").stats("alpha-cool").received());
        for (int i = 0; i < 4; i++) {
            assertEquals("cool-beta", route(chat(b, "cool", "on b " + i)), "instance B avoids the cooling route");
        }
        assertEquals(1, a.sim("alpha").stats("alpha-cool").received());
    }
}
