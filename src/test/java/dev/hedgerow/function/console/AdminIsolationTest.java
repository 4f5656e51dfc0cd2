package dev.hedgerow.function.console;

import com.fasterxml.jackson.databind.JsonNode;
import dev.hedgerow.api.Json;
import dev.hedgerow.catalog.SecretBox;
import dev.hedgerow.function.HedgerowApp;
import dev.hedgerow.sim.Fault;
import dev.hedgerow.state.StateStore;
import dev.hedgerow.state.VersionedDoc;
import dev.hedgerow.testsupport.AppTestResource;
import io.quarkus.test.common.QuarkusTestResource;
import io.quarkus.test.junit.QuarkusTest;
import io.restassured.response.Response;
import io.restassured.specification.RequestSpecification;
import jakarta.inject.Inject;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

import java.io.IOException;
import java.io.PrintWriter;
import java.io.StringWriter;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.logging.Handler;
import java.util.logging.LogRecord;
import java.util.logging.Logger;
import java.util.logging.SimpleFormatter;

import static io.restassured.RestAssured.given;
import static org.hamcrest.Matchers.equalTo;
import static org.hamcrest.Matchers.hasItem;
import static org.hamcrest.Matchers.not;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;
import static dev.hedgerow.testsupport.Eventually.eventually;

/**
 * The admin API keeps organizations apart, on the real application over a real Redis: an admin key of {@code acme}
 * sees and edits only acme (another org's alias or route id is answered exactly like one that does not exist),
 * the route id {@code duo-alpha} that both orgs have stays two routes, client keys and missing keys are refused on
 * every endpoint, and no admin answer, audit entry or log line carries a provider's API key, which stays sealed in
 * the stored catalog across admin edits.
 */
@QuarkusTest
@QuarkusTestResource(value = AppTestResource.class, restrictToAnnotatedClass = false)
class AdminIsolationTest {
    static final List<String> SECRETS = List.of("sk-alpha", "sk-beta", "cap-alpha", "cap-beta");

    /** Every admin endpoint, with a body that would be valid for acme's admin. */
    static final List<String[]> ENDPOINTS = List.of(
            new String[] {"GET", "/admin/whoami", null},
            new String[] {"GET", "/admin/groups", null},
            new String[] {"GET", "/admin/groups/duo", null},
            new String[] {"PUT", "/admin/groups/duo", "{\"strategy\":\"weighted\"}"},
            new String[] {"POST", "/admin/members/pin", "{\"route\":\"duo-alpha\"}"},
            new String[] {"POST", "/admin/members/unpin", "{\"alias\":\"duo\"}"},
            new String[] {"POST", "/admin/members/drain", "{\"route\":\"duo-alpha\",\"drained\":true}"},
            new String[] {"PUT", "/admin/routes/standing", "{\"route\":\"duo-alpha\",\"standing\":\"suspended\"}"},
            new String[] {"PUT", "/admin/routes/verification", "{\"route\":\"duo-alpha\",\"verification\":\"fail:x\"}"},
            new String[] {"POST", "/admin/routes/reset", "{\"route\":\"duo-alpha\"}"},
            new String[] {"GET", "/admin/health", null},
            new String[] {"GET", "/admin/audit", null},
            new String[] {"POST", "/admin/explain", "{\"model\":\"duo\",\"messages\":[{\"role\":\"user\","
                    + "\"content\":\"x\"}]}"});

    static final Queue LOGS = new Queue();

    @Inject
    HedgerowApp app;

    /** Collects every log line of the application (message, parameters and stack traces) while this class runs. */
    static final class Queue extends Handler {
        final ConcurrentLinkedQueue<String> lines = new ConcurrentLinkedQueue<>();
        private final SimpleFormatter formatter = new SimpleFormatter();

        @Override
        public void publish(LogRecord r) {
            StringBuilder sb = new StringBuilder(r.getLoggerName() + ": " + formatter.formatMessage(r));
            if (r.getThrown() != null) {
                StringWriter w = new StringWriter();
                r.getThrown().printStackTrace(new PrintWriter(w));
                sb.append('\n').append(w);
            }
            lines.add(sb.toString());
        }

        @Override
        public void flush() {
        }

