package dev.hedgerow.function;

import io.quarkus.test.junit.QuarkusTest;
import io.quarkus.test.junit.QuarkusTestProfile;
import io.quarkus.test.junit.TestProfile;
import io.restassured.RestAssured;
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
 * ({@code QUARKUS_HTTP_CORS_ENABLED=true}, {@code QUARKUS_HTTP_CORS_ORIGINS=<origins>}, a {@code /regex/} entry among
 * them): the preflight is answered, the answer (streamed or not) carries the origin, the gateway's own response
 * headers are readable by the page, and an origin not listed is refused in the OpenAI envelope.
 */
@QuarkusTest
@TestProfile(CorsTest.Cors.class)
class CorsTest {
    static final String APP = "https://app.example.com";
    /** Matched by the {@code /regex/} entry of the allowed origins. */
    static final String BY_PATTERN = "https://team7.trusted.example";

    public static class Cors implements QuarkusTestProfile {
        @Override
        public Map<String, String> getConfigOverrides() {
            return Map.of("quarkus.http.cors.enabled", "true",
                    "quarkus.http.cors.origins", APP + ",/https://[a-z0-9]+\\.trusted\\.example/");
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
        assertTrue(lower(r.header("Vary")).contains("origin"), r.headers().toString());
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
            // the answer echoes the caller's origin: caches must key it by origin (found by hunt22)
            assertTrue(lower(r.header("Vary")).contains("origin"), "stream " + stream + ": " + r.headers());
            List<String> exposed = List.of(lower(r.header("Access-Control-Expose-Headers")).split("\\s*,\\s*"));
            for (String h : new String[]{"x-hedgerow-request-id", "x-request-id", "x-hedgerow-route",
                    "x-hedgerow-attempts", "retry-after", "retry-after-ms", "x-should-retry"}) {
                assertTrue(exposed.contains(h), "stream " + stream + ": " + h + " not in " + exposed);
            }
        }
    }

    /**
     * An answer to a request without an Origin varies on it too: cached, it must not be handed to a browser's
     * cross-origin request, whose answer carries the origin (found by hunt22's review).
     */
    @Test
    void anAnswerWithoutAnOriginVariesOnItToo() {
        Response r = given().auth().oauth2("k-acme").get("/v1/models");
        assertEquals(200, r.statusCode(), r.asString());
        assertNull(r.header("Access-Control-Allow-Origin"));
        assertTrue(lower(r.header("Vary")).contains("origin"), r.headers().toString());
    }

    /** An OPTIONS that is no preflight goes past the filter to the path's own answer, readable by the page. */
    @Test
    void aPlainOptionsFromAnAllowedOriginGetsThePathsMethods() {
        Response r = given().header("Origin", APP).options("/v1/chat/completions");
        assertEquals(204, r.statusCode(), r.asString());
        assertEquals("POST, OPTIONS", r.header("Allow"));
        assertEquals(APP, r.header("Access-Control-Allow-Origin"));
    }

    /**
     * Quarkus' CORS filter refused another origin with an empty 403 ("CORS Rejected - Invalid origin" in the status
     * line only), the one answer of the gateway that was not the OpenAI envelope.
     */
    @Test
    void anotherOriginIsRefusedInTheEnvelope() {
        String elsewhere = "https://elsewhere.example";
        Response preflight = given().header("Origin", elsewhere)
                .header("Access-Control-Request-Method", "POST").options("/v1/chat/completions");
        Response post = given().auth().oauth2("k-acme").header("Origin", elsewhere)
                .contentType("application/json").body(CHAT).post("/v1/chat/completions");
        Response admin = given().auth().oauth2("a-acme").header("Origin", elsewhere).get("/admin/groups");
        Response malformed = given().auth().oauth2("k-acme").header("Origin", "https://%s").get("/v1/models");
        for (Response r : List.of(preflight, post, admin, malformed)) {
            assertEquals(403, r.statusCode(), r.asString());
            assertNull(r.header("Access-Control-Allow-Origin"), r.headers().toString());
            assertEquals("application/json", r.contentType(), r.headers().toString());
            assertEquals("permission_error", r.jsonPath().getString("error.type"), r.asString());
            assertEquals("cors_origin_not_allowed", r.jsonPath().getString("error.code"), r.asString());
            assertTrue(r.jsonPath().getString("error.message").contains("are not allowed"), r.asString());
            assertTrue(r.jsonPath().getMap("error").containsKey("param"), r.asString());
        }
        assertTrue(post.jsonPath().getString("error.message").contains(elsewhere), post.asString());
    }

    @Test
    void anOriginMatchedByARegexEntryIsServed() {
        Response r = given().auth().oauth2("k-acme").header("Origin", BY_PATTERN).contentType("application/json")
                .body(CHAT).post("/v1/chat/completions");
        assertEquals(200, r.statusCode(), r.asString());
        assertEquals(BY_PATTERN, r.header("Access-Control-Allow-Origin"));
        Response preflight = given().header("Origin", BY_PATTERN).header("Access-Control-Request-Method", "POST")
                .options("/v1/chat/completions");
        assertEquals(200, preflight.statusCode(), preflight.asString());
        assertEquals(BY_PATTERN, preflight.header("Access-Control-Allow-Origin"));
        given().auth().oauth2("k-acme").header("Origin", "https://team7.trusted.example.evil.example")
                .get("/v1/models").then().statusCode(403);
    }

    /** A page served from the gateway's own origin is not cross-origin: Quarkus lets it through, unlisted. */
    @Test
    void theGatewaysOwnOriginIsServed() {
        Response r = given().auth().oauth2("k-acme").header("Origin", "http://localhost:" + RestAssured.port)
                .get("/v1/models");
        assertEquals(200, r.statusCode(), r.asString());
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
