package dev.hedgerow.function.gateway;

import com.fasterxml.jackson.databind.JsonNode;
import dev.hedgerow.api.Json;
import dev.hedgerow.sim.Fault;
import dev.hedgerow.sim.ModelScript;
import dev.hedgerow.sim.SimConfig;
import dev.hedgerow.sim.SimServer;
import dev.hedgerow.sim.SimStats;
import dev.hedgerow.testsupport.RedisServer;
import dev.hedgerow.testsupport.Sse;
import io.quarkus.test.common.QuarkusTestResourceLifecycleManager;
import io.quarkus.test.junit.QuarkusTest;
import io.quarkus.test.junit.QuarkusTestProfile;
import io.quarkus.test.junit.TestProfile;
import io.restassured.response.Response;
import io.restassured.specification.RequestSpecification;
import io.vertx.core.Vertx;
import org.junit.jupiter.api.Test;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

import static dev.hedgerow.testsupport.Eventually.eventually;
import static io.restassured.RestAssured.given;
import static org.hamcrest.Matchers.equalTo;
import static org.hamcrest.Matchers.nullValue;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Kong's {@code tokens_count_strategy: llm-accuracy} on the real application, a real Redis and simulated providers,
 * through the HTTP API: two routes whose scripted answers differ ({@code GOOD ...}, {@code BAD ...}) and a judge
 * route on the simulator that scores by the keyword it finds in the judged response. The judge's scores show in
 * {@code GET /admin/health} and explain, and later requests go to the better-scored route; a sampling rate of 0
 * judges nothing; a judge that is down or answers no number leaves the clients' answers as they were and records
 * nothing; the judge is shown the configured prompt and at most {@code message_countback} messages, the ignored roles
 * dropped; the admin API edits the judge as the file writes it.
 */
@QuarkusTest
@TestProfile(LlmAccuracyTest.Judged.class)
class LlmAccuracyTest {
    static final String KEY = "k-acme";
    static final String ADMIN = "a-acme";
    static final String METRICS_TOKEN = "judge-metrics-token";
    static final String GOOD = "GOOD hedgerows shelter birds and hold the soil";
    static final String BAD = "BAD the moon is made of cheese";

    static final String YAML = """
            orgs:
              - id: acme
                keys: [{ name: app, key: "k-acme" }]
                admin_keys: [{ name: ops, key: "a-acme" }]
                providers:
                  - { id: sim, base_url: "${SIM_URL}", api_key: "sk-sim" }
                  - { id: dead, base_url: "http://127.0.0.1:1/v1" }
                routes:
                  - { id: good, alias: judged, provider: sim, model: good }
                  - { id: bad, alias: judged, provider: sim, model: bad }
                  - { id: grader, alias: grader, provider: sim, model: grader }
                  - { id: quiet-good, alias: unsampled, provider: sim, model: good }
                  - { id: quiet-bad, alias: unsampled, provider: sim, model: bad }
                  - { id: grader-quiet, alias: grader-quiet, provider: sim, model: grader-quiet }
                  - { id: shaky-good, alias: shaky, provider: sim, model: good }
                  - { id: shaky-bad, alias: shaky, provider: sim, model: bad }
                  - { id: down, alias: down, provider: dead, model: judge }
                  - { id: garbled-good, alias: garbled, provider: sim, model: good }
                  - { id: garbled-bad, alias: garbled, provider: sim, model: bad }
                  - { id: babbler, alias: babbler, provider: sim, model: babbler }
                  - { id: shown-good, alias: shown, provider: sim, model: good }
                  - { id: grader-shown, alias: grader-shown, provider: sim, model: grader-shown }
                  - { id: ed-good, alias: editable, provider: sim, model: good }
                groups:
                  judged: { algorithm: lowest-usage, tokens_count_strategy: llm-accuracy, hedging: false,
                            judge: { route: grader } }
                  unsampled: { strategy: lowest_usage, tokens_count_strategy: llm_accuracy, hedging: false,
                               judge: { route: grader-quiet, sampling_rate: 0 } }
                  shaky: { strategy: lowest_usage, tokens_count_strategy: llm_accuracy, hedging: false,
                           judge: { route: down, timeout: 3000 } }
                  garbled: { strategy: lowest_usage, tokens_count_strategy: llm_accuracy, hedging: false,
                             judge: { route: babbler } }
                  shown: { strategy: lowest_usage, tokens_count_strategy: llm_accuracy, hedging: false,
                           judge: { route: grader-shown, prompt: "Grade the response from 1 to 100.",
                                    message_countback: 2 } }
                  editable: { strategy: lowest_usage, tokens_count_strategy: llm_accuracy, judge: { route: grader } }
            """;