        @Override
        public void close() {
        }
    }

    @BeforeAll
    static void captureLogs() {
        Logger.getLogger("").addHandler(LOGS);
    }

    @AfterAll
    static void releaseLogs() {
        Logger.getLogger("").removeHandler(LOGS);
    }

    /** Leaves acme's and other's {@code duo} as the catalog file declares them, for the other test classes. */
    @AfterEach
    void resetDuo() {
        for (String key : List.of("a-acme", "a-other")) {
            as(key).body("{\"alias\":\"duo\"}").post("/admin/members/unpin").then().statusCode(200);
            as(key).body("{\"route\":\"duo-alpha\",\"drained\":false}").post("/admin/members/drain").then()
                    .statusCode(200);
            as(key).body("{\"route\":\"duo-alpha\",\"standing\":\"good\"}").put("/admin/routes/standing").then()
                    .statusCode(200);
            as(key).body("{\"route\":\"duo-alpha\",\"verification\":\"pass\"}").put("/admin/routes/verification")
                    .then().statusCode(200);
        }
        as("a-acme").body("{\"strategy\":\"rr_health\",\"members\":[{\"route\":\"duo-alpha\",\"weight\":100},"
                + "{\"route\":\"duo-beta\",\"weight\":100}]}").put("/admin/groups/duo").then().statusCode(200);
        as("a-other").body("{\"strategy\":\"auto\",\"members\":[{\"route\":\"duo-alpha\",\"weight\":100}]}")
                .put("/admin/groups/duo").then().statusCode(200);
    }

    static RequestSpecification as(String key) {
        RequestSpecification r = given().contentType("application/json");
        return key == null ? r : r.auth().oauth2(key);
    }

    static Response call(String key, String[] endpoint) {
        RequestSpecification r = as(key);
        if (endpoint[2] != null) {
            r = r.body(endpoint[2]);
        }
        return r.request(endpoint[0], endpoint[1]);
    }

    StateStore store() {
        return app.core().store();
    }

    VersionedDoc stored(String org) {
        return store().orgCatalog(org).await().atMost(Duration.ofSeconds(5)).orElseThrow();
    }

    static JsonNode json(String s) {
        try {
            return Json.parse(s.getBytes(java.nio.charset.StandardCharsets.UTF_8));
        } catch (IOException e) {
            throw new AssertionError(e);
        }
    }

    static String chat(String clientKey, String alias, String content) {
        return as(clientKey).body("{\"model\":\"" + alias + "\",\"messages\":[{\"role\":\"user\",\"content\":\""
                + content + "\"}]}").post("/v1/chat/completions").then().extract().asString();
    }

    // ---- authentication --------------------------------------------------------------------------------------

    @Test
    void aClientKeyIsRefusedWithAPermissionErrorOnEveryAdminEndpoint() {
        long version = stored("acme").version();
        for (String[] e : ENDPOINTS) {
            call("k-acme", e).then().statusCode(403).body("error.code", equalTo("admin_key_required"));
        }
        assertEquals(version, stored("acme").version(), "a client key changed the catalog");
    }

    @Test
    void noKeyOrAnUnknownKeyIsUnauthorizedOnEveryAdminEndpoint() {
        for (String[] e : ENDPOINTS) {
            call(null, e).then().statusCode(401).body("error.type", equalTo("invalid_request_error"));
            call("a-nobody", e).then().statusCode(401).body("error.type", equalTo("invalid_request_error"));
        }
    }

    // ---- seeing --------------------------------------------------------------------------------------------

    @Test
    void anAdminSeesOnlyItsOwnOrgsGroupsHealthAndIdentity() {
        as("a-acme").get("/admin/whoami").then().statusCode(200).body("org", equalTo("acme"))
                .body("aliases", not(hasItem("secret")));
        as("a-other").get("/admin/whoami").then().statusCode(200).body("org", equalTo("other"))
                .body("aliases", equalTo(List.of("secret", "duo")));
        as("a-other").get("/admin/groups/duo").then().statusCode(200)
                .body("members.route", equalTo(List.of("duo-alpha")));
        as("a-other").get("/admin/health").then().statusCode(200).body("org", equalTo("other"))
                .body("groups.alias", equalTo(List.of("secret", "duo")))
                .body("groups.members.flatten().route", equalTo(List.of("secret-gamma", "duo-alpha")));
        as("a-acme").get("/admin/health").then().statusCode(200)
                .body("groups.members.flatten().route", not(hasItem("secret-gamma")))
                .body("groups.find { it.alias == 'duo' }.members.route", equalTo(List.of("duo-alpha", "duo-beta")));
    }

