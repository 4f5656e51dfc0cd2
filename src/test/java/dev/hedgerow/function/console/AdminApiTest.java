package dev.hedgerow.function.console;

import com.fasterxml.jackson.databind.JsonNode;
import dev.hedgerow.api.Json;
import dev.hedgerow.function.HedgerowApp;
import dev.hedgerow.prober.Prober;
import dev.hedgerow.routing.Router;
import dev.hedgerow.sim.Fault;
import dev.hedgerow.state.RouteSnapshot;
import dev.hedgerow.state.StateStore;
import dev.hedgerow.testsupport.AppTestResource;
import dev.hedgerow.testsupport.GatewayHarness;
import dev.hedgerow.testsupport.RedisStores;
import io.vertx.core.Vertx;
import io.quarkus.test.common.QuarkusTestResource;
import io.quarkus.test.junit.QuarkusTest;
import io.restassured.response.Response;
import jakarta.inject.Inject;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

import java.time.Duration;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;

import static dev.hedgerow.testsupport.Eventually.eventually;
import static io.restassured.RestAssured.given;
import static org.hamcrest.Matchers.containsString;
import static org.hamcrest.Matchers.equalTo;
import static org.hamcrest.Matchers.everyItem;
import static org.hamcrest.Matchers.greaterThan;
import static org.hamcrest.Matchers.hasItem;
import static org.hamcrest.Matchers.hasItems;
import static org.hamcrest.Matchers.hasKey;
import static org.hamcrest.Matchers.not;
import static org.hamcrest.Matchers.nullValue;
import static org.hamcrest.Matchers.startsWith;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * The admin API of the real application on a real Redis, in front of simulators: org scoping, validated edits that
 * routing follows, pins and drains, standing and verification, live health, audit filters, explain, the prober's
 * endpoint. Every test starts from the {@code duo} group as the catalog file declares it.
 */
@QuarkusTest
@QuarkusTestResource(value = AppTestResource.class, restrictToAnnotatedClass = false)
class AdminApiTest {
    static final String ADMIN = "a-acme";

    @Inject
    HedgerowApp app;

    @Inject
    Vertx vertx;

    StateStore store() {
        return app.core().store();
    }

    @BeforeEach
    void resetDuo() {
        admin().body("{\"alias\":\"duo\"}").post("/admin/members/unpin").then().statusCode(200);
        for (String r : List.of("duo-alpha", "duo-beta")) {
            admin().body("{\"route\":\"" + r + "\",\"drained\":false}").post("/admin/members/drain").then()
                    .statusCode(200);
            admin().body("{\"route\":\"" + r + "\",\"standing\":\"good\"}").put("/admin/routes/standing").then()
                    .statusCode(200);
            // no operator verdict, and the prober's last one a pass
            admin().body("{\"route\":\"" + r + "\",\"verification\":null}").put("/admin/routes/verification")
                    .then().statusCode(200);
            store().putRouteBlob("acme/" + r, Router.VERIFICATION, "pass", null).await()
                    .atMost(Duration.ofSeconds(5));
            store().resetHealth("acme/" + r).await().atMost(Duration.ofSeconds(5));
        }
        admin().body(DUO_AS_FILED).put("/admin/groups/duo").then().statusCode(200)
                .body("settings", equalTo(DUO_SETTINGS));
        AppTestResource.sims().values().forEach(s -> s.clearFaults());
    }

    /**
     * The next test class on this app finds duo as filed, whatever setting, pin, drain, standing, verdict or health the
     * last test here left changed (AdminResetTest found duo-alpha failing verification when the test run last here
     * left an operator's verdict).
     */
    @AfterEach
    void restoreDuo() {
        resetDuo();
    }

    /**
     * The duo group as the catalog file gives it, as a group edit: its strategy, breaker and head hold, every other
     * setting back to its default (null) and both weights 100.
     */
    static final String DUO_AS_FILED = """
            {"strategy": "rr_health", "breaker": {"max_fails": 1, "fail_timeout": "1s"}, "head_hold": "45s",
             "resume_mid_stream": null, "hedging": null, "retries": null, "max_resumes": null,
             "failover_criteria": null, "max_retry_after_wait": null, "connect_timeout": null, "read_timeout": null,
             "write_timeout": null, "first_token_floor": null, "first_token_ceiling": null, "stall_floor": null,
             "request_timeout": null, "hash_on_header": null, "latency_strategy": null, "tokens_count_strategy": null,
             "usage_window": null,
             "embeddings_route": null, "distance_metric": null, "threshold": null, "slow_bar": null, "slo": null,
             "members": [{"route": "duo-alpha", "weight": 100}, {"route": "duo-beta", "weight": 100}]}""";

    /** What GET /admin/groups/duo shows as its settings when it is as filed: every setting, as the file writes it. */
    static final Map<String, Object> DUO_SETTINGS = settings("""
            {"strategy": "rr_health", "resume_mid_stream": true, "hedging": true, "head_hold": "45s",
             "breaker": {"max_fails": 1, "fail_timeout": "1s"}, "retries": 2, "max_resumes": 3,
             "failover_criteria": ["error", "timeout", "invalid_header", "http_429", "http_5xx"],
             "max_retry_after_wait": "3s", "connect_timeout": "5s", "read_timeout": "1m", "write_timeout": "10s",
             "first_token_floor": "500ms", "first_token_ceiling": "30s", "stall_floor": "5s",
             "request_timeout": "off", "hash_on_header": "X-Kong-LLM-Request-ID", "latency_strategy": "tpot",
             "tokens_count_strategy": "total_tokens", "usage_window": "10m", "embeddings_route": null,
             "distance_metric": "cosine", "threshold": 0.5, "slow_bar": 2.0,
             "slo": {"decode_tokens_per_second": 50.0, "first_token": "5s", "standard_prompt_max_tokens": 8192}}""");

    /** A JSON object as REST Assured's JSON path reads one (numbers as it types them), for equalTo. */
    static Map<String, Object> settings(String json) {
        return io.restassured.path.json.JsonPath.from(json).getMap("");
    }

    static io.restassured.specification.RequestSpecification admin() {
        return given().auth().oauth2(ADMIN).contentType("application/json");
    }

    static List<String> providersServing(String alias, int n) {
        List<String> out = new ArrayList<>();
        for (int i = 0; i < n; i++) {
            out.add(given().auth().oauth2("k-acme").contentType("application/json")
                    .body("{\"model\":\"" + alias + "\",\"messages\":[{\"role\":\"user\",\"content\":\"hi " + i
                            + "\"}]}")
                    .post("/v1/chat/completions").then().statusCode(200).extract().path("provider"));
        }
        return out;
    }

    /**
     * A group whose breaker is off ({@code max_fails: 0}) says so in its members' health: {@code max_fails: 0}, not
     * the breaker's threshold (the largest int, shown as "1 / 2147483647 fails"; found by hunt28).
     */
    @Test
    void aMemberOfAGroupWithNoBreakerReportsMaxFailsZero() {
        admin().body("{\"breaker\":{\"max_fails\":0}}").put("/admin/groups/duo").then().statusCode(200);
        admin().get("/admin/health?alias=duo").then().statusCode(200)
                .body("groups[0].members.find { it.route == 'duo-alpha' }.max_fails", equalTo(0));
    }

    @Test
    void aMissingKeyIs401InTheOpenAiEnvelope() {
        given().get("/admin/groups").then().statusCode(401)
                .body("error.type", equalTo("invalid_request_error"))
                .body("error.code", equalTo("invalid_api_key"));
    }

    @Test
    void aClientKeyIsNotAnAdminKey() {
        given().auth().oauth2("k-acme").get("/admin/groups").then().statusCode(403)
                .body("error.code", equalTo("admin_key_required"));
    }

    /** An alias the org has not, in a query or a path, is a 404 naming the alias as its param (found by hunt20). */
    @Test
    void anUnknownAliasIsA404NamingIt() {
        for (String path : new String[]{"/admin/health?alias=nope", "/admin/groups/nope"}) {
            given().auth().oauth2("a-acme").get(path).then().statusCode(404).body("error.code", equalTo("not_found"))
                    .body("error.param", equalTo("alias"));
        }
    }

    /** And the other way round: the gateway's 401 for an admin key says what it is (found by hunt20). */
    @Test
    void anAdminKeyIsNotAClientKey() {
        given().auth().oauth2("a-acme").contentType("application/json")
                .body("{\"model\":\"duo\",\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}]}")
                .post("/v1/chat/completions").then().statusCode(401).body("error.code", equalTo("invalid_api_key"))
                .body("error.message", org.hamcrest.Matchers.startsWith("This is an admin key"));
        given().auth().oauth2("a-acme").get("/v1/models").then().statusCode(401)
                .body("error.message", org.hamcrest.Matchers.startsWith("This is an admin key"));
        given().auth().oauth2("nope").get("/v1/models").then().statusCode(401)
                .body("error.message", org.hamcrest.Matchers.startsWith("Incorrect API key provided"));
    }

    @Test
    void theKeyIsCheckedBeforeThePathMethodContentTypeOrBody() {
        for (String key : new String[]{null, "k-acme"}) {
            int status = key == null ? 401 : 403;
            io.restassured.specification.RequestSpecification anyone =
                    key == null ? given() : given().auth().oauth2(key);
            anyone.contentType("application/json").body("{").put("/admin/groups/duo").then().statusCode(status);
            anyone.contentType("text/plain").body("x").put("/admin/groups/duo").then().statusCode(status);
            anyone.delete("/admin/groups/duo").then().statusCode(status);
            anyone.get("/admin/nonexistent").then().statusCode(status)
                    .body("error.type", equalTo(key == null ? "invalid_request_error" : "permission_error"));
        }
    }