    /** The app on its own catalog, Redis and simulator (the suite's shared resource is not started). */
    public static class Judged implements QuarkusTestProfile {
        @Override
        public boolean disableGlobalTestResources() {
            return true;
        }

        @Override
        public List<TestResourceEntry> testResources() {
            return List.of(new TestResourceEntry(App.class));
        }
    }

    /** A private redis-server, one simulator serving every model, and the catalog file pointing at it. */
    public static class App implements QuarkusTestResourceLifecycleManager {
        static volatile SimServer sim;
        private Vertx vertx;
        private RedisServer redis;

        @Override
        public Map<String, String> start() {
            vertx = Vertx.vertx();
            redis = RedisServer.start();
            Map<String, Integer> scores = new java.util.LinkedHashMap<>();
            scores.put("GOOD", 87);
            scores.put("BAD", 12);
            ModelScript judge = ModelScript.defaults().withScores(scores);
            sim = SimServer.startBlocking(vertx, SimConfig.of(3).withApiKey("sk-sim")
                    .withModel("good", ModelScript.defaults().withReply(GOOD))
                    .withModel("bad", ModelScript.defaults().withReply(BAD))
                    .withModel("grader", judge).withModel("grader-quiet", judge).withModel("grader-shown", judge)
                    // no scores: it writes the simulator's seeded words, no number
                    .withModel("babbler", ModelScript.defaults().withLength(6)));
            try {
                Path file = Files.createTempFile("hedgerow-judge", ".yaml");
                file.toFile().deleteOnExit();
                Files.writeString(file, YAML.replace("${SIM_URL}", sim.baseUrl()));
                Map<String, String> cfg = new HashMap<>();
                cfg.put("hedgerow.config", file.toString());
                cfg.put("redis.url", redis.url());
                cfg.put("hedgerow.prober.interval", "0s");
                cfg.put("hedgerow.metrics.token", METRICS_TOKEN);
                return cfg;
            } catch (IOException e) {
                throw new UncheckedIOException(e);
            }
        }

        @Override
        public void stop() {
            if (sim != null) {
                sim.close();
            }
            if (redis != null) {
                redis.close();
            }
            if (vertx != null) {
                vertx.close();
            }
        }
    }

    static RequestSpecification admin() {
        return given().auth().oauth2(ADMIN).contentType("application/json");
    }

    static Response chat(String alias, String messagesJson, boolean stream) {
        return given().auth().oauth2(KEY).contentType("application/json")
                .body("{\"model\":\"" + alias + "\",\"stream\":" + stream + ",\"messages\":" + messagesJson + "}")
                .post("/v1/chat/completions");
    }

    static Response ask(String alias, boolean stream) {
        return chat(alias, "[{\"role\":\"user\",\"content\":\"tell me about hedgerows\"}]", stream);
    }

    /** The text the client got, streamed or not. */
    static String content(Response r, boolean stream) {
        return stream ? Sse.content(r.asString()) : r.jsonPath().getString("choices[0].message.content");
    }