    @Test
    void anotherOrgsAliasIsAnsweredLikeOneThatDoesNotExist() {
        for (String alias : List.of("secret", "no-such-alias")) {
            as("a-acme").get("/admin/groups/" + alias).then().statusCode(404).body("error.code", equalTo("not_found"));
            as("a-acme").get("/admin/health?alias=" + alias).then().statusCode(404)
                    .body("error.code", equalTo("not_found"));
            as("a-acme").body("{\"strategy\":\"weighted\"}").put("/admin/groups/" + alias).then().statusCode(404)
                    .body("error.code", equalTo("not_found"));
            as("a-acme").body("{\"alias\":\"" + alias + "\"}").post("/admin/members/unpin").then().statusCode(404)
                    .body("error.code", equalTo("not_found"));
            as("a-acme").body("{\"model\":\"" + alias + "\",\"messages\":[{\"role\":\"user\",\"content\":\"x\"}]}")
                    .post("/admin/explain").then().statusCode(404).body("error.code", equalTo("model_not_found"));
        }
    }

    @Test
    void anotherOrgsRouteIdIsAnsweredLikeOneThatDoesNotExist() {
        long version = stored("other").version();
        for (String route : List.of("secret-gamma", "no-such-route")) {
            // each names the body's field that named the route, as the reset does
            as("a-acme").body("{\"route\":\"" + route + "\"}").post("/admin/members/pin").then().statusCode(404)
                    .body("error.code", equalTo("not_found")).body("error.param", equalTo("route"));
            as("a-acme").body("{\"route\":\"" + route + "\",\"drained\":true}").post("/admin/members/drain").then()
                    .statusCode(404).body("error.code", equalTo("not_found")).body("error.param", equalTo("route"));
            as("a-acme").body("{\"route\":\"" + route + "\",\"standing\":\"suspended\"}")
                    .put("/admin/routes/standing").then().statusCode(404).body("error.code", equalTo("not_found"))
                    .body("error.param", equalTo("route"));
            as("a-acme").body("{\"route\":\"" + route + "\",\"verification\":\"fail:x\"}")
                    .put("/admin/routes/verification").then().statusCode(404)
                    .body("error.code", equalTo("not_found")).body("error.param", equalTo("route"));
            as("a-acme").body("{\"route\":\"" + route + "\"}").post("/admin/routes/reset").then().statusCode(404)
                    .body("error.code", equalTo("not_found")).body("error.param", equalTo("route"));
            as("a-acme").body("{\"members\":[{\"route\":\"" + route + "\",\"weight\":5}]}").put("/admin/groups/duo")
                    .then().statusCode(404).body("error.code", equalTo("not_found"))
                    .body("error.param", equalTo("members"));
        }
        assertEquals(version, stored("other").version(), "acme's admin changed other's catalog");
        as("a-other").get("/admin/health?alias=secret").then()
                .body("groups[0].members[0].standing", equalTo("good"))
                .body("groups[0].members[0].verification", not(equalTo("fail:x")));
    }

    @Test
    void usageOfOneOrgIsNotShownToTheOther() {
        int otherBefore = otherDuoCompletionTokens();
        Map<String, Object> acmeBefore = acmeDuoAlpha("usage");

        assertTrue(json(chat("k-other", "duo", "only other's")).path("choices").isArray());

        eventually(() -> otherDuoCompletionTokens() > otherBefore, "other's usage recorded");
        assertEquals(acmeBefore, acmeDuoAlpha("usage"), "other's request counted on acme's duo-alpha");
    }