    @Test
    void everyRefusalOfTheAdminApiAndOfUnknownPathsIsAnEnvelope() {
        List<Map.Entry<String, io.restassured.response.Response>> answers = new ArrayList<>();
        answers.add(Map.entry("400 invalid_json", admin().body("{").put("/admin/groups/duo")));
        answers.add(Map.entry("400 invalid_json", admin().body("{\"route\": x}").post("/admin/members/pin")));
        // well-formed, but not an object: said so, not "'route' is required."
        answers.add(Map.entry("400 invalid_json", admin().body("[\"duo-alpha\"]").post("/admin/members/pin")));
        answers.add(Map.entry("400 invalid_json", admin().body("\"duo-alpha\"").put("/admin/routes/alias")));
        // a field named twice is refused, as the catalog file's loader refuses a duplicate key (the last one won;
        // found by hunt9)
        answers.add(Map.entry("400 invalid_json", admin().body("{\"strategy\": \"weighted\", \"strategy\": \"priority\"}")
                .put("/admin/groups/duo")));
        answers.add(Map.entry("400 invalid_json", admin().body("{\"route\": \"duo-alpha\", \"route\": \"duo-beta\"}")
                .post("/admin/members/pin")));
        // where, without the parser's own names ("enable `JsonReadFeature.ALLOW_NON_NUMERIC_NUMBERS` to allow")
        admin().body("{\"hedging\": NaN}").put("/admin/groups/duo").then().statusCode(400)
                .body("error.code", equalTo("invalid_json"))
                .body("error.message", equalTo("We could not parse the JSON body of your request: Non-standard token"
                        + " 'NaN' (line 1, column 16)"));
        // a number past an int's range is told the range, not that it "must be an integer" (found by hunt13)
        for (String value : new String[] {"2147483648", "1e20", "1.5", "\"3\""}) {
            admin().body("{\"members\": [{\"route\": \"duo-alpha\", \"priority\": " + value + "}]}")
                    .put("/admin/groups/duo").then().statusCode(400).body("error.param", equalTo("priority"))
                    .body("error.message", equalTo("'priority' must be an integer from 0 to 2147483647."));
        }
        // a field of the wrong type is said to be one, not to be missing
        admin().body("{\"route\": \"duo-alpha\", \"verification\": 5}").put("/admin/routes/verification").then()
                .statusCode(400).body("error.param", equalTo("verification"))
                .body("error.message", equalTo("'verification' must be a string."));
        answers.add(Map.entry("415 unsupported_media_type",
                admin().contentType("text/plain").body("x").put("/admin/groups/duo")));
        // a body labelled compressed is refused as /admin/explain and the gateway refuse it, not read as it came
        // (a plain one was saved, a gzip one called "not valid UTF-8"; found by hunt5)
        answers.add(Map.entry("415 unsupported_content_encoding",
                admin().header("Content-Encoding", "gzip").body("{\"hedging\": false}").put("/admin/groups/duo")));
        answers.add(Map.entry("405 method_not_allowed", admin().delete("/admin/groups/duo")));
        answers.add(Map.entry("405 method_not_allowed", admin().post("/admin/whoami")));
        answers.add(Map.entry("404 not_found", admin().get("/admin/nonexistent")));
        answers.add(Map.entry("400 unknown_field", admin().body("{\"hedgign\": false}").put("/admin/groups/duo")));
        answers.add(Map.entry("400 unknown_field",
                admin().body("{\"members\": [{\"route\": \"duo-alpha\", \"wieght\": 5}]}").put("/admin/groups/duo")));
        answers.add(Map.entry("400 invalid_request", admin().body("{\"members\": \"x\"}").put("/admin/groups/duo")));
        // judged by the file loader, as strategy: 5 in hedgerow.yaml: unknown strategy "5"
        answers.add(Map.entry("400 invalid_catalog", admin().body("{\"strategy\": 5}").put("/admin/groups/duo")));
        answers.add(Map.entry("400 invalid_request", admin().body("{\"members\": [{\"route\": \"duo-alpha\", \"weight\": 1},"
                + " {\"route\": \"duo-alpha\", \"weight\": 9}]}").put("/admin/groups/duo")));
        answers.add(Map.entry("400 invalid_request", admin().body("{\"route\": \"duo-alpha\", \"drained\": \"nope\"}")
                .post("/admin/members/drain")));
        answers.add(Map.entry("400 invalid_request", admin().body("{\"route\": \"duo-alpha\", \"drained\": null}")
                .post("/admin/members/drain")));
        answers.add(Map.entry("400 invalid_request", admin().get("/admin/audit?limit=abc")));
        answers.add(Map.entry("400 invalid_request", admin().get("/admin/audit?limit=99999999999")));
        answers.add(Map.entry("400 invalid_request", admin().get("/admin/audit?type=bogus")));
        // YYYY-MM-DD: a signed year, as LocalDate also reads one, is none (found by hunt13)
        answers.add(Map.entry("400 invalid_request", admin().get("/admin/usage?from=-0001-01-01&to=-0001-01-02")));
        answers.add(Map.entry("404 not_found", given().get("/v1/audio/speech")));
        answers.add(Map.entry("404 not_found", given().auth().oauth2("k-acme").get("/v1/completions")));
        answers.add(Map.entry("405 method_not_allowed", given().get("/prober/run")));
        answers.add(Map.entry("405 method_not_allowed", given().get("/v1/capacity")));
        answers.forEach(answer -> {
            String expected = answer.getKey();
            io.restassured.response.Response r = answer.getValue();
            String[] want = expected.split(" ");
            assertEquals(Integer.parseInt(want[0]), r.statusCode(), expected + ": " + r.asString());
            assertTrue(r.contentType().startsWith("application/json"), expected + ": " + r.contentType());
            assertEquals(want[1], r.jsonPath().getString("error.code"), expected + ": " + r.asString());
        });
    }

    @Test
    void anAdminSeesOnlyItsOwnOrgsGroups() {
        admin().get("/admin/groups").then().statusCode(200)
                .body("org", equalTo("acme"))
                .body("groups.alias", hasItems("kimi3", "solo", "duo", "panel"))
                .body("groups.alias", not(hasItem("secret")));
        given().auth().oauth2("a-other").get("/admin/groups").then().statusCode(200)
                .body("groups.alias", equalTo(List.of("secret", "duo")));
    }

    @Test
    void anotherOrgsRouteCannotBeTouched() {
        admin().body("{\"route\":\"secret-gamma\",\"standing\":\"suspended\"}").put("/admin/routes/standing")
                .then().statusCode(404).body("error.code", equalTo("not_found"));
        admin().get("/admin/health?alias=secret").then().statusCode(404);
    }

    @Test
    void aWeightEditIsSavedAndRoutingFollowsIt() {
        admin().body("{\"strategy\":\"weighted\",\"members\":[{\"route\":\"duo-beta\",\"weight\":0}]}")
                .put("/admin/groups/duo").then().statusCode(200)
                .body("strategy", equalTo("weighted"))
                .body("members.find { it.route == 'duo-beta' }.weight", equalTo(0));
        assertEquals(List.of("alpha", "alpha", "alpha", "alpha"), providersServing("duo", 4));

        admin().body("{\"members\":[{\"route\":\"duo-alpha\",\"weight\":0},{\"route\":\"duo-beta\",\"weight\":100}]}")
                .put("/admin/groups/duo").then().statusCode(200);
        assertEquals(List.of("beta", "beta", "beta", "beta"), providersServing("duo", 4));
    }

    @Test
    void anInvalidEditIsRefusedWithItsPathAndNothingIsSaved() {
        admin().body("{\"members\":[{\"route\":\"duo-alpha\",\"weight\":0},{\"route\":\"duo-beta\",\"weight\":0}]}")
                .put("/admin/groups/duo").then().statusCode(400)
                .body("error.code", equalTo("invalid_catalog"))
                .body("error.errors[0].path", containsString("routes["))
                .body("error.errors[0].message", containsString("weight 0"))
                .body("error.param", equalTo("members"));   // the body's field at fault (it was null; hunt5)
        admin().get("/admin/groups/duo").then().body("members.weight", equalTo(List.of(100, 100)));
    }

    /**
     * Characters YAML refuses raw in its stream (DEL, the C1 controls), which JSON carries as they are: an edit that
     * holds one is judged field by field, not refused as "not valid YAML" with no param (found by hunt21).
     */
    @Test
    void anEditHoldingCharactersYamlRefusesRawIsJudgedByItsField() {
        admin().body("{\"hash_on_header\": \"X-\\u007f\"}").put("/admin/groups/duo").then().statusCode(400)
                .body("error.code", equalTo("invalid_catalog"))
                .body("error.param", equalTo("hash_on_header"))
                .body("error.message", containsString("invalid header name"));
        String prompt = "Score\u007f this \u0085 answer \ud83d\ude00";
        try {
            admin().body("{\"strategy\": \"lowest_usage\", \"tokens_count_strategy\": \"llm_accuracy\","
                    + " \"judge\": {\"route\": \"duo-alpha\", \"prompt\": \"" + prompt + "\"}}")
                    .put("/admin/groups/duo").then().statusCode(200)
                    .body("settings.judge.prompt", equalTo(prompt));
            admin().get("/admin/groups/duo").then().statusCode(200)
                    .body("settings.judge.prompt", equalTo(prompt));
        } finally {
            admin().body("{\"strategy\": \"rr_health\", \"tokens_count_strategy\": null, \"judge\": null}")
                    .put("/admin/groups/duo").then().statusCode(200);
        }
    }

    /** A blank limit is the default, as a blank type, alias or reason is no filter (it was a 400). */
    @Test
    void aBlankAuditLimitIsTheDefault() {
        for (String blank : List.of("", " ")) {
            admin().queryParam("limit", blank).queryParam("alias", " ").get("/admin/audit").then().statusCode(200);
        }
    }

    @Test
    void anEditBasedOnAStaleRevisionIsRefusedAndTheOtherEditSurvives() {
        Response read = admin().get("/admin/groups/duo");
        String revision = read.path("revision");
        assertEquals("\"" + revision + "\"", read.header("ETag"));
        // another admin changes the group in between
        String other = admin().body("{\"strategy\":\"weighted\",\"members\":[{\"route\":\"duo-alpha\",\"weight\":7}]}")
                .put("/admin/groups/duo").then().statusCode(200).extract().path("revision");
        assertTrue(!other.equals(revision), "the edit changed the revision");

        admin().header("If-Match", "\"" + revision + "\"")
                .body("{\"strategy\":\"rr_health\",\"members\":[{\"route\":\"duo-beta\",\"weight\":50}]}")
                .put("/admin/groups/duo").then().statusCode(412)
                .body("error.code", equalTo("group_changed"))
                .body("error.param", equalTo("If-Match"))
                .body("error.message", containsString("nothing was saved"));
        admin().get("/admin/groups/duo").then().body("strategy", equalTo("weighted"))
                .body("members.weight", equalTo(List.of(7, 100))).body("revision", equalTo(other));

        // based on the current revision (or any, with *) the edit goes through and answers the next revision
        String next = admin().header("If-Match", "\"" + other + "\"")
                .body("{\"members\":[{\"route\":\"duo-beta\",\"weight\":50}]}")
                .put("/admin/groups/duo").then().statusCode(200).header("ETag", not(equalTo("\"" + other + "\"")))
                .body("members.weight", equalTo(List.of(7, 50))).extract().path("revision");
        admin().header("If-Match", "*").body("{\"members\":[{\"route\":\"duo-beta\",\"weight\":60}]}")
                .put("/admin/groups/duo").then().statusCode(200);
        // a list matches when any of its tags does (RFC 9110), in one header line or several
        String listed = admin().get("/admin/groups/duo").then().extract().path("revision");
        listed = admin().header("If-Match", "\"" + next + "\", \"" + listed + "\"")
                .body("{\"members\":[{\"route\":\"duo-beta\",\"weight\":61}]}")
                .put("/admin/groups/duo").then().statusCode(200).extract().path("revision");
        admin().header("If-Match", "\"" + next + "\"").header("If-Match", "\"" + listed + "\"")
                .body("{\"members\":[{\"route\":\"duo-beta\",\"weight\":60}]}")
                .put("/admin/groups/duo").then().statusCode(200);
        admin().header("If-Match", "\"" + next + "\"").body("{\"members\":[{\"route\":\"duo-beta\",\"weight\":1}]}")
                .put("/admin/groups/duo").then().statusCode(412);
    }

