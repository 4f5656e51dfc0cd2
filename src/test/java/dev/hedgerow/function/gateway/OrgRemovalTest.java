package dev.hedgerow.function.gateway;

import dev.hedgerow.function.HedgerowApp;
import dev.hedgerow.sim.ModelScript;
import dev.hedgerow.sim.SimConfig;
import dev.hedgerow.sim.SimServer;
import dev.hedgerow.testsupport.GatewayHarness;
import dev.hedgerow.testsupport.RedisServer;
import io.vertx.core.Vertx;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

import java.util.ArrayList;
import java.util.List;
import java.util.Map;

import static dev.hedgerow.testsupport.Eventually.eventually;
import static io.restassured.RestAssured.given;
import static org.junit.jupiter.api.Assertions.assertEquals;

/**
 * The configuration file is the whole catalog, on shared state too: an org taken out of it stops being served (its
 * keys answer 401) by an instance started from the new file and, within a catalog poll, by instances still running
 * the old one, although the org's stored catalog stays in Redis (every instance's outage mirror would write a deleted
 * one back). Putting the org back in the file serves it again. Over HTTP, on a private Redis, through the production
 * outage guard ({@link HedgerowApp#redisStore}).
 */
class OrgRemovalTest {
    static final String ACME = """
              - id: acme
                keys: [{ name: app, key: "k-acme" }]
                providers:
                  - { id: alpha, base_url: "${SIM_ALPHA_URL}" }
                routes:
                  - { alias: chat, provider: alpha, model: m }
            """;
    static final String GONE = """
              - id: gone
                keys: [{ name: app, key: "k-gone" }]
                admin_keys: [{ name: ops, key: "a-gone" }]
                providers:
                  - { id: alpha, base_url: "${SIM_ALPHA_URL}" }
                routes:
                  - { alias: chat, provider: alpha, model: m }
            """;
    static final String BOTH = "orgs:\n" + ACME + GONE;
    static final String ACME_ONLY = "orgs:\n" + ACME;

    Vertx vertx;
    RedisServer redis;
    Map<String, SimServer> sims;
    final List<GatewayHarness> instances = new ArrayList<>();

    @BeforeEach
    void start() {
        vertx = Vertx.vertx();
        redis = RedisServer.start();
        sims = GatewayHarness.startSims(vertx, Map.of("alpha", SimConfig.of(1).withModel("m",
                ModelScript.defaults().withLength(4).withLatency(ModelScript.Latency.of(0, 0)))));
    }

    @AfterEach
    void stop() {
        instances.forEach(GatewayHarness::close);
        sims.values().forEach(SimServer::close);
        vertx.close().toCompletionStage().toCompletableFuture().join();
        redis.close();
    }

    GatewayHarness instance(String yaml) {
        GatewayHarness gw = GatewayHarness.start(vertx, yaml, sims, HedgerowApp.redisStore(vertx, redis.url(), false));
        instances.add(gw);
        return gw;
    }

    static int chat(GatewayHarness gw, String key) {
        return given().baseUri(gw.baseUrl()).auth().oauth2(key).contentType("application/json")
                .body("{\"model\":\"chat\",\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}]}")
                .post("/v1/chat/completions").statusCode();
    }

    @Test
    void anOrgTakenOutOfTheFileIsServedNowhereAndServedAgainOncePutBack() {
        GatewayHarness old = instance(BOTH);
        assertEquals(200, chat(old, "k-gone"));

        GatewayHarness fresh = instance(ACME_ONLY);
        assertEquals(401, chat(fresh, "k-gone"), "the new file has no org 'gone'");
        assertEquals(200, chat(fresh, "k-acme"));
        eventually(() -> chat(old, "k-gone") == 401, "the instance still running the old file drops the org too");
        assertEquals(200, chat(old, "k-acme"));
        assertEquals(401, chat(instance(ACME_ONLY), "k-gone"), "an instance started from the same file again");

        GatewayHarness back = instance(BOTH);
        assertEquals(200, chat(back, "k-gone"), "a file that has the org again serves it");
        eventually(() -> chat(fresh, "k-gone") == 200, "and the fleet follows");
    }
}