    @Test
    void auditAndHealthOfOneOrgAreNotShownToTheOther() {
        store().resetHealth("acme/duo-alpha").await().atMost(Duration.ofSeconds(5));
        String missing = "b-only-missing-" + System.nanoTime();
        chat("k-other", missing, "x");
        AppTestResource.sims().get("alpha").enqueue("kimi-a", Fault.status(500));
        chat("k-other", "duo", "fails for other");
        try {
            eventually(() -> !otherDuoRequestIds().isEmpty(), "other's failed request in other's audit");
            List<String> otherIds = otherDuoRequestIds();
            as("a-other").get("/admin/audit?reason=model_not_found&limit=200").then().statusCode(200)
                    .body("events.alias", hasItem(missing));

            List<String> acmeIds = as("a-acme").get("/admin/audit?limit=1000").then().statusCode(200)
                    .body("events.alias", not(hasItem(missing))).extract().path("events.request_id");
            otherIds.forEach(id -> assertFalse(acmeIds.contains(id), id + " in acme's audit"));
            as("a-acme").get("/admin/audit?alias=" + missing).then().statusCode(200).body("count", equalTo(0));
            // the failure cooled other's duo-alpha only
            as("a-other").get("/admin/health?alias=duo").then()
                    .body("groups[0].members[0].state", equalTo("cooling_down"));
            assertEquals("healthy", acmeDuoAlpha("state"));
            assertEquals(0, (Integer) acmeDuoAlpha("fails"));
        } finally {
            store().resetHealth("other/duo-alpha").await().atMost(Duration.ofSeconds(5));
        }
    }

    int otherDuoCompletionTokens() {
        return as("a-other").get("/admin/health?alias=duo").then().statusCode(200).extract()
                .path("groups[0].members[0].usage.completion_tokens");
    }

    <T> T acmeDuoAlpha(String field) {
        return as("a-acme").get("/admin/health?alias=duo").then().statusCode(200).extract()
                .path("groups[0].members.find { it.route == 'duo-alpha' }." + field);
    }

    List<String> otherDuoRequestIds() {
        return as("a-other").get("/admin/audit?type=request&alias=duo&limit=200").then().statusCode(200).extract()
                .path("events.request_id");
    }

    // ---- colliding route ids ------------------------------------------------------------------------------------

    @Test
    void collidingRouteIdsAreTwoRoutesForEdits() {
        String otherBefore = stored("other").json();
        as("a-acme").body("{\"route\":\"duo-alpha\",\"drained\":true}").post("/admin/members/drain").then()
                .statusCode(200).body("members.find { it.route == 'duo-alpha' }.drained", equalTo(true));
        as("a-acme").body("{\"strategy\":\"weighted\",\"members\":[{\"route\":\"duo-alpha\",\"weight\":7}]}")
                .put("/admin/groups/duo").then().statusCode(200);

        assertEquals(otherBefore, stored("other").json(), "an edit of acme's duo-alpha changed other's catalog");
        as("a-other").get("/admin/groups/duo").then().statusCode(200)
                .body("strategy", equalTo("auto"))
                .body("members[0].drained", equalTo(false))
                .body("members[0].weight", equalTo(100));
        JsonNode acme = json(stored("acme").json());
        JsonNode edited = null;
        for (JsonNode r : acme.path("routes")) {
            if (r.path("id").asText().equals("duo-alpha")) {
                edited = r;
            }
        }
        assertTrue(edited != null && edited.path("weight").asInt() == 7, String.valueOf(edited));
        // other's duo-alpha still serves while acme's is drained
        assertEquals(200, as("k-other").body("{\"model\":\"duo\",\"messages\":[{\"role\":\"user\","
                + "\"content\":\"still here\"}]}").post("/v1/chat/completions").statusCode());
    }

    @Test
    void collidingRouteIdsAreTwoRoutesForStandingAndVerification() {
        as("a-acme").body("{\"route\":\"duo-alpha\",\"standing\":\"suspended\"}").put("/admin/routes/standing")
                .then().statusCode(200);
        as("a-acme").body("{\"route\":\"duo-alpha\",\"verification\":\"fail:acme only\"}")
                .put("/admin/routes/verification").then().statusCode(200);

        as("a-acme").get("/admin/health?alias=duo").then()
                .body("groups[0].members.find { it.route == 'duo-alpha' }.standing", equalTo("suspended"))
                .body("groups[0].members.find { it.route == 'duo-alpha' }.state", equalTo("failing_verification"));
        as("a-other").get("/admin/health?alias=duo").then()
                .body("groups[0].members[0].standing", equalTo("good"))
                .body("groups[0].members[0].state", not(equalTo("failing_verification")));
        as("a-other").body("{\"model\":\"duo\",\"messages\":[{\"role\":\"user\",\"content\":\"x\"}]}")
                .post("/admin/explain").then().statusCode(200)
                .body("outcome", equalTo("ready"))
                .body("routes[0].rank", equalTo(1));
    }