    @Test
    void aGroupShowsItsHeadHoldAndAnEditKeepsIt() {
        admin().get("/admin/groups/duo").then().statusCode(200).body("head_hold_ms", equalTo(45_000));
        admin().get("/admin/groups/panel").then().statusCode(200).body("head_hold_ms", equalTo(30_000));
        admin().body("{\"strategy\":\"weighted\"}").put("/admin/groups/duo").then().statusCode(200)
                .body("strategy", equalTo("weighted")).body("head_hold_ms", equalTo(45_000));
        admin().get("/admin/groups").then().statusCode(200)
                .body("groups.find { it.alias == 'duo' }.head_hold_ms", equalTo(45_000));
    }

    @Test
    void everyGroupSettingIsEditableInTheFilesTermsAndShownAsTheFileWritesIt() {
        String edit = """
                {"strategy": "consistent-hashing", "resume_mid_stream": false, "hedging": false, "head_hold": "off",
                 "breaker": {"max_fails": 3, "fail_timeout": 10000}, "retries": 4, "max_resumes": 5,
                 "failover_criteria": ["error", "timeout", "http_429"], "max_retry_after_wait": "1.5s",
                 "connect_timeout": 2000, "read_timeout": "90s", "write_timeout": "15s",
                 "first_token_floor": "250ms", "first_token_ceiling": "20s", "stall_floor": "3s",
                 "request_timeout": "45s", "hash_on_header": "X-Session", "latency_strategy": "e2e",
                 "tokens_count_strategy": "cost",
                 "usage_window": "5m", "distance_metric": "euclidean", "threshold": 0.8, "slow_bar": 1.5,
                 "slo": {"decode_tokens_per_second": 30, "first_token": "2s", "standard_prompt_max_tokens": 4096}}""";
        Map<String, Object> expected = settings("""
                {"strategy": "consistent_hashing", "resume_mid_stream": false, "hedging": false, "head_hold": "off",
                 "breaker": {"max_fails": 3, "fail_timeout": "10s"}, "retries": 4, "max_resumes": 5,
                 "failover_criteria": ["error", "timeout", "http_429"], "max_retry_after_wait": "1500ms",
                 "connect_timeout": "2s", "read_timeout": "90s", "write_timeout": "15s",
                 "first_token_floor": "250ms", "first_token_ceiling": "20s", "stall_floor": "3s",
                 "request_timeout": "45s", "hash_on_header": "X-Session", "latency_strategy": "e2e",
                 "tokens_count_strategy": "cost",
                 "usage_window": "5m", "embeddings_route": null, "distance_metric": "euclidean", "threshold": 0.8,
                 "slow_bar": 1.5,
                 "slo": {"decode_tokens_per_second": 30.0, "first_token": "2s", "standard_prompt_max_tokens": 4096}}""");
        Response saved = admin().body(edit).put("/admin/groups/duo");
        saved.then().statusCode(200).body("settings", equalTo(expected))
                .body("strategy", equalTo("consistent_hashing")).body("hedging", equalTo(false))
                .body("head_hold_ms", equalTo(0)).body("breaker.fail_timeout_ms", equalTo(10_000));
        admin().get("/admin/groups/duo").then().statusCode(200).body("settings", equalTo(expected))
                .body("revision", equalTo(saved.path("revision")));
        // what a read shows is a valid edit that changes nothing: read, change a field, write back works
        String shown = Json.write(admin().get("/admin/groups/duo").then().extract().jsonPath().getMap("settings"));
        admin().body(shown).put("/admin/groups/duo").then().statusCode(200).body("settings", equalTo(expected))
                .body("revision", equalTo(saved.path("revision")));

        // routing follows: rendezvous hashing on the X-Session header, the same session on the same route
        List<String> served = new ArrayList<>();
        for (int i = 0; i < 4; i++) {
            served.add(given().auth().oauth2("k-acme").contentType("application/json").header("X-Session", "s-1")
                    .body("{\"model\":\"duo\",\"messages\":[{\"role\":\"user\",\"content\":\"hi " + i + "\"}]}")
                    .post("/v1/chat/completions").then().statusCode(200).extract().path("provider"));
        }
        assertEquals(1, served.stream().distinct().count(), served.toString());
    }

    @Test
    void aSettingsEditIsPartialAndNullGivesASettingItsDefault() {
        String revision = admin().get("/admin/groups/duo").path("revision");
        admin().body("{\"hedging\": false}").put("/admin/groups/duo").then().statusCode(200)
                .body("settings.hedging", equalTo(false)).body("settings.strategy", equalTo("rr_health"))
                .body("settings.head_hold", equalTo("45s")).body("settings.breaker.fail_timeout", equalTo("1s"))
                .body("members.weight", equalTo(List.of(100, 100)))
                .body("revision", not(equalTo(revision)));
        // a nested mapping is merged field by field
        admin().body("{\"breaker\": {\"max_fails\": 3}}").put("/admin/groups/duo").then().statusCode(200)
                .body("settings.breaker.max_fails", equalTo(3)).body("settings.breaker.fail_timeout", equalTo("1s"))
                .body("settings.hedging", equalTo(false));
        // null is the default, as a key left out of the file: fail_timeout 30s, head_hold 30s, hedging on
        admin().body("{\"breaker\": {\"fail_timeout\": null}, \"head_hold\": null, \"hedging\": null}")
                .put("/admin/groups/duo").then().statusCode(200)
                .body("settings.breaker.max_fails", equalTo(3)).body("settings.breaker.fail_timeout", equalTo("30s"))
                .body("settings.head_hold", equalTo("30s")).body("head_hold_ms", equalTo(30_000))
                .body("settings.hedging", equalTo(true));
        admin().body("{\"breaker\": null, \"strategy\": null}").put("/admin/groups/duo").then().statusCode(200)
                .body("settings.breaker.max_fails", equalTo(1)).body("settings.breaker.fail_timeout", equalTo("30s"))
                .body("settings.strategy", equalTo("auto"));
    }

    @Test
    void kongsNamesOfASettingReplaceItWhicheverNameTheEditUses() {
        admin().body("{\"balancer\": {\"algorithm\": \"round-robin\", \"retries\": 4, \"max_fails\": 3,"
                        + " \"fail_timeout\": 10000, \"read_timeout\": 60000, \"slots\": 100}}")
                .put("/admin/groups/duo").then().statusCode(200)
                .body("settings.strategy", equalTo("weighted")).body("settings.retries", equalTo(4))
                .body("settings.breaker", equalTo(Map.of("max_fails", 3, "fail_timeout", "10s")))
                .body("settings.read_timeout", equalTo("1m")).body("settings", not(hasKey("balancer")));
        admin().body("{\"max_attempts\": 2, \"algorithm\": \"priority\"}").put("/admin/groups/duo").then()
                .statusCode(200).body("settings.retries", equalTo(1)).body("settings.strategy", equalTo("priority"));
    }

    /**
     * Each refused value is refused with the words the file loader uses for the same group in hedgerow.yaml, at the
     * same place: the body's field in param, the catalog path in errors[].path. Nothing is saved.
     */
    @Test
    void aSettingTheFileWouldRefuseIsRefusedWithTheLoadersWordsNamingItsField() {
        String revision = admin().get("/admin/groups/duo").path("revision");
        Map<String, String> cases = new java.util.LinkedHashMap<>();
        cases.put("{\"hedging\": false, \"breaker\": {\"max_fails\": -1}}", "breaker.max_fails");
        cases.put("{\"read_timeout\": 0.5}", "read_timeout");
        cases.put("{\"head_hold\": \"soon\"}", "head_hold");
        cases.put("{\"first_token_floor\": \"40s\"}", "first_token_floor");
        cases.put("{\"threshold\": 2}", "threshold");
        cases.put("{\"failover_criteria\": [\"error\", \"http_99\"]}", "failover_criteria[1]");
        cases.put("{\"tokens_count_strategy\": \"llm-accuracy\"}", "tokens_count_strategy");
        cases.put("{\"hedging\": \"maybe\"}", "hedging");
        cases.put("{\"retries\": 11}", "retries");
        cases.put("{\"retries\": 1, \"max_attempts\": 2}", "max_attempts");
        cases.put("{\"retries\": 2, \"balancer\": {\"retries\": 3}}", "balancer.retries");
        cases.put("{\"slo\": {\"decode_tokens_per_second\": 0}}", "slo.decode_tokens_per_second");
        cases.put("{\"strategy\": \"semantic\"}", "embeddings_route");
        cases.put("{\"hash_on_header\": \"${HOME}\"}", "hash_on_header");
        // a month's window summed every request's minutes and blocked the shared Redis (review6)
        cases.put("{\"usage_window\": \"8760h\"}", "usage_window");
        // usage is kept per minute: half a second was taken and summed a whole minute's usage (hunt9)
        cases.put("{\"usage_window\": \"0.5\"}", "usage_window");
        // a bar under 1 was read as 1, and a number over the bound was told to be at least 1 (hunt10)
        cases.put("{\"slow_bar\": 0.5}", "slow_bar");
        cases.put("{\"slo\": {\"standard_prompt_max_tokens\": 1000000000000}}", "slo.standard_prompt_max_tokens");
        cases.forEach((body, param) -> {
            Response r = admin().body(body).put("/admin/groups/duo");
            assertEquals(400, r.statusCode(), body + ": " + r.asString());
            assertEquals("invalid_catalog", r.jsonPath().getString("error.code"), body);
            assertEquals(param, r.jsonPath().getString("error.param"), body + ": " + r.asString());
            assertEquals(param, r.jsonPath().getString("error.errors[0].param"), body);
            assertEquals("groups.duo." + param, r.jsonPath().getString("error.errors[0].path"), body);
            String message = r.jsonPath().getString("error.errors[0].message");
            assertTrue(r.jsonPath().getString("error.message").contains("groups.duo." + param + ": " + message), body);
            assertEquals(message, loaderSays(body, param), body);
        });
        admin().get("/admin/groups/duo").then().body("revision", equalTo(revision))
                .body("settings", equalTo(DUO_SETTINGS));
    }

