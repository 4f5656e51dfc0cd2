package dev.hedgerow.function.gateway;

import dev.hedgerow.catalog.Org;
import dev.hedgerow.catalog.Route;
import dev.hedgerow.sim.ModelScript;
import dev.hedgerow.sim.SimConfig;
import dev.hedgerow.testsupport.GatewayHarness;
import dev.hedgerow.testsupport.GatewayPair;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;

import static dev.hedgerow.testsupport.Eventually.eventually;
import static io.restassured.RestAssured.given;
import static org.hamcrest.Matchers.hasItem;
import static org.hamcrest.Matchers.not;

/** A catalog change written through one instance reaches another instance on the same Redis without a restart. */
class CatalogPropagationTest {
    static final String YAML = """
            orgs:
              - id: acme
                keys: [{ name: app, key: "k-prop" }]
                providers:
                  - { id: alpha, base_url: "${SIM_ALPHA_URL}" }
                routes:
                  - { alias: chat, provider: alpha, model: m }
            """;
    static GatewayPair pair;
    static GatewayHarness a;
    static GatewayHarness b;

    @BeforeAll
    static void start() {
        pair = GatewayPair.onPrivateRedis(YAML, Map.of("alpha", SimConfig.of(1).withModel("m",
                ModelScript.defaults().withLength(4))));
        a = pair.gw1();
        b = pair.gw2();
    }

    @AfterAll
    static void stop() {
        pair.close();
    }

    @Test
    void anAliasAddedOnOneInstanceIsServedByTheOtherWithoutARestart() {
        given().baseUri(b.baseUrl()).auth().oauth2("k-prop").get("/v1/models").then()
                .body("data.id", not(hasItem("added")));
        a.core().catalog().update("acme", org -> {
            List<Route> routes = new ArrayList<>(org.routes());
            Route r = org.routes().get(0);
            routes.add(new Route("added-alpha", "added", r.provider(), r.model(), 100, 1, r.contextWindow(),
                    r.capabilities(), r.parameters(), r.price(), null, List.of()));
            return new Org(org.id(), org.keys(), org.adminKeys(), org.providers(), routes, org.groups());
        }).await().atMost(Duration.ofSeconds(5));
        eventually(() -> given().baseUri(b.baseUrl()).auth().oauth2("k-prop").get("/v1/models").jsonPath()
                .getList("data.id").contains("added"), "instance b serves the new alias");
        given().baseUri(b.baseUrl()).auth().oauth2("k-prop").contentType("application/json")
                .body("{\"model\":\"added\",\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}]}")
                .post("/v1/chat/completions").then().statusCode(200);
    }
}
