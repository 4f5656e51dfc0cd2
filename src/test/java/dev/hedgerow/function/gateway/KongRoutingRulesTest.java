package dev.hedgerow.function.gateway;

import dev.hedgerow.sim.ModelScript;
import dev.hedgerow.sim.SimConfig;
import dev.hedgerow.state.LedgerEntry;
import dev.hedgerow.testsupport.GatewayHarness;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

import java.util.Map;

import static io.restassured.RestAssured.given;
import static dev.hedgerow.testsupport.Eventually.eventually;
import static org.hamcrest.Matchers.equalTo;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;

/**
 * Routing rules (Kong's {@code config.route.model}): the alias comes from the body's {@code model}, from the org's
 * configured header, or from the path, by its own name or another the org gives it (Kong's {@code values}), and
 * always resolves inside the caller's org.
 */
class KongRoutingRulesTest {
    static final String YAML = """
            orgs:
              - id: acme
                keys: [{ name: app, key: "k-acme" }]
                routing: { alias_header: X-Model-Alias, path_alias: true,
                           aliases: { red: [crimson, "paint/scarlet"] } }
                providers:
                  - { id: sim, base_url: "${SIM_SIM_URL}", api_key: "sk-sim" }
                routes:
                  - { id: r-red, alias: red, provider: sim, model: m-red }
                  - { id: r-blue, alias: blue, provider: sim, model: m-blue }
              - id: plain
                keys: [{ name: app, key: "k-plain" }]
                routing: { path_alias: false }
                providers:
                  - { id: sim, base_url: "${SIM_SIM_URL}", api_key: "sk-sim" }
                routes:
                  - { id: p-red, alias: red, provider: sim, model: m-red }
                  - { id: p-blue, alias: blue, provider: sim, model: m-blue }
            """;

    static GatewayHarness gw;

    @BeforeAll
    static void start() {
        ModelScript instant = ModelScript.defaults().withLength(4).withLatency(ModelScript.Latency.INSTANT);
        gw = GatewayHarness.start(YAML, Map.of("sim", SimConfig.of(3).withApiKey("sk-sim")
                .withModel("m-red", instant).withModel("m-blue", instant)));
    }

    @AfterAll
    static void stop() {
        gw.close();
    }

    static String body(String model) {
        return "{" + (model == null ? "" : "\"model\":\"" + model + "\",")
                + "\"messages\":[{\"role\":\"user\",\"content\":\"route me\"}]}";
    }

    @Test
    void theBodysModelNamesTheAlias() {
        given().baseUri(gw.baseUrl()).auth().oauth2("k-acme").contentType("application/json").body(body("blue"))
                .post("/v1/chat/completions").then().statusCode(200).header("x-hedgerow-route", equalTo("r-blue"));
    }

    @Test
    void theOrgsConfiguredHeaderOverridesTheBodysModel() {
        given().baseUri(gw.baseUrl()).auth().oauth2("k-acme").contentType("application/json")
                .header("X-Model-Alias", "red").body(body("blue"))
                .post("/v1/chat/completions").then().statusCode(200).header("x-hedgerow-route", equalTo("r-red"));
        given().baseUri(gw.baseUrl()).auth().oauth2("k-acme").contentType("application/json")
                .header("x-model-alias", "blue").body(body(null))
                .post("/v1/chat/completions").then().statusCode(200).header("x-hedgerow-route", equalTo("r-blue"));
    }

    @Test
    void aHeaderTheOrgDidNotConfigureIsIgnored() {
        given().baseUri(gw.baseUrl()).auth().oauth2("k-plain").contentType("application/json")
                .header("X-Model-Alias", "red").header("x-hedgerow-alias", "red").body(body("blue"))
                .post("/v1/chat/completions").then().statusCode(200).header("x-hedgerow-route", equalTo("p-blue"));
    }