    /** What the file loader says at {@code groups.duo.<param>} of a catalog whose duo group is {@code group}. */
    private static String loaderSays(String group, String param) {
        String yaml = """
                orgs:
                  - id: acme
                    keys: [{ name: app, key: k }]
                    providers: [{ id: alpha, base_url: "http://127.0.0.1:1" }, { id: beta, base_url: "http://127.0.0.1:2" }]
                    routes:
                      - { alias: duo, provider: alpha, model: kimi-a }
                      - { alias: duo, provider: beta, model: kimi-b }
                    groups:
                      duo: { strategy: rr_health, breaker: { max_fails: 1, fail_timeout: 1s }, head_hold: 45s }
                """;
        // the edit over the filed group: the same merge the API makes, written in the file
        String merged = Json.write(dev.hedgerow.catalog.GroupYaml.edited(dev.hedgerow.catalog.GroupYaml.write(
                new dev.hedgerow.catalog.CatalogLoader(n -> null).parse(yaml).orgs().get(0).group("duo")),
                (com.fasterxml.jackson.databind.node.ObjectNode) parse(group)));
        try {
            new dev.hedgerow.catalog.CatalogLoader(n -> null).parse(yaml.replaceAll("duo: \\{ strategy.*",
                    java.util.regex.Matcher.quoteReplacement("duo: " + merged.replace("${", "$${"))));
            return "(the loader accepts it)";
        } catch (dev.hedgerow.catalog.CatalogException e) {
            return e.errors().stream().filter(err -> err.path().equals("orgs[0].groups.duo." + param))
                    .map(dev.hedgerow.catalog.CatalogError::message).findFirst().orElse("(no error there: "
                            + e.errors() + ")");
        }
    }

    private static JsonNode parse(String json) {
        try {
            return Json.parse(json);
        } catch (java.io.IOException e) {
            throw new java.io.UncheckedIOException(e);
        }
    }

    @Test
    void aFieldTheFileDoesNotKnowIsRefusedAsUnknownNamingIt() {
        String revision = admin().get("/admin/groups/duo").path("revision");
        admin().body("{\"hedging\": false, \"hedgign\": false}").put("/admin/groups/duo").then().statusCode(400)
                .body("error.code", equalTo("unknown_field")).body("error.param", equalTo("hedgign"))
                .body("error.message", containsString("did you mean \"hedging\""));
        admin().body("{\"breaker\": {\"max_fail\": 3}}").put("/admin/groups/duo").then().statusCode(400)
                .body("error.code", equalTo("unknown_field")).body("error.param", equalTo("breaker.max_fail"))
                .body("error.message", containsString("did you mean \"max_fails\""));
        // Kong's fail_timeout written flat: where it goes
        admin().body("{\"fail_timeout\": 10000}").put("/admin/groups/duo").then().statusCode(400)
                .body("error.code", equalTo("unknown_field")).body("error.param", equalTo("fail_timeout"))
                .body("error.message", containsString("goes under \"breaker\" (or Kong's \"balancer\")"));
        // balancer takes Kong's keys only, as in the file
        admin().body("{\"balancer\": {\"strategy\": \"weighted\"}}").put("/admin/groups/duo").then().statusCode(400)
                .body("error.code", equalTo("unknown_field")).body("error.param", equalTo("balancer.strategy"));
        admin().get("/admin/groups/duo").then().body("revision", equalTo(revision));
    }

    /**
     * An edit of many unknown fields lists the first 20 problems and counts the rest, instead of an answer megabytes
     * long; a body over the admin API's 1 MiB limit is refused before it is parsed (a group edit of many megabytes
     * held the event loop for seconds).
     */
    @Test
    void aHugeEditIsRefusedShortlyAndAnEditOfManyUnknownFieldsListsTwentyOfThem() {
        StringBuilder many = new StringBuilder("{");
        for (int i = 0; i < 30; i++) {
            many.append(i == 0 ? "" : ",").append("\"nope").append(i).append("\": 1");
        }
        var r = admin().body(many.append("}").toString()).put("/admin/groups/duo").then().statusCode(400)
                .body("error.code", equalTo("unknown_field")).extract();
        assertEquals(20, r.jsonPath().getList("error.errors").size(), r.asString());
        assertTrue(r.jsonPath().getString("error.message").endsWith("; and 10 more problems"), r.asString());

        // a field name longer than YAML takes: unknown_field, not the loader's parse error quoting its own document
        admin().body("{\"breaker\": {\"" + "k".repeat(1100) + "\": 1}}").put("/admin/groups/duo").then().statusCode(400)
                .body("error.code", equalTo("unknown_field"))
                .body("error.param", startsWith("breaker.kkkk"))
                .body("error.message", not(containsString("YAML")));

        byte[] big = ("{\"description\": \"" + "a".repeat(1024 * 1024) + "\"}").getBytes(StandardCharsets.UTF_8);
        admin().body(big).put("/admin/groups/duo").then().statusCode(413)
                .body("error.code", equalTo("request_too_large"))
                .body("error.message", containsString("1048576"));
    }

    /**
     * A settings edit made on one instance is followed by another instance on the same Redis without a restart, and an
     * instance started afterwards from the same file serves the edited group: the file is not published over it.
     */
    @Test
    void aSettingsEditReachesAnotherInstanceAndOneStartedAfterIt() {
        Vertx v = Vertx.vertx();
        try (RedisStores.Opened redis2 = RedisStores.open(v, AppTestResource.redis().url());
             GatewayHarness other = GatewayHarness.start(v, AppTestResource.YAML, AppTestResource.sims(),
                     redis2.store(), dev.hedgerow.catalog.SecretBox.of(AppTestResource.SECRET_KEY))) {
            // alpha answers 500 once: by default the other instance fails over to beta
            AppTestResource.sims().get("alpha").enqueue("kimi-a", Fault.status(500));
            Response before = alphaFirst(other);
            assertEquals(200, before.statusCode(), before.asString());
            assertEquals("beta", before.path("provider"));
            store().resetHealth("acme/duo-alpha").await().atMost(Duration.ofSeconds(5));

            admin().body("{\"failover_criteria\": [\"error\", \"timeout\"]}").put("/admin/groups/duo").then()
                    .statusCode(200);
            eventually(() -> criteria(other).equals("[error, timeout]"), "the other instance has the edit");
            // now a 500 is not a reason to fail over: it reaches the client as the provider sent it
            AppTestResource.sims().get("alpha").enqueue("kimi-a", Fault.status(500));
            assertEquals(500, alphaFirst(other).statusCode());

            try (RedisStores.Opened redis3 = RedisStores.open(v, AppTestResource.redis().url());
                 GatewayHarness restarted = GatewayHarness.start(v, AppTestResource.YAML, AppTestResource.sims(),
                         redis3.store(), dev.hedgerow.catalog.SecretBox.of(AppTestResource.SECRET_KEY))) {
                assertEquals("[error, timeout]", criteria(restarted));
            }
        } finally {
            v.close().toCompletionStage().toCompletableFuture().orTimeout(10, TimeUnit.SECONDS).join();
        }
    }

    private static Response alphaFirst(GatewayHarness gw) {
        return given().baseUri(gw.baseUrl()).auth().oauth2("k-acme").contentType("application/json")
                .body("{\"model\":\"duo\",\"provider\":{\"order\":[\"alpha\",\"beta\"]},"
                        + "\"messages\":[{\"role\":\"user\",\"content\":\"x\"}]}")
                .post("/v1/chat/completions");
    }

    private static String criteria(GatewayHarness gw) {
        return dev.hedgerow.catalog.FailoverCriterion.ordered(gw.core().catalog().current().org("acme").orElseThrow()
                .group("duo").retry().failoverCriteria()).stream().map(c -> c.wireName()).toList().toString();
    }

    @Test
    void pinsAndDrainsDoNotChangeAGroupsRevision() {
        String revision = admin().get("/admin/groups/duo").path("revision");
        admin().body("{\"route\":\"duo-beta\",\"drained\":true}").post("/admin/members/drain").then().statusCode(200);
        admin().body("{\"route\":\"duo-alpha\"}").post("/admin/members/pin").then().statusCode(200);
        admin().get("/admin/groups/duo").then().body("revision", equalTo(revision));
        admin().header("If-Match", "\"" + revision + "\"").body("{\"strategy\":\"weighted\"}")
                .put("/admin/groups/duo").then().statusCode(200);
    }

    @Test
    void aRefusedEditNamesTheRouteEachErrorIsAbout() {
        admin().body("{\"members\":[{\"route\":\"duo-beta\",\"weight\":-5}]}")
                .put("/admin/groups/duo").then().statusCode(400)
                .body("error.code", equalTo("invalid_catalog"))
                .body("error.errors[0].path", containsString("].weight"))
                .body("error.errors[0].route", equalTo("duo-beta"))
                .body("error.message", containsString("(route duo-beta): must be ≥ 0"));
    }

    @Test
    void anUnknownStrategyIsRefusedWithTheAcceptedSpellings() {
        admin().body("{\"strategy\":\"fastest\"}").put("/admin/groups/duo").then().statusCode(400)
                .body("error.code", equalTo("invalid_catalog"))
                .body("error.param", equalTo("strategy"))
                .body("error.errors[0].path", equalTo("groups.duo.strategy"))
                .body("error.message", containsString("unknown strategy \"fastest\""))
                .body("error.message", containsString("rr_health, weighted,"))
                .body("error.message", containsString("round-robin (= weighted)"));
        admin().get("/admin/groups/duo").then().body("strategy", equalTo("rr_health"));
    }

    /**
     * The file loader judges a strategy edit: hedgerow.yaml refuses {@code Weighted} (its names are lowercase), so
     * the edit does too, in the loader's words (it was accepted as weighted before), and what the file accepts (a
     * name with spaces around it) the edit accepts.
     */
    @Test
    void aStrategyIsJudgedAsTheCatalogFileJudgesIt() {
        String file = """
                orgs:
                  - id: acme
                    keys: [{ name: app, key: "k-file" }]
                    providers: [{ id: alpha, base_url: "http://127.0.0.1:9" }]
                    routes: [{ alias: duo, provider: alpha, model: kimi-a }]
                    groups: { duo: { strategy: Weighted } }
                """;
        dev.hedgerow.catalog.CatalogError inFile = org.junit.jupiter.api.Assertions.assertThrows(
                dev.hedgerow.catalog.CatalogException.class,
                () -> new dev.hedgerow.catalog.CatalogLoader(name -> null).parse(file)).errors().get(0);
        assertEquals("orgs[0].groups.duo.strategy", inFile.path());
        admin().body("{\"strategy\":\"Weighted\"}").put("/admin/groups/duo").then().statusCode(400)
                .body("error.code", equalTo("invalid_catalog"))
                .body("error.param", equalTo("strategy"))
                .body("error.errors[0].path", equalTo("groups.duo.strategy"))
                .body("error.errors[0].param", equalTo("strategy"))
                .body("error.errors[0].message", equalTo(inFile.message()));
        admin().get("/admin/groups/duo").then().body("strategy", equalTo("rr_health"));

        admin().body("{\"strategy\":\" weighted \"}").put("/admin/groups/duo").then().statusCode(200)
                .body("strategy", equalTo("weighted"));
    }