    // ---- provider keys ----------------------------------------------------------------------------------------

    @Test
    void noAdminAnswerCarriesAProviderKey() {
        chat("k-acme", "duo", "leave a trace");
        chat("k-acme", "no-such-alias", "leave a blocked trace");
        List<String> bodies = new ArrayList<>();
        for (String key : List.of("a-acme", "a-other")) {
            for (String[] e : ENDPOINTS) {
                bodies.add(e[0] + " " + e[1] + " -> " + call(key, e).then().extract().asString());
            }
            bodies.add(as(key).get("/admin/audit?limit=1000").then().statusCode(200).extract().asString());
        }
        // a refused edit answers with the catalog rules' errors
        bodies.add(as("a-acme").body("{\"members\":[{\"route\":\"duo-alpha\",\"weight\":0},{\"route\":\"duo-beta\","
                + "\"weight\":0}]}").put("/admin/groups/duo").then().statusCode(400).extract().asString());
        for (String body : bodies) {
            for (String secret : SECRETS) {
                assertFalse(body.contains(secret), "'" + secret + "' in " + body);
            }
        }
    }

    @Test
    void theStoredCatalogKeepsProviderKeysSealedAfterAdminEdits() {
        as("a-acme").body("{\"strategy\":\"weighted\",\"members\":[{\"route\":\"duo-beta\",\"weight\":40}]}")
                .put("/admin/groups/duo").then().statusCode(200);
        as("a-acme").body("{\"route\":\"duo-beta\"}").post("/admin/members/pin").then().statusCode(200);

        String stored = stored("acme").json();
        for (String secret : SECRETS) {
            assertFalse(stored.contains(secret), "'" + secret + "' in plain text in Redis: " + stored);
        }
        JsonNode providers = json(stored).path("providers");
        assertEquals(2, providers.size());
        SecretBox box = SecretBox.of(AppTestResource.SECRET_KEY);
        for (JsonNode p : providers) {
            String sealed = p.path("api_key").asText();
            assertTrue(sealed.startsWith(SecretBox.PREFIX), p.toString());
            assertEquals("sk-" + p.path("id").asText(), box.open(sealed));
        }
        // and the gateway still authenticates upstream with the key it unseals
        assertTrue(json(chat("k-acme", "duo", "after the edit")).path("choices").isArray());
    }

    @Test
    void noLogLineCarriesAProviderKey() {
        chat("k-acme", "duo", "log me");
        chat("k-acme", "no-such-alias", "log me too");
        as("a-acme").body("{\"members\":[{\"route\":\"duo-alpha\",\"weight\":0},{\"route\":\"duo-beta\","
                + "\"weight\":0}]}").put("/admin/groups/duo").then().statusCode(400);
        as("a-acme").body("{\"strategy\":\"weighted\"}").put("/admin/groups/duo").then().statusCode(200);
        as("a-acme").body("{\"model\":\"duo\",\"messages\":[{\"role\":\"user\",\"content\":\"x\"}]}")
                .post("/admin/explain").then().statusCode(200);
        given().auth().oauth2(AppTestResource.PROBER_TOKEN).post("/prober/run").then().statusCode(200);

        // the application's own request log lines reach the handler, so the check below can fail
        assertTrue(LOGS.lines.stream().anyMatch(l -> l.startsWith("dev.hedgerow.") && l.contains("org=acme")),
                "the handler saw none of the application's log lines: " + LOGS.lines);
        for (String line : LOGS.lines) {
            for (String secret : SECRETS) {
                assertFalse(line.contains(secret), "'" + secret + "' logged: " + line);
            }
        }
    }
}
