package dev.hedgerow.function;

import io.quarkus.test.junit.QuarkusTest;
import io.quarkus.test.junit.QuarkusTestProfile;
import io.quarkus.test.junit.TestProfile;
import io.restassured.response.Response;
import org.junit.jupiter.api.Test;

import java.util.Map;

import static io.restassured.RestAssured.given;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * CORS on with the methods narrowed ({@code QUARKUS_HTTP_CORS_METHODS}): Quarkus' filter refused a request from an
 * allowed origin with another method with an empty 403 ("CORS Rejected - Invalid method"); it is the envelope, and
 * readable by the page.
 */
@QuarkusTest
@TestProfile(CorsMethodsTest.Methods.class)
class CorsMethodsTest {
    public static class Methods implements QuarkusTestProfile {
        @Override
        public Map<String, String> getConfigOverrides() {
            return Map.of("quarkus.http.cors.enabled", "true", "quarkus.http.cors.origins", CorsTest.APP,
                    "quarkus.http.cors.methods", "GET,POST,OPTIONS");
        }
    }

    @Test
    void aMethodNotListedIsRefusedInTheEnvelope() {
        Response r = given().auth().oauth2("a-acme").header("Origin", CorsTest.APP).contentType("application/json")
                .body("{\"strategy\":\"rr_health\"}").put("/admin/groups/duo");
        assertEquals(403, r.statusCode(), r.asString());
        assertEquals("cors_method_not_allowed", r.jsonPath().getString("error.code"), r.asString());
        assertEquals("permission_error", r.jsonPath().getString("error.type"), r.asString());
        assertTrue(r.jsonPath().getString("error.message").contains("GET, POST, OPTIONS"), r.asString());
        assertEquals(CorsTest.APP, r.header("Access-Control-Allow-Origin"), r.headers().toString());
    }

    @Test
    void theListedMethodsAndThePreflightAreServedAsBefore() {
        given().auth().oauth2("k-acme").header("Origin", CorsTest.APP).contentType("application/json")
                .body(CorsTest.CHAT).post("/v1/chat/completions").then().statusCode(200);
        Response preflight = given().header("Origin", CorsTest.APP).header("Access-Control-Request-Method", "PUT")
                .options("/admin/groups/duo");
        assertEquals(200, preflight.statusCode(), preflight.asString());
        assertEquals(CorsTest.APP, preflight.header("Access-Control-Allow-Origin"));
        assertEquals("GET,POST,OPTIONS", preflight.header("Access-Control-Allow-Methods"));
    }
}