    @Test
    void kongsSpellingOfAStrategyIsAcceptedAndAnsweredInHedgerowsName() {
        // Kong's round-robin is weighted: 300:100 gives alpha three requests of every four
        admin().body("{\"strategy\":\"round-robin\",\"members\":[{\"route\":\"duo-alpha\",\"weight\":300}]}")
                .put("/admin/groups/duo").then().statusCode(200)
                .body("strategy", equalTo("weighted"));
        admin().get("/admin/groups/duo").then().statusCode(200).body("strategy", equalTo("weighted"));
        List<String> served = providersServing("duo", 8);
        assertEquals(6, served.stream().filter("alpha"::equals).count(), served.toString());
        assertEquals(2, served.stream().filter("beta"::equals).count(), served.toString());
    }

    @Test
    void aDrainedMemberTakesNoTraffic() {
        admin().body("{\"route\":\"duo-alpha\",\"drained\":true}").post("/admin/members/drain").then()
                .statusCode(200).body("members.find { it.route == 'duo-alpha' }.drained", equalTo(true));
        assertEquals(List.of("beta", "beta", "beta"), providersServing("duo", 3));
    }

    @Test
    void drainingTheLastLiveMemberIsRefusedAndTheGroupKeepsServing() {
        admin().body("{\"route\":\"duo-alpha\",\"drained\":true}").post("/admin/members/drain").then()
                .statusCode(200).body("members.drained", equalTo(List.of(true, false)));

        // the refusal names the route asked for (the catalog rule behind it named the alias's first member,
        // routes[3] duo-alpha: the one already drained)
        admin().body("{\"route\":\"duo-beta\",\"drained\":true}").post("/admin/members/drain").then()
                .statusCode(400).contentType("application/json")
                .body("error.type", equalTo("invalid_request_error"))
                .body("error.code", equalTo("last_member_serving"))
                .body("error.message", equalTo("Draining duo-beta would leave alias 'duo' with no member taking "
                        + "traffic (duo-alpha is drained); undrain another member first. The drain was not saved."))
                .body("error.param", equalTo("route"));

        admin().get("/admin/groups/duo").then().statusCode(200).body("members.drained", equalTo(List.of(true, false)));
        assertEquals(List.of("beta", "beta", "beta"), providersServing("duo", 3));
    }

    @Test
    void aPinnedMemberTakesAllTrafficUntilUnpinned() {
        admin().body("{\"route\":\"duo-beta\"}").post("/admin/members/pin").then().statusCode(200)
                .body("members.find { it.route == 'duo-beta' }.pinned", equalTo(true));
        assertEquals(List.of("beta", "beta", "beta", "beta"), providersServing("duo", 4));
        // a request that may use only the member held out: 503, without a Retry-After (no time is known), and
        // x-should-retry: false (the SDKs would retry a 503 within seconds, to meet this answer again)
        given().auth().oauth2("k-acme").contentType("application/json")
                .body("{\"model\":\"duo\",\"provider\":{\"only\":[\"alpha\"]},\"messages\":[{\"role\":\"user\","
                        + "\"content\":\"only alpha\"}]}")
                .post("/v1/chat/completions").then().statusCode(503)
                .body("error.code", equalTo("no_healthy_provider"))
                .body("error.message", containsString("held out by a pinned member"))
                .header("Retry-After", nullValue())
                .header("x-should-retry", equalTo("false"));

        // the pinned member is the only one taking traffic: draining it is refused as draining the last one is
        admin().body("{\"route\":\"duo-beta\",\"drained\":true}").post("/admin/members/drain").then()
                .statusCode(400).body("error.code", equalTo("last_member_serving"))
                .body("error.param", equalTo("route"))
                .body("error.message", containsString("it is pinned"));

        admin().body("{\"alias\":\"duo\"}").post("/admin/members/unpin").then().statusCode(200);
        assertTrue(providersServing("duo", 4).containsAll(List.of("alpha", "beta")));
    }

    @Test
    void aSuspendedRouteIsExcludedAndExplainSaysWhy() {
        admin().body("{\"route\":\"duo-beta\",\"standing\":\"suspended\"}").put("/admin/routes/standing").then()
                .statusCode(200);

        admin().body("{\"model\":\"duo\",\"messages\":[{\"role\":\"user\",\"content\":\"why\"}]}")
                .post("/admin/explain").then().statusCode(200)
                .body("outcome", equalTo("ready"))
                .body("routes.find { it.route == 'duo-alpha' }.rank", equalTo(1))
                .body("routes.find { it.route == 'duo-alpha' }.checks.passed", everyItem(equalTo(true)))
                .body("routes.find { it.route == 'duo-alpha' }.checks.filter", equalTo(List.of("preferences",
                        "operator", "capabilities", "standing", "health", "headroom")))
                .body("routes.find { it.route == 'duo-beta' }.rank", equalTo(0))
                .body("routes.find { it.route == 'duo-beta' }.eligible", equalTo(false))
                .body("routes.find { it.route == 'duo-beta' }.checks.findAll { !it.passed }.filter",
                        equalTo(List.of("standing")))
                .body("routes.find { it.route == 'duo-beta' }.checks.find { it.filter == 'standing' }.detail",
                        equalTo("operator not in good standing"));
        assertEquals(List.of("alpha", "alpha", "alpha"), providersServing("duo", 3));
    }

    /**
     * Every member held out by its standing (one suspended by an operator, one failing verification): 503
     * no_healthy_provider without a Retry-After, as for drained or pinned-out members, since no time is known when
     * they return (it answered "Retry-After: 1" and "retry after 1 s", sending SDKs back within the second).
     */
    @Test
    void aRequestOnlyHeldOutMembersCouldServeIsRefusedWithoutARetryAfter() {
        admin().body("{\"route\":\"duo-alpha\",\"standing\":\"suspended\"}").put("/admin/routes/standing").then()
                .statusCode(200);
        admin().body("{\"route\":\"duo-beta\",\"verification\":\"fail:wrong answer\"}")
                .put("/admin/routes/verification").then().statusCode(200);

        given().auth().oauth2("k-acme").contentType("application/json")
                .body("{\"model\":\"duo\",\"messages\":[{\"role\":\"user\",\"content\":\"anyone?\"}]}")
                .post("/v1/chat/completions").then().statusCode(503)
                .body("error.code", equalTo("no_healthy_provider"))
                .body("error.message", equalTo("No provider of 'duo' can take this request now (duo-alpha: operator "
                        + "not in good standing; duo-beta: failing verification)."))
                .header("Retry-After", nullValue())
                .header("retry-after-ms", nullValue())
                .header("x-should-retry", equalTo("false"));
    }

    /** Explain refuses what the gateway refuses, through the same check: an unknown alias, an embeddings alias. */
    @Test
    void explainRefusesAnUnknownOrEmbeddingsAliasAsTheGatewayDoes() {
        for (String path : List.of("/admin/explain", "/v1/chat/completions")) {
            for (String[] aliasAndCode : new String[][]{{"vectors", "not_a_chat_model"}, {"nope", "model_not_found"}}) {
                (path.startsWith("/admin") ? admin() : given().auth().oauth2("k-acme").contentType("application/json"))
                        .body("{\"model\":\"" + aliasAndCode[0] + "\",\"messages\":[{\"role\":\"user\","
                                + "\"content\":\"x\"}]}")
                        .post(path).then().statusCode(404).body("error.code", equalTo(aliasAndCode[1]));
            }
        }
    }

    /**
     * A body with input and no messages is explained as POST /v1/embeddings would route it, and refused as that
     * endpoint refuses: a chat alias, a missing input.
     */
    @Test
    void explainAnEmbeddingsRequestAsTheEmbeddingsEndpointRoutesIt() {
        admin().body("{\"model\":\"vectors\",\"input\":[\"one text\",\"and another, longer text\"]}")
                .post("/admin/explain").then().statusCode(200)
                .body("alias", equalTo("vectors"))
                .body("outcome", equalTo("ready"))
                .body("stream", equalTo(false))
                .body("prompt_tokens", greaterThan(3))
                .body("routes.route", equalTo(List.of("vectors-alpha")))
                .body("routes[0].rank", equalTo(1));
        for (String path : List.of("/admin/explain", "/v1/embeddings")) {
            (path.startsWith("/admin") ? admin() : given().auth().oauth2("k-acme").contentType("application/json"))
                    .body("{\"model\":\"duo\",\"input\":\"x\"}")
                    .post(path).then().statusCode(404).body("error.code", equalTo("not_an_embeddings_model"));
            (path.startsWith("/admin") ? admin() : given().auth().oauth2("k-acme").contentType("application/json"))
                    .body("{\"model\":\"vectors\",\"input\":[]}")
                    .post(path).then().statusCode(400).body("error.param", equalTo("input"));
        }
    }

    @Test
    void explainNamesTheMissingCapability() {
        admin().body("{\"model\":\"duo\",\"messages\":[{\"role\":\"user\",\"content\":\"x\"}],"
                        + "\"response_format\":{\"type\":\"json_object\"}}")
                .post("/admin/explain").then().statusCode(200)
                .body("outcome", equalTo("no_capable_provider"))
                .body("error", containsString("json_mode"))
                .body("needs", equalTo(List.of("json_mode")))
                .body("routes.rank", everyItem(equalTo(0)))
                .body("routes.collect { r -> r.checks.find { c -> c.filter == 'capabilities' }.detail }",
                        everyItem(equalTo("lacks json_mode (non-streaming)")));
    }

    @Test
    void explainGivesEachRouteItsPredictionSloCapacityAffinityAndWeight() {
        admin().body("{\"model\":\"duo\",\"stream\":true,\"messages\":[{\"role\":\"user\",\"content\":\"how fast\"}]}")
                .post("/admin/explain").then().statusCode(200)
                .body("alias", equalTo("duo"))
                .body("strategy", equalTo("rr_health"))
                .body("stream", equalTo(true))
                .body("prompt_tokens", greaterThan(0))
                .body("slo_target.first_token_ms", greaterThan(0))
                .body("routes.route", equalTo(List.of("duo-alpha", "duo-beta")))
                .body("routes.rank.sort()", equalTo(List.of(1, 2)))
                .body("routes.predicted_ttft_ms.mean", everyItem(greaterThan(0)))
                .body("routes.predicted_ttft_ms.p90", everyItem(greaterThan(0)))
                .body("routes.slo", everyItem(org.hamcrest.Matchers.oneOf("meets", "below", "unknown")))
                .body("routes.weight", equalTo(List.of(100, 100)))
                .body("routes[0]", org.hamcrest.Matchers.hasKey("capacity"))
                .body("routes.affinity", everyItem(equalTo(false)));
    }

