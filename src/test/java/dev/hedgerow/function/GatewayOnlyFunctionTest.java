package dev.hedgerow.function;

import io.quarkus.test.junit.QuarkusTest;
import io.quarkus.test.junit.QuarkusTestProfile;
import io.quarkus.test.junit.TestProfile;
import io.restassured.response.Response;
import org.junit.jupiter.api.Test;

import java.util.Map;

import static io.restassured.RestAssured.given;
import static org.hamcrest.Matchers.hasItems;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * The real application serving the gateway function alone ({@code HEDGEROW_FUNCTION=gateway}): its own edges
 * answer; the console's (admin API, its OpenAPI document, the dashboard) and the prober's answer 404 in the
 * envelope, and an unknown path's 404 names what this instance does serve.
 */
@QuarkusTest
@TestProfile(GatewayOnlyFunctionTest.GatewayOnly.class)
class GatewayOnlyFunctionTest {
    public static class GatewayOnly implements QuarkusTestProfile {
        @Override
        public Map<String, String> getConfigOverrides() {
            return Map.of("hedgerow.function", "gateway");
        }
    }

    @Test
    void theGatewaysEdgesAnswer() {
        given().auth().oauth2("k-acme").get("/v1/models").then().statusCode(200)
                .body("data.id", hasItems("kimi3", "solo"));
        given().get("/q/health/ready").then().statusCode(200);
    }

    @Test
    void theConsolesEdgesAre404EnvelopesWithoutAKey() {
        for (String path : new String[]{"/admin/groups", "/admin/openapi", "/admin/openapi?format=json",
                "/console/", "/console/console.js", "/console%2Findex.html", "/console%2f", "/%63onsole%2Fconsole.js"}) {
            Response r = given().urlEncodingEnabled(false).get(path);
            assertEquals(404, r.statusCode(), path + ": " + r.asString());
            assertEquals("The console function is not enabled here.", r.jsonPath().getString("error.message"),
                    path + ": " + r.asString());
        }
    }

    @Test
    void anUnknownPathNamesTheEdgesThisInstanceServes() {
        Response r = given().get("/v1/completions");
        assertEquals(404, r.statusCode());
        String message = r.jsonPath().getString("error.message");
        assertTrue(message.endsWith("This instance serves POST /v1/chat/completions, POST /v1/embeddings,"
                + " GET /v1/models, GET /v1/models/{model}."), message);
        Response prober = given().post("/prober/run");
        assertEquals(404, prober.statusCode(), prober.asString());
        assertEquals("not_found", prober.jsonPath().getString("error.code"));
    }
}
