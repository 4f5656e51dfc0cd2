package dev.hedgerow.hardening;

import dev.hedgerow.sim.Fault;
import dev.hedgerow.sim.ModelScript;
import dev.hedgerow.sim.SimConfig;
import dev.hedgerow.sim.SimServer;
import dev.hedgerow.testsupport.GatewayHarness;
import dev.hedgerow.testsupport.RedisServer;
import dev.hedgerow.testsupport.RedisStores;
import io.restassured.RestAssured;
import io.vertx.core.Vertx;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

import java.util.List;
import java.util.Map;

import static dev.hedgerow.testsupport.Eventually.eventually;
import static io.restassured.RestAssured.given;
import static org.hamcrest.Matchers.containsInAnyOrder;
import static org.hamcrest.Matchers.equalTo;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Org isolation on every gateway endpoint and in shared state, over a private Redis: two orgs whose aliases and
 * route ids collide ("chat", route id "shared") never see, use or share health with each other.
 */
class OrgIsolationTest {
    static final String YAML = """
            orgs:
              - id: acme
                keys: [{ name: app, key: "k-acme" }]
                routing: { alias_header: x-hedgerow-alias }
                providers:
                  - { id: alpha, base_url: "${SIM_ALPHA_URL}" }
                routes:
                  - { id: shared, alias: chat, provider: alpha, model: m }
                  - { alias: acme-only, provider: alpha, model: m }
                groups:
                  chat: { breaker: { max_fails: 1, fail_timeout: 60s } }
              - id: other
                keys: [{ name: app, key: "k-other" }]
                providers:
                  - { id: beta, base_url: "${SIM_BETA_URL}" }
                routes:
                  - { id: shared, alias: chat, provider: beta, model: m }
                  - { alias: other-only, provider: beta, model: m }
                groups:
                  chat: { breaker: { max_fails: 1, fail_timeout: 60s } }
            """;
    static Vertx vertx;
    static RedisServer redis;
    static Map<String, SimServer> sims;
    static GatewayHarness gw;

    @BeforeAll
    static void start() {
        vertx = Vertx.vertx();
        redis = RedisServer.start();
        ModelScript m = ModelScript.defaults().withLength(4).withLatency(ModelScript.Latency.of(0, 0));
        sims = GatewayHarness.startSims(vertx, Map.of("alpha", SimConfig.of(1).withModel("m", m),
                "beta", SimConfig.of(1).withModel("m", m)));
        gw = GatewayHarness.start(vertx, YAML, sims, RedisStores.standalone(vertx, redis.url()));
        RestAssured.baseURI = gw.baseUrl();
    }

    @AfterAll
    static void stop() {
        gw.close();
        sims.values().forEach(SimServer::close);
        redis.close();
        vertx.close().toCompletionStage().toCompletableFuture().join();
    }

    static String body(String alias) {
        return "{\"model\":\"" + alias + "\",\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}]}";
    }

    @Test
    void anotherOrgsAliasIsNotFoundThroughTheBodyTheHeaderOrThePath() {
        gw.sim("beta").resetStats();
        given().auth().oauth2("k-acme").contentType("application/json").body(body("other-only"))
                .post("/v1/chat/completions").then().statusCode(404).body("error.code", equalTo("model_not_found"));
        given().auth().oauth2("k-acme").contentType("application/json").header("x-hedgerow-alias", "other-only")
                .body(body("chat")).post("/v1/chat/completions").then().statusCode(404);
        given().auth().oauth2("k-acme").contentType("application/json").body(body("x"))
                .post("/models/other-only/v1/chat/completions").then().statusCode(404);
        assertEquals(0, gw.sim("beta").stats("m").received(), "nothing of acme's may reach other's provider");
    }

    @Test
    void theModelListShowsOnlyTheCallersAliasesAndOwner() {
        given().auth().oauth2("k-acme").get("/v1/models").then().statusCode(200)
                .body("data.id", containsInAnyOrder("acme-only", "chat"))
                .body("data.owned_by", equalTo(List.of("acme", "acme")));
        given().auth().oauth2("k-other").get("/v1/models").then().statusCode(200)
                .body("data.id", containsInAnyOrder("chat", "other-only"));
    }

    @Test
    void aSharedAliasNameRoutesToTheCallersOwnProvider() {
        gw.sim("alpha").resetStats();
        gw.sim("beta").resetStats();
        given().auth().oauth2("k-other").contentType("application/json").body(body("other-only"))
                .post("/v1/chat/completions").then().statusCode(200).body("provider", equalTo("beta"));
        given().auth().oauth2("k-acme").contentType("application/json").body(body("acme-only"))
                .post("/v1/chat/completions").then().statusCode(200).body("provider", equalTo("alpha"));
        assertEquals(1, gw.sim("alpha").stats("m").received());
        assertEquals(1, gw.sim("beta").stats("m").received());
    }

    @Test
    void collidingRouteIdsNeverShareHealth() throws Exception {
        // acme's route "shared" fails once: with max_fails 1 it cools down for a minute...
        gw.sim("alpha").enqueue("m", Fault.status(500));
        given().auth().oauth2("k-acme").contentType("application/json").body(body("chat"))
                .post("/v1/chat/completions").then().statusCode(502);
        eventually(() -> given().auth().oauth2("k-acme").contentType("application/json").body(body("chat"))
                .post("/v1/chat/completions").statusCode() == 503, "acme's failed route is cooling down");
        // ...while other's route with the same id is healthy and serves
        given().auth().oauth2("k-other").contentType("application/json").body(body("chat"))
                .post("/v1/chat/completions").then().statusCode(200).body("provider", equalTo("beta"));
        Map<String, String> dump = RedisDump.all(redis.port());
        assertTrue(dump.keySet().stream().anyMatch(k -> k.contains("acme/shared")), dump.keySet().toString());
        assertTrue(dump.keySet().stream().noneMatch(k -> k.matches(".*\\{r:shared}.*")), dump.keySet().toString());
    }
}