    @Test
    void explainShowsAPinHoldingTheOtherMembersOut() {
        admin().body("{\"route\":\"duo-beta\"}").post("/admin/members/pin").then().statusCode(200);

        admin().body("{\"model\":\"duo\",\"messages\":[{\"role\":\"user\",\"content\":\"pinned\"}]}")
                .post("/admin/explain").then().statusCode(200)
                .body("routes.find { it.route == 'duo-beta' }.rank", equalTo(1))
                .body("routes.find { it.route == 'duo-alpha' }.rank", equalTo(0))
                .body("routes.find { it.route == 'duo-alpha' }.checks.find { it.filter == 'operator' }.detail",
                        equalTo("another member is pinned"));
    }

    /**
     * Explain shows the plan the request really gets under provider.allow_fallbacks: false (it ranked every member,
     * as if fallbacks were allowed): with an order, only the providers it names; without one, the first choice alone;
     * an order naming no member, the gateway's own refusal.
     */
    @Test
    void explainHonoursAllowFallbacksAsTheGatewayDoes() {
        String ask = "{\"model\":\"duo\",\"messages\":[{\"role\":\"user\",\"content\":\"x\"}],\"provider\":";
        admin().body(ask + "{\"order\":[\"beta\"],\"allow_fallbacks\":false}}")
                .post("/admin/explain").then().statusCode(200)
                .body("outcome", equalTo("ready"))
                .body("routes.find { it.route == 'duo-beta' }.rank", equalTo(1))
                .body("routes.find { it.route == 'duo-alpha' }.rank", equalTo(0))
                .body("routes.find { it.route == 'duo-alpha' }.checks.findAll { !it.passed }.filter",
                        equalTo(List.of("preferences")))
                .body("routes.find { it.route == 'duo-alpha' }.checks.find { it.filter == 'preferences' }.detail",
                        containsString("allow_fallbacks is false"));

        admin().body(ask + "{\"allow_fallbacks\":false}}")
                .post("/admin/explain").then().statusCode(200)
                .body("outcome", equalTo("ready"))
                .body("routes.rank.sort()", equalTo(List.of(0, 1)))
                .body("routes.find { it.rank == 0 }.checks.find { it.filter == 'preferences' }.detail",
                        containsString("a fallback"));

        String nobody = ask + "{\"order\":[\"nosuch\"],\"allow_fallbacks\":false}}";
        admin().body(nobody).post("/admin/explain").then().statusCode(200)
                .body("outcome", equalTo("provider_excluded_all"))
                .body("routes.rank", everyItem(equalTo(0)));
        given().auth().oauth2("k-acme").contentType("application/json").body(nobody)
                .post("/v1/chat/completions").then().statusCode(400)
                .body("error.code", equalTo("provider_excluded_all"));
    }

    @Test
    void explainDoesNotMoveTheRotation() {
        long before = store().nextCursor("acme", "duo").await().atMost(Duration.ofSeconds(5));
        for (int i = 0; i < 3; i++) {
            admin().body("{\"model\":\"duo\",\"messages\":[{\"role\":\"user\",\"content\":\"turn " + i
                    + "\"}]}").post("/admin/explain").then().statusCode(200).body("outcome", equalTo("ready"));
        }
        assertEquals(before + 1, store().nextCursor("acme", "duo").await().atMost(Duration.ofSeconds(5)));
    }

    @Test
    void explainPicksTheAliasAsTheGatewayDoes() {
        // other routes by its alias header: the header wins over the body's model
        given().auth().oauth2("a-other").contentType("application/json").header("X-Model-Alias", "duo")
                .body("{\"model\":\"secret\",\"messages\":[{\"role\":\"user\",\"content\":\"x\"}]}")
                .post("/admin/explain").then().statusCode(200).body("alias", equalTo("duo"));
        // other names duo "pair" too: explained as duo, as the gateway routes it
        given().auth().oauth2("a-other").contentType("application/json")
                .body("{\"model\":\"pair\",\"messages\":[{\"role\":\"user\",\"content\":\"x\"}]}")
                .post("/admin/explain").then().statusCode(200).body("alias", equalTo("duo"));
        // acme has no alias header: any such header is ignored, as the gateway ignores it
        admin().header("X-Model-Alias", "solo").header("x-hedgerow-alias", "solo")
                .body("{\"model\":\"duo\",\"messages\":[{\"role\":\"user\",\"content\":\"x\"}]}")
                .post("/admin/explain").then().statusCode(200).body("alias", equalTo("duo"));
    }

    @Test
    void aRouteFailingVerificationIsExcluded() {
        admin().body("{\"route\":\"duo-alpha\",\"verification\":\"fail:manual check\"}")
                .put("/admin/routes/verification").then().statusCode(200);

        assertEquals(List.of("beta", "beta", "beta"), providersServing("duo", 3));
        admin().get("/admin/health?alias=duo").then()
                .body("groups[0].members.find { it.route == 'duo-alpha' }.state", equalTo("failing_verification"));
    }

    @Test
    void healthJudgesStandingAndVerificationExactlyAsTheRouterDoes() {
        // written past the API (by hand with redis-cli, or by an older version), in spellings the router accepts
        store().putRouteBlob("acme/duo-beta", Router.STANDING, " Good ", null).await().atMost(Duration.ofSeconds(5));
        store().putRouteBlob("acme/duo-alpha", Router.VERIFICATION, "FAIL: checked by hand", null).await()
                .atMost(Duration.ofSeconds(5));

        assertEquals(List.of("beta", "beta", "beta"), providersServing("duo", 3));
        admin().get("/admin/health?alias=duo").then()
                .body("groups[0].members.find { it.route == 'duo-beta' }.state", equalTo("healthy"))
                .body("groups[0].members.find { it.route == 'duo-alpha' }.state", equalTo("failing_verification"));
    }

    @Test
    void healthShowsACooldownAfterAFailure() {
        AppTestResource.sims().get("beta").enqueue("kimi-b", Fault.status(500));
        given().auth().oauth2("k-acme").contentType("application/json")
                .body("{\"model\":\"duo\",\"provider\":{\"only\":[\"beta\"]},"
                        + "\"messages\":[{\"role\":\"user\",\"content\":\"x\"}]}")
                .post("/v1/chat/completions").then().statusCode(greaterThan(499));

        admin().get("/admin/health?alias=duo").then().statusCode(200)
                .body("groups[0].members.find { it.route == 'duo-beta' }.state", equalTo("cooling_down"))
                .body("groups[0].members.find { it.route == 'duo-beta' }.cooldown_remaining_ms", greaterThan(0))
                .body("groups[0].members.find { it.route == 'duo-beta' }.fails", equalTo(1))
                .body("groups[0].members.find { it.route == 'duo-alpha' }.state", equalTo("healthy"))
                .body("groups[0].members.find { it.route == 'duo-alpha' }.predicted_ttft.size()", equalTo(5));
    }

    @Test
    void servedUsageReachesTheHealthViewAndTheSharedStoreThroughTheWriteBatch() {
        long before = healthUsage("solo", "solo-alpha");
        try (RedisStores.Opened opened = RedisStores.open(vertx, AppTestResource.redis().url())) {
            servedUsageReaches(opened.store(), before);
        }
    }

    private void servedUsageReaches(StateStore plain, long before) {
        long shared = sharedUsage(plain);
        long served = 0;
        for (int i = 0; i < 3; i++) {
            Response r = given().auth().oauth2("k-acme").contentType("application/json")
                    .body("{\"model\":\"solo\",\"messages\":[{\"role\":\"user\",\"content\":\"bill " + i + "\"}]}")
                    .post("/v1/chat/completions");
            assertEquals(200, r.statusCode(), r.asString());
            served += r.jsonPath().getLong("usage.prompt_tokens") + r.jsonPath().getLong("usage.completion_tokens");
        }
        assertTrue(served > 0);
        long expected = served;
        eventually(() -> healthUsage("solo", "solo-alpha") == before + expected,
                "this instance's health view counts what it served");
        // what another instance would read: the plain store on the same Redis, past the write batch and the cache
        eventually(() -> sharedUsage(plain) == shared + expected, "the batched usage reaches Redis");
    }

    private long healthUsage(String alias, String route) {
        Response h = admin().get("/admin/health?alias=" + alias);
        String m = "groups[0].members.find { it.route == '" + route + "' }.usage.";
        return h.jsonPath().getLong(m + "prompt_tokens") + h.jsonPath().getLong(m + "completion_tokens");
    }

    private static long sharedUsage(StateStore plain) {
        RouteSnapshot s = plain.snapshot(List.of("acme/solo-alpha"), Duration.ofMinutes(10)).await()
                .atMost(Duration.ofSeconds(5)).get("acme/solo-alpha");
        return s.usage().promptTokens() + s.usage().completionTokens();
    }

    @Test
    void adminWritesKeepTheRotationAndHealthMemory() {
        long before = store().nextCursor("acme", "duo").await().atMost(Duration.ofSeconds(5));
        store().recordFailure("acme/duo-beta", 5, Duration.ofSeconds(60)).await().atMost(Duration.ofSeconds(5));

        admin().body("{\"strategy\":\"weighted\",\"members\":[{\"route\":\"duo-beta\",\"weight\":40}]}")
                .put("/admin/groups/duo").then().statusCode(200);
        admin().body("{\"hedging\": false, \"breaker\": {\"max_fails\": 3, \"fail_timeout\": \"2s\"},"
                + " \"head_hold\": \"10s\", \"retries\": 1, \"slo\": {\"first_token\": \"2s\"}}")
                .put("/admin/groups/duo").then().statusCode(200);
        admin().body("{\"route\":\"duo-alpha\"}").post("/admin/members/pin").then().statusCode(200);

        assertEquals(before + 1, store().nextCursor("acme", "duo").await().atMost(Duration.ofSeconds(5)));
        Map<String, RouteSnapshot> s = store().snapshot(List.of("acme/duo-beta"), Duration.ofMinutes(1)).await()
                .atMost(Duration.ofSeconds(5));
        assertEquals(1, s.get("acme/duo-beta").fails());
    }

    /** Kong's round-robin at 3:1 serves a, a, b, a, ... from the shared cursor; a settings edit does not restart it. */
    @Test
    void aSettingsEditMidRotationKeepsTheRotationGoing() {
        admin().body("{\"strategy\":\"weighted\",\"members\":[{\"route\":\"duo-alpha\",\"weight\":300}]}")
                .put("/admin/groups/duo").then().statusCode(200);
        List<String> served = new ArrayList<>(providersServing("duo", 3));
        admin().body("{\"hedging\": false, \"breaker\": {\"max_fails\": 2}, \"read_timeout\": \"2m\"}")
                .put("/admin/groups/duo").then().statusCode(200);
        served.addAll(providersServing("duo", 5));
        // one period of the smooth weighted sequence is four requests: the edit after the third kept its place
        for (int i = 0; i < 4; i++) {
            assertEquals(served.get(i), served.get(i + 4), served.toString());
        }
        assertEquals(2, served.stream().filter("beta"::equals).count(), served.toString());
    }