    /** A route's health as {@code GET /admin/health} shows it. */
    static JsonNode member(String alias, String route) {
        String body = admin().queryParam("alias", alias).get("/admin/health").then().statusCode(200).extract()
                .asString();
        try {
            for (JsonNode m : Json.parse(body.getBytes(StandardCharsets.UTF_8)).path("groups").path(0)
                    .path("members")) {
                if (route.equals(m.path("route").asText())) {
                    return m;
                }
            }
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
        throw new AssertionError("no member " + route + " in " + body);
    }

    static long received(String model) {
        return App.sim.stats(model).received();
    }

    /** {@code hedgerow_judge_total{org="acme",result=...}} in the app's scrape (0 when absent). */
    static double judged(String result) {
        String scrape = given().auth().oauth2(METRICS_TOKEN).get("/q/metrics").then().statusCode(200).extract()
                .asString();
        Matcher m = Pattern.compile("^hedgerow_judge_total\\{(.*)} ([0-9.eE+-]+)$", Pattern.MULTILINE)
                .matcher(scrape);
        double sum = 0;
        while (m.find()) {
            if (m.group(1).contains("org=\"acme\"") && m.group(1).contains("result=\"" + result + "\"")) {
                sum += Double.parseDouble(m.group(2));
            }
        }
        return sum;
    }

    @Test
    void theJudgesScoresShowInHealthAndExplainAndTheBetterScoredRouteServesAfterwards() {
        double scoredBefore = judged("scored");
        // both members get answers to judge: unscored members come first, in rotation
        for (int i = 0; i < 4; i++) {
            boolean stream = i % 2 == 0;
            Response r = ask("judged", stream);
            assertEquals(200, r.statusCode(), r.asString());
            String route = r.header("x-hedgerow-route");
            assertEquals(route.equals("good") ? GOOD : BAD, content(r, stream), "the client's answer as written");
        }
        eventually(() -> member("judged", "good").path("accuracy").path("samples").asLong() >= 1
                && member("judged", "bad").path("accuracy").path("samples").asLong() >= 1, "both scored");
        assertEquals(87.0, member("judged", "good").path("accuracy").path("score").asDouble());
        assertEquals(12.0, member("judged", "bad").path("accuracy").path("score").asDouble());
        eventually(() -> judged("scored") - scoredBefore >= 2, "counted in hedgerow_judge_total");
        // each judge call is billed: under the judge route's alias and the key @judge, which no client key can be
        eventually(() -> admin().queryParam("alias", "grader").queryParam("key", "@judge").get("/admin/usage")
                .then().statusCode(200).extract().<Integer>path("total.requests") >= 2, "judge calls in the ledger");
        admin().queryParam("alias", "grader").queryParam("key", "@judge").get("/admin/usage").then()
                .body("total.prompt_tokens", org.hamcrest.Matchers.greaterThan(0))
                .body("total.completion_tokens", org.hamcrest.Matchers.greaterThan(0));

        admin().body("{\"model\":\"judged\",\"messages\":[{\"role\":\"user\",\"content\":\"why\"}]}")
                .post("/admin/explain").then().statusCode(200)
                .body("routes.find { it.route == 'good' }.rank", equalTo(1))
                .body("routes.find { it.route == 'good' }.accuracy.score", equalTo(87.0f))
                .body("routes.find { it.route == 'bad' }.rank", equalTo(2))
                .body("routes.find { it.route == 'bad' }.accuracy.score", equalTo(12.0f));

        for (int i = 0; i < 6; i++) {
            boolean stream = i % 2 == 1;
            Response r = ask("judged", stream);
            assertEquals(200, r.statusCode(), r.asString());
            assertEquals("good", r.header("x-hedgerow-route"), "the better-scored route serves");
            assertEquals(GOOD, content(r, stream));
        }
    }

    @Test
    void aSamplingRateOfZeroSendsNoJudgeCall() {
        for (int i = 0; i < 4; i++) {
            Response r = ask("unsampled", i % 2 == 0);
            assertEquals(200, r.statusCode(), r.asString());
        }
        // a sampled answer after them: once its judge call arrived, one for theirs would have too
        long graded = received("grader");
        assertEquals(200, ask("judged", false).statusCode());
        eventually(() -> received("grader") == graded + 1, "the sampled answer's judge call");
        assertEquals(0, received("grader-quiet"), "no judge call for a rate of 0");
        assertTrue(member("unsampled", "quiet-good").path("accuracy").isNull());
        assertTrue(member("unsampled", "quiet-bad").path("accuracy").isNull());
    }

    @Test
    void aJudgeThatIsDownOrAnswersNoNumberLeavesTheAnswersAsTheyWereAndRecordsNothing() {
        double failed = judged("failed");
        double unparsable = judged("unparsable");
        for (int i = 0; i < 4; i++) {
            boolean stream = i % 2 == 0;
            for (String alias : List.of("shaky", "garbled")) {
                Response r = ask(alias, stream);
                assertEquals(200, r.statusCode(), r.asString());
                String route = r.header("x-hedgerow-route");
                assertEquals(route.endsWith("-good") ? GOOD : BAD, content(r, stream), alias + " " + route);
            }
        }
        eventually(() -> judged("failed") - failed >= 4, "the down judge's calls failed");
        eventually(() -> judged("unparsable") - unparsable >= 4, "the babbling judge's answers had no score");
        assertEquals(4, received("babbler"));
        for (String route : List.of("shaky-good", "shaky-bad")) {
            assertTrue(member("shaky", route).path("accuracy").isNull(), route);
        }
        for (String route : List.of("garbled-good", "garbled-bad")) {
            assertTrue(member("garbled", route).path("accuracy").isNull(), route);
        }
    }

    @Test
    void aJudgeAnswering500RecordsNothing() {
        double failed = judged("failed");
        App.sim.enqueue("grader-shown", Fault.status(500));
        Response r = ask("shown", false);
        assertEquals(200, r.statusCode(), r.asString());
        assertEquals(GOOD, content(r, false));
        eventually(() -> judged("failed") - failed >= 1, "the judge's 500 is a failure");
        assertTrue(member("shown", "shown-good").path("accuracy").isNull());
    }

    @Test
    void theJudgeIsShownThePromptAndTheLastMessagesWithoutTheIgnoredRoles() {
        long before = received("grader-shown");
        Response r = chat("shown", """
                [{"role":"system","content":"SYSTEM-SECRET"},
                 {"role":"user","content":"first question"},
                 {"role":"assistant","content":"ASSISTANT-SAYS"},
                 {"role":"user","content":"second question"},
                 {"role":"user","content":"third question"}]""", false);
        assertEquals(200, r.statusCode(), r.asString());
        eventually(() -> received("grader-shown") == before + 1, "the judge was called");
        List<SimStats.RecordedRequest> recent = App.sim.stats("grader-shown").recent();
        SimStats.RecordedRequest call = recent.get(recent.size() - 1);
        assertEquals("Bearer sk-sim", call.authorization());
        JsonNode body;
        try {
            body = Json.parse(call.body().getBytes(StandardCharsets.UTF_8));
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
        assertEquals("grader-shown", body.path("model").asText());
        assertFalse(body.path("stream").asBoolean(true), body.toString());
        assertEquals(8, body.path("max_tokens").asInt(), body.toString());
        JsonNode msgs = body.path("messages");
        assertEquals(2, msgs.size(), body.toString());
        assertEquals("system", msgs.path(0).path("role").asText());
        assertEquals("Grade the response from 1 to 100.", msgs.path(0).path("content").asText());
        assertEquals("REQUEST:\nuser: second question\nuser: third question\n\nRESPONSE:\n" + GOOD,
                msgs.path(1).path("content").asText());
        eventually(() -> member("shown", "shown-good").path("accuracy").path("score").asDouble() > 0, "scored");
    }

    @Test
    void theAdminApiEditsTheJudgeAsTheFileWritesIt() {
        admin().get("/admin/groups/editable").then().statusCode(200)
                .body("settings.tokens_count_strategy", equalTo("llm_accuracy"))
                .body("settings.judge.route", equalTo("grader"))
                .body("settings.judge.sampling_rate", equalTo(1.0f))
                .body("settings.judge.message_countback", equalTo(3))
                .body("settings.judge.max_tokens", equalTo(8))
                .body("settings.judge.timeout", equalTo("1m"))
                .body("settings.judge.ignore_system_prompts", equalTo(true));

        admin().body("{\"judge\": {\"sampling_rate\": 0.5, \"timeout\": 1500, \"ignore_tool_prompts\": false}}")
                .put("/admin/groups/editable").then().statusCode(200)
                .body("settings.judge.route", equalTo("grader"))
                .body("settings.judge.sampling_rate", equalTo(0.5f))
                .body("settings.judge.timeout", equalTo("1500ms"))
                .body("settings.judge.ignore_tool_prompts", equalTo(false));
        admin().get("/admin/groups/editable").then().statusCode(200)
                .body("settings.judge.sampling_rate", equalTo(0.5f))
                .body("settings.judge.timeout", equalTo("1500ms"));

        Map<String, String> refused = new java.util.LinkedHashMap<>();
        refused.put("{\"judge\": {\"route\": \"nope\"}}", "judge.route");
        refused.put("{\"judge\": {\"route\": \"bad\", \"sampling_rate\": 2}}", "judge.sampling_rate");
        refused.put("{\"judge\": null}", "judge");
        refused.put("{\"tokens_count_strategy\": \"total_tokens\"}", "judge");
        refused.forEach((body, param) -> {
            Response r = admin().body(body).put("/admin/groups/editable");
            assertEquals(400, r.statusCode(), body + ": " + r.asString());
            assertEquals("invalid_catalog", r.jsonPath().getString("error.code"), body);
            assertEquals(param, r.jsonPath().getString("error.param"), body + ": " + r.asString());
            assertEquals("groups.editable." + param, r.jsonPath().getString("error.errors[0].path"), body);
        });

        admin().body("{\"tokens_count_strategy\": \"total_tokens\", \"judge\": null}").put("/admin/groups/editable")
                .then().statusCode(200).body("settings.tokens_count_strategy", equalTo("total_tokens"))
                .body("settings.judge", nullValue());
        admin().body("{\"tokens_count_strategy\": \"llm-accuracy\", \"judge\": {\"route\": \"grader\"}}")
                .put("/admin/groups/editable").then().statusCode(200)
                .body("settings.tokens_count_strategy", equalTo("llm_accuracy"))
                .body("settings.judge.sampling_rate", equalTo(1.0f))
                .body("settings.judge.timeout", equalTo("1m"));
    }
}
