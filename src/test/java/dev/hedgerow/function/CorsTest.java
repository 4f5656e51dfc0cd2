package dev.hedgerow.function;

import io.quarkus.test.junit.QuarkusTest;
import io.quarkus.test.junit.QuarkusTestProfile;
import io.quarkus.test.junit.TestProfile;
import io.restassured.response.Response;
import org.junit.jupiter.api.Test;

import java.util.List;
import java.util.Locale;
import java.util.Map;

import static io.restassured.RestAssured.given;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * A browser app on another origin calling the gateway, with CORS switched on as README says
 * ({@code QUARKUS_HTTP_CORS_ENABLED=true}, {@code QUARKUS_HTTP_CORS_ORIGINS=<origins>}): the preflight is answered,
 * the answer (streamed or not) carries the origin, and the gateway's own response headers are readable by the page.
 */
@QuarkusTest
@TestProfile(CorsTest.Cors.class)
class CorsTest {
    static final String APP = "https://app.example.com";

    public static class Cors implements QuarkusTestProfile {
        @Override
        public Map<String, String> getConfigOverrides() {
            return Map.of("quarkus.http.cors.enabled", "true", "quarkus.http.cors.origins", APP);
        }
    }

    static final String CHAT = "{\"model\":\"solo\",\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}]}";

    @Test
    void thePreflightIsAnsweredForAnAllowedOrigin() {
        Response r = given().header("Origin", APP).header("Access-Control-Request-Method", "POST")
                .header("Access-Control-Request-Headers", "authorization,content-type")
                .options("/v1/chat/completions");
        assertEquals(200, r.statusCode(), r.asString());
        assertEquals(APP, r.header("Access-Control-Allow-Origin"));
        assertTrue(lower(r.header("Access-Control-Allow-Methods")).contains("post"), r.headers().toString());
        assertTrue(lower(r.header("Access-Control-Allow-Headers")).contains("authorization"), r.headers().toString());
    }

    @Test
    void theAnswerCarriesTheOriginAndExposesTheGatewaysHeaders() {
        for (boolean stream : new boolean[]{false, true}) {
            Response r = given().auth().oauth2("k-acme").header("Origin", APP).contentType("application/json")
                    .body(stream ? CHAT.replace("{\"model\"", "{\"stream\":true,\"model\"") : CHAT)
                    .post("/v1/chat/completions");
            assertEquals(200, r.statusCode(), r.asString());
            assertEquals(APP, r.header("Access-Control-Allow-Origin"), "stream " + stream);
            List<String> exposed = List.of(lower(r.header("Access-Control-Expose-Headers")).split("\\s*,\\s*"));
            for (String h : new String[]{"x-hedgerow-request-id", "x-hedgerow-route", "x-hedgerow-attempts",
                    "retry-after"}) {
                assertTrue(exposed.contains(h), "stream " + stream + ": " + h + " not in " + exposed);
            }
        }
    }

    @Test
    void anotherOriginIsRefused() {
        Response preflight = given().header("Origin", "https://elsewhere.example")
                .header("Access-Control-Request-Method", "POST").options("/v1/chat/completions");
        Response post = given().auth().oauth2("k-acme").header("Origin", "https://elsewhere.example")
                .contentType("application/json").body(CHAT).post("/v1/chat/completions");
        for (Response r : List.of(preflight, post)) {
            assertEquals(403, r.statusCode(), r.asString());
            assertNull(r.header("Access-Control-Allow-Origin"), r.headers().toString());
        }
    }

    @Test
    void aClientWithoutAnOriginIsServedAsBefore() {
        given().auth().oauth2("k-acme").contentType("application/json").body(CHAT).post("/v1/chat/completions")
                .then().statusCode(200);
    }

    static String lower(String s) {
        return s == null ? "" : s.toLowerCase(Locale.ROOT);
    }
}