    @Test
    void theAuditLogFiltersByTypeAndReason() {
        given().auth().oauth2("k-acme").contentType("application/json")
                .body("{\"model\":\"no-such-alias\",\"messages\":[{\"role\":\"user\",\"content\":\"x\"}]}")
                .post("/v1/chat/completions").then().statusCode(404);
        // a refusal's audit event is written beside its answer, never before it: it may land a moment later
        eventually(() -> admin().get("/admin/audit?type=blocked&reason=model_not_found&limit=5").then()
                .extract().jsonPath().getList("events.alias").contains("no-such-alias"), "the blocked event is stored");

        admin().get("/admin/audit?type=blocked&reason=model_not_found&limit=5").then().statusCode(200)
                .body("events.alias", hasItem("no-such-alias"))
                .body("events.reason", everyItem(equalTo("model_not_found")));
        admin().get("/admin/audit?type=request").then().statusCode(200)
                .body("events.type", everyItem(equalTo("request")));
        given().auth().oauth2("a-other").get("/admin/audit?reason=model_not_found").then().statusCode(200)
                .body("events.alias", not(hasItem("no-such-alias")));
    }

    @Test
    void theOpenApiDocumentDescribesTheAdminApi() {
        String doc = given().get("/admin/openapi?format=json").then().statusCode(200).extract().asString();
        assertTrue(doc.contains("/admin/groups") && doc.contains("/admin/health") && doc.contains("/admin/explain"));
        given().get("/admin/openapi?format=json").then()
                .body("paths.'/admin/usage'.get.parameters.name", hasItems("from", "to", "alias", "key"))
                .body("paths.'/admin/usage'.get.description", containsString("keys[]"))
                .body("paths.'/admin/groups/{alias}'.put.description", containsString("breaker.max_fails"))
                .body("paths.'/admin/groups/{alias}'.get.description", containsString("failover_criteria"));
    }

    /**
     * The document described each answer (a Jackson ObjectNode) by the node class's Java getters: an array of
     * objects with boolean properties such as valueNode and containerNode.
     */
    @Test
    void theOpenApiDocumentDescribesAnswersAsJsonObjects() throws Exception {
        JsonNode doc = Json.MAPPER.readTree(given().get("/admin/openapi?format=json").then().statusCode(200)
                .extract().asString());
        for (String path : new String[]{"/admin/groups", "/admin/health", "/admin/usage", "/admin/whoami"}) {
            JsonNode schema = doc.path("paths").path(path).path("get").path("responses").path("200").path("content")
                    .path("application/json").path("schema");
            String ref = schema.path("$ref").asText();
            JsonNode resolved = ref.startsWith("#/") ? doc.at(ref.substring(1)) : schema;
            assertEquals("object", resolved.path("type").asText(), path + ": " + resolved);
        }
        assertFalse(doc.toString().contains("valueNode"), "no Jackson getters in the document");
    }

    @Test
    void theProbersFullReportNeedsItsOwnTokenWhenOneIsSet() {
        for (String key : new String[] {"wrong-token", "k-acme", "a-acme", AppTestResource.PROBER_TOKEN + "x"}) {
            given().auth().oauth2(key).post("/prober/run").then().statusCode(401)
                    .body("error.type", equalTo("invalid_request_error"))
                    .body("error.code", equalTo("invalid_api_key"));
        }
        given().auth().oauth2(AppTestResource.PROBER_TOKEN).post("/prober/run").then().statusCode(200)
                .body("ran", equalTo(true))
                .body("routes.org", hasItem("acme"));
        // without Authorization (a schedule): the round runs, its counts only (ProberReportAccessTest)
        given().post("/prober/run").then().statusCode(200)
                .body("ran", equalTo(true))
                .body("routes", nullValue());
    }

    @Test
    void aRoundWhileAnotherInstanceHoldsTheRoundLockIsSkippedAndRunsOnceItIsReleased() {
        // the fleet-wide round lock, taken as another instance's round would take it
        String lock = Prober.LOCK;
        String owner = "another-instance/round";
        long before = AppTestResource.sims().get("alpha").stats("kimi-a").received();
        assertTrue(store().tryLock(lock, owner, Duration.ofMinutes(1)).await().atMost(Duration.ofSeconds(5)),
                "precondition: no round holds the lock");
        try {
            given().auth().oauth2(AppTestResource.PROBER_TOKEN).post("/prober/run").then().statusCode(200)
                    .contentType("application/json")
                    .body("ran", equalTo(false))
                    .body("note", equalTo("another probe round is running"))
                    .body("routes", equalTo(List.of()))
                    .body("scrapes", equalTo(List.of()));
            assertEquals(before, AppTestResource.sims().get("alpha").stats("kimi-a").received(),
                    "a skipped round probes nothing");
        } finally {
            store().unlock(lock, owner).await().atMost(Duration.ofSeconds(5));
        }
        given().auth().oauth2(AppTestResource.PROBER_TOKEN).post("/prober/run").then().statusCode(200)
                .body("ran", equalTo(true))
                .body("routes.find { it.route == 'duo-alpha' }.outcome", equalTo("ok"));
    }

    @Test
    void aRoundAskedForWhileThisInstanceIsStillRunningOneIsAnsweredAtOnceWithoutRunning() throws Exception {
        var alpha = AppTestResource.sims().get("alpha");
        long before = alpha.stats("kimi-a").received();
        alpha.enqueue("kimi-a", Fault.stall(0, 1500)); // holds the first round's probe of duo-alpha
        CompletableFuture<Response> first = CompletableFuture.supplyAsync(
                () -> given().auth().oauth2(AppTestResource.PROBER_TOKEN).post("/prober/run"));
        eventually(() -> alpha.stats("kimi-a").received() > before, "the first round's probe reached duo-alpha");
        given().auth().oauth2(AppTestResource.PROBER_TOKEN).post("/prober/run").then().statusCode(200)
                .body("ran", equalTo(false))
                .body("note", equalTo("the previous round on this instance is still running"))
                .body("routes", equalTo(List.of()))
                .body("scrapes", equalTo(List.of()));
        first.get(30, TimeUnit.SECONDS).then().statusCode(200).body("ran", equalTo(true));
        // the instance runs rounds again once the first is over
        given().auth().oauth2(AppTestResource.PROBER_TOKEN).post("/prober/run").then().statusCode(200)
                .body("ran", equalTo(true));
    }

    @Test
    void aProbeRoundThroughTheEndpointMeasuresAndVerifiesEveryRoute() {
        Response r = given().auth().oauth2(AppTestResource.PROBER_TOKEN).post("/prober/run");
        r.then().statusCode(200).body("ran", equalTo(true))
                .body("routes.find { it.route == 'duo-alpha' }.outcome", equalTo("ok"))
                .body("routes.find { it.route == 'duo-alpha' }.verification", equalTo("pass"))
                .body("routes.org", not(hasItem("nobody")));
        admin().get("/admin/health?alias=duo").then()
                .body("groups[0].members.find { it.route == 'duo-alpha' }.measured", equalTo(true))
                .body("groups[0].members.find { it.route == 'duo-alpha' }.samples.size()", greaterThan(0))
                .body("groups[0].members.find { it.route == 'duo-alpha' }.slo.status", not(equalTo("unmeasured")));
    }
    // ---- usage ------------------------------------------------------------------------------------------------

    static io.restassured.specification.RequestSpecification client() {
        return given().auth().oauth2("k-acme").contentType("application/json");
    }

    @Test
    void usageBillsAFailedOverRequestAndAResumedStreamOnceEach() {
        String today = java.time.LocalDate.now(java.time.ZoneOffset.UTC).toString();
        admin().get("/admin/usage?alias=billed").then().statusCode(200)
                .body("total.requests", equalTo(0)).body("days.size()", equalTo(0));

        // a 500 on alpha fails over to beta: two attempts, one request
        AppTestResource.sims().get("alpha").enqueue("kimi-a", Fault.status(500));
        Response whole = client().body("{\"model\":\"billed\",\"provider\":{\"order\":[\"alpha\",\"beta\"]},"
                + "\"messages\":[{\"role\":\"user\",\"content\":\"bill the failover once\"}]}")
                .post("/v1/chat/completions");
        whole.then().statusCode(200).body("provider", equalTo("beta"));
        store().resetHealth("acme/billed-alpha").await().atMost(Duration.ofSeconds(5)); // out of its cooldown
        // alpha dies mid-stream; beta resumes from the text delivered: three attempts' worth of upstream work
        AppTestResource.sims().get("alpha").enqueue("kimi-a", Fault.dropAfter(5));
        String stream = client().body("{\"model\":\"billed\",\"stream\":true,"
                        + "\"stream_options\":{\"include_usage\":true},"
                        + "\"provider\":{\"order\":[\"alpha\",\"beta\"]},"
                        + "\"messages\":[{\"role\":\"user\",\"content\":\"bill the resume once\"}]}")
                .post("/v1/chat/completions").then().statusCode(200).extract().asString();
        assertTrue(dev.hedgerow.testsupport.Sse.trail(stream).toString().contains("\"resume\""),
                dev.hedgerow.testsupport.Sse.trail(stream).toString());
        List<com.fasterxml.jackson.databind.JsonNode> events = dev.hedgerow.testsupport.Sse.events(stream);
        com.fasterxml.jackson.databind.JsonNode streamed = events.get(events.size() - 1).path("usage");

        long prompt = whole.<Integer>path("usage.prompt_tokens") + streamed.path("prompt_tokens").asLong();
        long completion = whole.<Integer>path("usage.completion_tokens") + streamed.path("completion_tokens").asLong();
        assertTrue(prompt > 0 && completion > 0, prompt + " / " + completion);
        eventually(() -> admin().get("/admin/usage?alias=billed").then().extract().<Integer>path("total.requests") == 2,
                "both requests are in the ledger");
        admin().get("/admin/usage?alias=billed").then().statusCode(200)
                .body("object", equalTo("usage"))
                .body("alias", equalTo("billed"))
                .body("to", equalTo(today))
                .body("from", equalTo(today.substring(0, 8) + "01"))
                .body("total.requests", equalTo(2))
                .body("total.prompt_tokens", equalTo((int) prompt))
                .body("total.completion_tokens", equalTo((int) completion))
                .body("total.total_tokens", equalTo((int) (prompt + completion)))
                .body("aliases.alias", equalTo(List.of("billed")))
                .body("days.alias", everyItem(equalTo("billed")))
                .body("days.requests.sum()", equalTo(2));
        assertEquals(prompt + 2 * completion, admin().get("/admin/usage?alias=billed").then().extract()
                .<Number>path("total.cost").doubleValue(), 1e-9, "1 per prompt token, 2 per completion token");
        // unfiltered, the alias is one of the org's
        admin().get("/admin/usage").then().statusCode(200)
                .body("aliases.find { it.alias == 'billed' }.requests", equalTo(2));
        admin().get("/admin/usage?alias=billed&from=" + today + "&to=" + today).then().statusCode(200)
                .body("days.size()", equalTo(1)).body("days[0].date", equalTo(today));
    }