    @Test
    void thePathNamesTheAliasWhenTheOrgAllowsIt() {
        given().baseUri(gw.baseUrl()).auth().oauth2("k-acme").contentType("application/json").body(body("blue"))
                .post("/models/red/v1/chat/completions").then().statusCode(200)
                .header("x-hedgerow-route", equalTo("r-red"));
    }

    @Test
    void thePathFormIsNotFoundWhenTheOrgDisablesIt() {
        given().baseUri(gw.baseUrl()).auth().oauth2("k-plain").contentType("application/json").body(body("blue"))
                .post("/models/red/v1/chat/completions").then().statusCode(404)
                .body("error.code", equalTo("not_found"));
    }

    @Test
    void anotherNameOfAnAliasRoutesToItFromTheBodyTheHeaderAndThePath() {
        given().baseUri(gw.baseUrl()).auth().oauth2("k-acme").contentType("application/json").body(body("crimson"))
                .post("/v1/chat/completions").then().statusCode(200).header("x-hedgerow-route", equalTo("r-red"))
                .body("model", equalTo("m-red"));
        given().baseUri(gw.baseUrl()).auth().oauth2("k-acme").contentType("application/json")
                .header("X-Model-Alias", "paint/scarlet").body(body("blue"))
                .post("/v1/chat/completions").then().statusCode(200).header("x-hedgerow-route", equalTo("r-red"));
        given().baseUri(gw.baseUrl()).auth().oauth2("k-acme").contentType("application/json").body(body("blue"))
                .post("/models/crimson/v1/chat/completions").then().statusCode(200)
                .header("x-hedgerow-route", equalTo("r-red"));
    }

    /** A name holding '/' is retrieved by it, percent-encoded as the SDKs send it, and names its alias. */
    @Test
    void anotherNameWithASlashIsRetrievedPercentEncoded() {
        given().baseUri(gw.baseUrl()).urlEncodingEnabled(false).auth().oauth2("k-acme")
                .get("/v1/models/paint%2Fscarlet").then()
                .statusCode(200).body("id", equalTo("paint/scarlet")).body("alias_of", equalTo("red"));
        given().baseUri(gw.baseUrl()).auth().oauth2("k-plain").get("/v1/models/crimson").then().statusCode(404)
                .body("error.code", equalTo("model_not_found"));
    }

    @Test
    void anotherNameIsListedWithItsAliasAndBilledToTheAlias() {
        io.restassured.path.json.JsonPath models = given().baseUri(gw.baseUrl()).auth().oauth2("k-acme")
                .get("/v1/models").then().statusCode(200).extract().jsonPath();
        assertEquals(java.util.List.of("red", "crimson", "paint/scarlet", "blue"), models.getList("data.id"));
        assertEquals("red", models.getString("data.find { it.id == 'crimson' }.alias_of"));
        assertNull(models.get("data.find { it.id == 'red' }.alias_of"));

        long before = billed("red");
        given().baseUri(gw.baseUrl()).auth().oauth2("k-acme").contentType("application/json").body(body("crimson"))
                .post("/v1/chat/completions").then().statusCode(200);
        eventually(() -> billed("red") == before + 1, "the request billed to alias red");
        assertFalse(gw.ledger("acme").containsKey("crimson"), gw.ledger("acme").toString());
    }

    private static long billed(String alias) {
        LedgerEntry e = gw.ledger("acme").get(alias);
        return e == null ? 0 : e.requests();
    }

    @Test
    void anotherNameResolvesOnlyInsideTheOrgThatGivesIt() {
        given().baseUri(gw.baseUrl()).auth().oauth2("k-plain").contentType("application/json").body(body("crimson"))
                .post("/v1/chat/completions").then().statusCode(404).body("error.code", equalTo("model_not_found"));
    }

    @Test
    void anAliasFromTheHeaderResolvesOnlyInsideTheCallersOrg() {
        given().baseUri(gw.baseUrl()).auth().oauth2("k-acme").contentType("application/json")
                .header("X-Model-Alias", "green").body(body("blue"))
                .post("/v1/chat/completions").then().statusCode(404).body("error.code", equalTo("model_not_found"));
    }
}
