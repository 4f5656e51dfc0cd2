package dev.hedgerow.function.console;

import com.fasterxml.jackson.databind.JsonNode;
import dev.hedgerow.api.Json;
import dev.hedgerow.catalog.SecretBox;
import dev.hedgerow.function.HedgerowApp;
import dev.hedgerow.routing.LearnedModels;
import dev.hedgerow.routing.Router;
import dev.hedgerow.sim.Fault;
import dev.hedgerow.state.CachingStateStore;
import dev.hedgerow.state.RouteSnapshot;
import dev.hedgerow.state.StateStore;
import dev.hedgerow.testsupport.AppTestResource;
import dev.hedgerow.testsupport.GatewayHarness;
import dev.hedgerow.testsupport.RedisStores;
import dev.hedgerow.time.FakeTicker;
import io.quarkus.test.common.QuarkusTestResource;
import io.quarkus.test.junit.QuarkusTest;
import io.restassured.response.Response;
import io.restassured.specification.RequestSpecification;
import io.vertx.core.Vertx;
import jakarta.inject.Inject;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;

import static dev.hedgerow.testsupport.Eventually.eventually;
import static io.restassured.RestAssured.given;
import static org.hamcrest.Matchers.containsString;
import static org.hamcrest.Matchers.equalTo;
import static org.hamcrest.Matchers.everyItem;
import static org.hamcrest.Matchers.greaterThan;
import static org.hamcrest.Matchers.hasItem;
import static org.hamcrest.Matchers.not;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * {@code POST /admin/routes/reset} on the real application over a real Redis, in front of the simulators: an operator
 * puts a cooled-down route back into service (its breaker, cooldown and Retry-After hold cleared), the next request is
 * served by it, on this instance and on another one on the same Redis (through that instance's snapshot cache), the
 * reset is audited, and a bad body, an unknown route or another org's route changes nothing. The {@code duo} group's
 * breaker is given a 60 s cooldown for these tests, so that only the reset can end one while a test runs.
 */
@QuarkusTest
@QuarkusTestResource(value = AppTestResource.class, restrictToAnnotatedClass = false)
class AdminResetTest {
    static final String LONG_COOLDOWN = "{\"breaker\": {\"max_fails\": 1, \"fail_timeout\": \"60s\"}}";

    @Inject
    HedgerowApp app;

    @Inject
    Vertx vertx;

    StateStore store() {
        return app.core().store();
    }

    @BeforeEach
    void duoWithALongCooldown() {
        for (String org : List.of("acme", "other")) {
            store().resetHealth(org + "/duo-alpha").await().atMost(Duration.ofSeconds(5));
        }
        store().resetHealth("acme/duo-beta").await().atMost(Duration.ofSeconds(5));
        AppTestResource.sims().values().forEach(s -> s.clearFaults());
        admin("a-acme").body(AdminApiTest.DUO_AS_FILED).put("/admin/groups/duo").then().statusCode(200);
        admin("a-acme").body(LONG_COOLDOWN).put("/admin/groups/duo").then().statusCode(200);
    }

    /** The next test class on this app finds duo as filed and its routes healthy. */
    @AfterEach
    void duoAsFiled() {
        admin("a-acme").body(AdminApiTest.DUO_AS_FILED).put("/admin/groups/duo").then().statusCode(200);
        admin("a-acme").body("{\"route\":\"duo-alpha\",\"standing\":\"good\"}").put("/admin/routes/standing").then()
                .statusCode(200);
        for (String org : List.of("acme", "other")) {
            store().resetHealth(org + "/duo-alpha").await().atMost(Duration.ofSeconds(5));
        }
        store().resetHealth("acme/duo-beta").await().atMost(Duration.ofSeconds(5));
        AppTestResource.sims().values().forEach(s -> s.clearFaults());
    }

    static RequestSpecification admin(String key) {
        return given().auth().oauth2(key).contentType("application/json");
    }

    static Response reset(String key, String route) {
        return admin(key).body("{\"route\":\"" + route + "\"}").post("/admin/routes/reset");
    }

    /** A request to duo asking for alpha first (beta after it), on the instance at {@code baseUri}. */
    static Response alphaFirst(String baseUri, String prompt) {
        var spec = given();
        if (baseUri != null) {
            spec = spec.baseUri(baseUri);
        }
        return spec.auth().oauth2("k-acme").contentType("application/json")
                .body("{\"model\":\"duo\",\"provider\":{\"order\":[\"alpha\",\"beta\"]},"
                        + "\"messages\":[{\"role\":\"user\",\"content\":\"" + prompt + "\"}]}")
                .post("/v1/chat/completions");
    }

    /** The routes the request's attempts went to, in order (its {@code x-hedgerow-attempts} trail). */
    static List<String> tried(Response r) {
        assertEquals(200, r.statusCode(), r.asString());
        List<String> out = new ArrayList<>();
        try {
            Json.parse(r.header("x-hedgerow-attempts")).forEach(a -> out.add(a.path("route").asText()));
        } catch (java.io.IOException e) {
            throw new AssertionError("bad trail header: " + r.header("x-hedgerow-attempts"), e);
        }
        return out;
    }

    /** Opens duo-alpha's breaker: alpha answers 500 once, the request fails over to beta. */
    static void coolAlpha() {
        AppTestResource.sims().get("alpha").enqueue("kimi-a", Fault.status(500));
        assertEquals(List.of("duo-alpha", "duo-beta"), tried(alphaFirst(null, "alpha fails")));
    }

    @Test
    void aResetPutsACooledRouteBackIntoServiceForTheNextRequest() {
        coolAlpha();
        assertEquals(List.of("duo-beta"), tried(alphaFirst(null, "alpha is avoided")), "the open breaker is avoided");

        reset("a-acme", "duo-alpha").then().statusCode(200)
                .body("route", equalTo("duo-alpha"))
                .body("alias", equalTo("duo"))
                .body("previous_state", equalTo("cooling_down"))
                .body("state", equalTo("healthy"))
                .body("cooling_down", equalTo(false))
                .body("cooldown_remaining_ms", equalTo(0))
                .body("half_open", equalTo(false))
                .body("fails", equalTo(0))
                .body("retry_after_ms", equalTo(0));

        assertEquals(List.of("duo-alpha"), tried(alphaFirst(null, "alpha is back")), "served by the reset route");
        admin("a-acme").get("/admin/health?alias=duo").then().statusCode(200)
                .body("groups[0].members.find { it.route == 'duo-alpha' }.state", equalTo("healthy"));
    }

    @Test
    void aResetClearsARetryAfterHold() {
        AppTestResource.sims().get("alpha").enqueue("kimi-a", Fault.rateLimited(120));
        assertEquals(List.of("duo-alpha", "duo-beta"), tried(alphaFirst(null, "alpha is rate limited")));
        Map<String, RouteSnapshot> held = store().snapshot(List.of("acme/duo-alpha"), Duration.ofMinutes(1)).await()
                .atMost(Duration.ofSeconds(5));
        assertTrue(held.get("acme/duo-alpha").retryAfterMillis() > 60_000, "precondition: the 120 s hold is set");

        reset("a-acme", "duo-alpha").then().statusCode(200)
                .body("retry_after_ms", equalTo(0))
                .body("state", equalTo("healthy"));
        assertEquals(List.of("duo-alpha"), tried(alphaFirst(null, "no longer held")));
    }

    /**
     * Another instance on the same Redis ranks from its own snapshot cache: once its copy of the route (taken while
     * the breaker was open) reaches its max-age, it reads the reset and serves the route again. Its cache's clock is a
     * fake one, moved by the test.
     */
    @Test
    void anotherInstanceServesTheRouteOnceItsCachedCopyAgesOut() {
        FakeTicker ticker = new FakeTicker();
        Vertx v = Vertx.vertx();
        try (RedisStores.Opened redis2 = RedisStores.open(v, AppTestResource.redis().url());
             GatewayHarness other = GatewayHarness.start(v, AppTestResource.YAML, AppTestResource.sims(),
                     new CachingStateStore(redis2.store(), Duration.ofMillis(50), ticker),
                     SecretBox.of(AppTestResource.SECRET_KEY))) {
            coolAlpha();
            // the other instance reads the open breaker, keeps that copy and avoids the route
            assertEquals(List.of("duo-beta"), tried(alphaFirst(other.baseUrl(), "the other avoids alpha")));

            reset("a-acme", "duo-alpha").then().statusCode(200).body("state", equalTo("healthy"));

            ticker.advance(Duration.ofMillis(50));
            assertEquals(List.of("duo-alpha"), tried(alphaFirst(other.baseUrl(), "the other serves alpha")),
                    "the other instance serves the reset route once its copy is 50 ms old");
        } finally {
            v.close().toCompletionStage().toCompletableFuture().orTimeout(10, TimeUnit.SECONDS).join();
        }
    }

    @Test
    void aResetIsAnAdminEventInTheAuditLogWithWhoAndWhatTheRouteWas() {
        coolAlpha();
        reset("a-acme", "duo-alpha").then().statusCode(200);

        Response events = admin("a-acme").get("/admin/audit?type=admin&alias=duo&limit=1");
        events.then().statusCode(200)
                .body("count", equalTo(1))
                .body("events[0].type", equalTo("admin"))
                .body("events[0].action", equalTo("reset_health"))
                .body("events[0].org", equalTo("acme"))
                .body("events[0].alias", equalTo("duo"))
                .body("events[0].route", equalTo("duo-alpha"))
                .body("events[0].admin_key", equalTo("ops"))
                .body("events[0].previous_state", equalTo("cooling_down"))
                .body("events[0].message", containsString("Health of duo-alpha reset by admin key 'ops'"))
                .body("events[0].message", containsString("cooldown"))
                .body("events[0].time", not(equalTo("")));
        String id = events.path("events[0].id");
        admin("a-acme").get("/admin/audit?type=admin").then().statusCode(200)
                .body("events.type", everyItem(equalTo("admin")));
        admin("a-other").get("/admin/audit?type=admin&limit=1000").then().statusCode(200)
                .body("events.id", not(hasItem(id)));
    }

    @Test
    void aResetKeepsStandingAndTheLearntModels() {
        // alpha serves, so that it has learnt latency models; then it is suspended and fails
        tried(alphaFirst(null, "alpha learns"));
        admin("a-acme").body("{\"route\":\"duo-alpha\",\"standing\":\"suspended\"}").put("/admin/routes/standing")
                .then().statusCode(200);
        eventually(() -> blobs().containsKey(LearnedModels.EMA) && blobs().containsKey(LearnedModels.PEWMA_TPOT)
                && blobs().containsKey(Router.STANDING), "alpha's latency models and standing are stored");
        Map<String, String> before = blobs();
        store().recordFailure("acme/duo-alpha", 1, Duration.ofSeconds(60)).await().atMost(Duration.ofSeconds(5));

        reset("a-acme", "duo-alpha").then().statusCode(200)
                .body("state", equalTo("suspended"))
                .body("standing", equalTo("suspended"))
                .body("cooling_down", equalTo(false))
                .body("fails", equalTo(0));
        assertEquals(before, blobs(), "the learnt models and the standing are kept");
    }

    /** duo-alpha's stored named values (learnt models, standing, ...), as another instance reads them. */
    private Map<String, String> blobs() {
        try (RedisStores.Opened plain = RedisStores.open(vertx, AppTestResource.redis().url())) {
            return plain.store().snapshot(List.of("acme/duo-alpha"), Duration.ofMinutes(1)).await()
                    .atMost(Duration.ofSeconds(5)).get("acme/duo-alpha").blobs();
        }
    }

    private static JsonNode health(String route) {
        try {
            JsonNode h = Json.parse(admin("a-acme").get("/admin/health?alias=duo").then().statusCode(200).extract()
                    .asString());
            for (JsonNode m : h.path("groups").path(0).path("members")) {
                if (m.path("route").asText().equals(route)) {
                    return m;
                }
            }
            throw new AssertionError("no member " + route + " in " + h);
        } catch (java.io.IOException e) {
            throw new AssertionError(e);
        }
    }

    @Test
    void anUnknownRouteIs404NamingRouteAndAnotherOrgsRouteIsAnsweredAlike() {
        String unknown = reset("a-acme", "no-such-route").then().statusCode(404)
                .body("error.code", equalTo("not_found"))
                .body("error.type", equalTo("invalid_request_error"))
                .body("error.param", equalTo("route"))
                .extract().path("error.message");
        assertEquals("No route 'no-such-route' in this organization.", unknown);
        reset("a-acme", "secret-gamma").then().statusCode(404)
                .body("error.code", equalTo("not_found"))
                .body("error.param", equalTo("route"))
                .body("error.message", equalTo("No route 'secret-gamma' in this organization."));
    }

    /** Both orgs have a route with the id duo-alpha: each admin resets its own org's only. */
    @Test
    void aResetOfARouteIdBothOrgsHaveResetsOnlyTheAdminsOwn() {
        store().recordFailure("acme/duo-alpha", 1, Duration.ofSeconds(60)).await().atMost(Duration.ofSeconds(5));
        store().recordFailure("other/duo-alpha", 1, Duration.ofSeconds(60)).await().atMost(Duration.ofSeconds(5));

        reset("a-other", "duo-alpha").then().statusCode(200).body("state", equalTo("healthy"));
        assertEquals("cooling_down", health("duo-alpha").path("state").asText(), "acme's duo-alpha is untouched");

        reset("a-acme", "duo-alpha").then().statusCode(200).body("state", equalTo("healthy"));
        given().auth().oauth2("a-other").get("/admin/health?alias=duo").then().statusCode(200)
                .body("groups[0].members[0].state", equalTo("healthy"));
    }

    @Test
    void aBadBodyIs400AndResetsNothing() {
        store().recordFailure("acme/duo-alpha", 1, Duration.ofSeconds(60)).await().atMost(Duration.ofSeconds(5));
        Map<String, String[]> bodies = Map.of(
                "", new String[] {"invalid_request", "route"},
                "{}", new String[] {"invalid_request", "route"},
                "{\"route\": 5}", new String[] {"invalid_request", "route"},
                "{\"route\": null}", new String[] {"invalid_request", "route"},
                "[\"duo-alpha\"]", new String[] {"invalid_json", null},
                "{\"route\": \"duo-alpha\", \"alias\": \"duo\"}", new String[] {"unknown_field", "alias"},
                "{\"route\": \"duo-alpha\"", new String[] {null, null},
                "{\"route\": \"duo-alpha\"} {}", new String[] {null, null});
        bodies.forEach((body, want) -> {
            Response r = admin("a-acme").body(body).post("/admin/routes/reset");
            assertEquals(400, r.statusCode(), body + ": " + r.asString());
            assertTrue(r.contentType().startsWith("application/json"), body + ": " + r.contentType());
            assertEquals("invalid_request_error", r.path("error.type"), body + ": " + r.asString());
            if (want[0] != null) {
                assertEquals(want[0], r.path("error.code"), body + ": " + r.asString());
                assertEquals(want[1], r.path("error.param"), body + ": " + r.asString());
            }
        });
        assertEquals("cooling_down", health("duo-alpha").path("state").asText(), "no bad body reset anything");
    }

    @Test
    void onlyAnAdminKeyResetsAndOnlyWithPost() {
        store().recordFailure("acme/duo-alpha", 1, Duration.ofSeconds(60)).await().atMost(Duration.ofSeconds(5));
        given().contentType("application/json").body("{\"route\":\"duo-alpha\"}").post("/admin/routes/reset").then()
                .statusCode(401).body("error.code", equalTo("invalid_api_key"));
        reset("k-acme", "duo-alpha").then().statusCode(403).body("error.code", equalTo("admin_key_required"));
        admin("a-acme").get("/admin/routes/reset").then().statusCode(405)
                .header("Allow", equalTo("POST, OPTIONS"));
        assertEquals("cooling_down", health("duo-alpha").path("state").asText(), "nothing was reset");
        assertFalse(health("duo-alpha").path("cooldown_remaining_ms").asLong() <= 0);
    }

    @Test
    void theOpenApiDocumentDescribesTheReset() {
        given().get("/admin/openapi?format=json").then().statusCode(200)
                .body("paths.'/admin/routes/reset'.post.summary", containsString("back into service"))
                .body("paths.'/admin/routes/reset'.post.responses.size()", greaterThan(0));
    }
}