    /** A request to {@code keyed} with the client key {@code secret}; returns its usage as the client got it. */
    private static long[] chatKeyed(String secret, String text) {
        Response r = given().auth().oauth2(secret).contentType("application/json")
                .body("{\"model\":\"keyed\",\"messages\":[{\"role\":\"user\",\"content\":\"" + text + "\"}]}")
                .post("/v1/chat/completions");
        r.then().statusCode(200);
        return new long[] {r.<Integer>path("usage.prompt_tokens"), r.<Integer>path("usage.completion_tokens")};
    }

    @Test
    void usageIsBilledPerClientKeyAndNarrowedByTheKeyFilter() {
        long[] app = new long[2];
        long[] batch = new long[2];
        for (String text : List.of("the app asks once", "the app asks twice")) {
            long[] u = chatKeyed("k-acme", text);
            app[0] += u[0];
            app[1] += u[1];
        }
        long[] u = chatKeyed("k-acme-batch", "the nightly batch asks");
        batch[0] += u[0];
        batch[1] += u[1];
        eventually(() -> admin().get("/admin/usage?alias=keyed").then().extract().<Integer>path("total.requests") == 3,
                "the three requests are in the ledger");

        // each key's requests, tokens and cost (1 per prompt token, 2 per completion token), whole and per alias
        Response all = admin().get("/admin/usage?alias=keyed");
        all.then().statusCode(200)
                .body("total.requests", equalTo(3))
                .body("aliases.alias", equalTo(List.of("keyed")))
                .body("aliases[0].requests", equalTo(3))
                .body("keys.key", equalTo(List.of("app", "batch")))
                .body("aliases[0].keys.key", equalTo(List.of("app", "batch")))
                .body("days.size()", equalTo(1))
                .body("days[0].keys.key", equalTo(List.of("app", "batch")));
        for (String row : List.of("keys", "aliases[0].keys", "days[0].keys")) {
            for (Map.Entry<String, long[]> k : Map.of("app", app, "batch", batch).entrySet()) {
                String at = row + ".find { it.key == '" + k.getKey() + "' }.";
                long[] want = k.getValue();
                assertEquals(k.getKey().equals("app") ? 2 : 1, all.<Integer>path(at + "requests"), at);
                assertEquals(want[0], all.<Integer>path(at + "prompt_tokens").longValue(), at);
                assertEquals(want[1], all.<Integer>path(at + "completion_tokens").longValue(), at);
                assertEquals(want[0] + want[1], all.<Integer>path(at + "total_tokens").longValue(), at);
                assertEquals(want[0] + 2 * want[1], all.<Number>path(at + "cost").doubleValue(), 1e-9, at);
            }
        }

        // narrowed to one key: every figure is that key's alone
        Response one = admin().get("/admin/usage?alias=keyed&key=batch");
        one.then().statusCode(200)
                .body("key", equalTo("batch"))
                .body("alias", equalTo("keyed"))
                .body("total.requests", equalTo(1))
                .body("total.prompt_tokens", equalTo((int) batch[0]))
                .body("total.completion_tokens", equalTo((int) batch[1]))
                .body("keys.key", equalTo(List.of("batch")))
                .body("aliases[0].requests", equalTo(1))
                .body("aliases[0].keys.key", equalTo(List.of("batch")))
                .body("days.requests.sum()", equalTo(1));
        assertEquals(batch[0] + 2 * batch[1], one.<Number>path("total.cost").doubleValue(), 1e-9);
        // the key filter alone spans the org's aliases (the dashboard's test sends with batch too)
        admin().get("/admin/usage?key=batch").then().statusCode(200)
                .body("aliases.find { it.alias == 'keyed' }.requests", equalTo(1))
                .body("aliases.find { it.alias == 'keyed' }.keys.key", equalTo(List.of("batch")))
                .body("keys.key", equalTo(List.of("batch")));
        admin().get("/admin/usage?key=app").then().statusCode(200)
                .body("aliases.find { it.alias == 'keyed' }.requests", equalTo(2))
                .body("keys.key", equalTo(List.of("app")));
        // the dashboard offers the org's key names (never a secret)
        admin().get("/admin/whoami").then().statusCode(200).body("keys", equalTo(List.of("app", "batch")));
    }

    @Test
    void aKeyNameOfAnyCharactersIsBilledAndFilteredAsWritten() {
        // org other's key "ops team | 100%": the ledger joins alias and key with the first "|"
        String name = "ops team | 100%";
        try (dev.hedgerow.testsupport.LogCapture capture = new dev.hedgerow.testsupport.LogCapture()) {
            String id = given().auth().oauth2("k-other-ops").contentType("application/json")
                    .body("{\"model\":\"secret\",\"messages\":[{\"role\":\"user\",\"content\":\"from ops\"}]}")
                    .post("/v1/chat/completions").then().statusCode(200).extract().header("x-hedgerow-request-id");
            // the request log names the key; one with spaces is quoted so the line still splits on them
            eventually(() -> capture.lines().stream().anyMatch(l -> l.contains("request " + id + " org=other key=\""
                    + name + "\" alias=secret status=200 ")), "the request log line names the key, quoted");
        }
        eventually(() -> given().auth().oauth2("a-other").queryParam("key", name).get("/admin/usage").then()
                .extract().<Integer>path("total.requests") == 1, "the request is in the ledger under its key");
        given().auth().oauth2("a-other").queryParam("key", name).get("/admin/usage").then().statusCode(200)
                .body("key", equalTo(name))
                .body("keys.key", equalTo(List.of(name)))
                .body("aliases.alias", equalTo(List.of("secret")))
                .body("aliases[0].keys.key", equalTo(List.of(name)));
        given().auth().oauth2("a-other").get("/admin/usage").then().statusCode(200)
                .body("keys.key", hasItem(name)).body("aliases.alias", not(hasItem(containsString("|"))));
        given().auth().oauth2("a-other").get("/admin/whoami").then().statusCode(200)
                .body("keys", equalTo(List.of("app", name)));
    }

    @Test
    void usageBilledBeforeKeysWereRecordedReadsBackUnderTheKeyDash() {
        String today = java.time.LocalDate.now(java.time.ZoneOffset.UTC).toString();
        // a ledger line as an instance before per-key billing wrote it: the bare alias
        store().addLedger("acme", java.time.LocalDate.parse(today), "prekeys",
                dev.hedgerow.state.LedgerEntry.of(new dev.hedgerow.state.UsageSample(7, 3, 0.5)))
                .await().atMost(Duration.ofSeconds(5));
        eventually(() -> admin().get("/admin/usage?alias=prekeys").then().extract()
                .<Integer>path("total.requests") == 1, "the old line is read");
        for (String query : List.of("alias=prekeys", "alias=prekeys&key=-")) {
            admin().get("/admin/usage?" + query).then().statusCode(200)
                    .body("aliases.alias", equalTo(List.of("prekeys")))
                    .body("keys.key", equalTo(List.of("-")))
                    .body("keys[0].requests", equalTo(1))
                    .body("keys[0].total_tokens", equalTo(10))
                    .body("days[0].keys[0].key", equalTo("-"));
        }
        admin().get("/admin/usage?alias=prekeys&key=app").then().statusCode(200)
                .body("total.requests", equalTo(0)).body("aliases.size()", equalTo(0)).body("days.size()", equalTo(0));
    }

    @Test
    void anUnknownAliasFilterIs400NamingAliasButARemovedAliasesUsageStaysQueryable() {
        admin().get("/admin/usage?alias=kimi4").then().statusCode(400)
                .body("error.type", equalTo("invalid_request_error"))
                .body("error.param", equalTo("alias"))
                .body("error.message", containsString("\"kimi4\""));
        // an alias of the org that billed nothing yet answers empty, not 400
        admin().get("/admin/usage?alias=vectors&from=2020-01-01&to=2020-01-31").then().statusCode(200)
                .body("total.requests", equalTo(0));
        // no route has this alias any more, but it billed: still queryable
        String today = java.time.LocalDate.now(java.time.ZoneOffset.UTC).toString();
        store().addLedger("acme", java.time.LocalDate.parse(today), "retired|app",
                dev.hedgerow.state.LedgerEntry.of(new dev.hedgerow.state.UsageSample(1, 1, 0)))
                .await().atMost(Duration.ofSeconds(5));
        admin().get("/admin/usage?alias=retired").then().statusCode(200).body("total.requests", equalTo(1));
    }

    @Test
    void anUnknownOrRepeatedKeyFilterIs400NamingKey() {
        admin().get("/admin/usage?key=nobody").then().statusCode(400)
                .body("error.type", equalTo("invalid_request_error"))
                .body("error.param", equalTo("key"))
                .body("error.message", containsString("\"nobody\""))
                .body("error.message", containsString("app, batch"));
        admin().get("/admin/usage?key=app&key=batch").then().statusCode(400)
                .body("error.param", equalTo("key"))
                .body("error.message", containsString("given 2 times"));
        // a key the org has is a valid filter even where it billed nothing
        admin().get("/admin/usage?key=batch&from=2020-01-01&to=2020-01-31").then().statusCode(200)
                .body("total.requests", equalTo(0)).body("keys.size()", equalTo(0));
    }

    @Test
    void aBadUsageQueryIs400NamingTheParameter() {
        admin().get("/admin/usage?from=2026-13-01").then().statusCode(400)
                .body("error.type", equalTo("invalid_request_error"))
                .body("error.param", equalTo("from"))
                .body("error.message", containsString("YYYY-MM-DD"));
        admin().get("/admin/usage?to=yesterday").then().statusCode(400).body("error.param", equalTo("to"));
        admin().get("/admin/usage?from=2026-12-02&to=2026-12-01").then().statusCode(400)
                .body("error.param", equalTo("from"))
                .body("error.message", containsString("after"));
        admin().get("/admin/usage?from=2025-01-01&to=2026-12-01").then().statusCode(400)
                .body("error.message", containsString("at most 400 days"));
        admin().get("/admin/usage?from=2025-11-01&to=2026-12-04").then().statusCode(200)
                .body("from", equalTo("2025-11-01"));
        given().auth().oauth2("k-acme").get("/admin/usage").then().statusCode(403);
    }
}
