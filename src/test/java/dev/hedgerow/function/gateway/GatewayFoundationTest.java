package dev.hedgerow.function.gateway;

import com.fasterxml.jackson.databind.JsonNode;
import dev.hedgerow.api.Json;
import dev.hedgerow.routing.TokenCounter;
import dev.hedgerow.sim.ModelScript;
import dev.hedgerow.sim.SimConfig;
import dev.hedgerow.sim.SimStats;
import dev.hedgerow.sim.SimText;
import dev.hedgerow.testsupport.GatewayHarness;
import dev.hedgerow.testsupport.LogCapture;
import dev.hedgerow.testsupport.Sse;
import io.restassured.RestAssured;
import io.restassured.response.Response;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

import java.io.InputStream;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;

import static dev.hedgerow.testsupport.Eventually.eventually;
import static io.restassured.RestAssured.given;
import static org.hamcrest.Matchers.equalTo;
import static org.hamcrest.Matchers.hasItems;
import static org.hamcrest.Matchers.not;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** The gateway's foundation over real HTTP: relay, identity, usage, auth, isolation, pass-through, hang-up. */
class GatewayFoundationTest {
    static final long SEED = 7;
    static final String YAML = """
            orgs:
              - id: acme
                keys: [{ name: app, key: "k-acme" }]
                providers:
                  - { id: alpha, base_url: "${SIM_ALPHA_URL}", api_key: "sk-alpha" }
                  - { id: beta, base_url: "${SIM_BETA_URL}", api_key: "sk-beta" }
                routes:
                  - { alias: chat, provider: alpha, model: alpha-model, capabilities: [tools] }
                  - { alias: quiet, provider: beta, model: beta-quiet }
                  - { alias: slow, provider: beta, model: beta-slow }
                  - { alias: think, provider: alpha, model: alpha-think }
              - id: other
                keys: [{ name: app, key: "k-other" }]
                providers:
                  - { id: gamma, base_url: "${SIM_BETA_URL}", api_key: "sk-beta" }
                routes:
                  - { alias: secret, provider: gamma, model: beta-quiet }
            """;

    static GatewayHarness gw;

    @BeforeAll
    static void start() {
        ModelScript fast = ModelScript.defaults().withLength(24)
                .withLatency(ModelScript.Latency.of(10, 0));
        gw = GatewayHarness.start(YAML, Map.of(
                "alpha", SimConfig.of(SEED).withApiKey("sk-alpha").withModel("alpha-model", fast)
                        .withModel("alpha-think", fast.withReasoning(new ModelScript.Reasoning(6, 0, 0))),
                "beta", SimConfig.of(SEED).withApiKey("sk-beta")
                        .withModel("beta-quiet", fast.withCapabilities(ModelScript.Capabilities.DEFAULT
                                .withUsage(ModelScript.UsageMode.NONE)))
                        .withModel("beta-slow", ModelScript.defaults().withLength(400)
                                .withLatency(ModelScript.Latency.of(10, 40)))));
        RestAssured.baseURI = gw.baseUrl();
    }

    @AfterAll
    static void stop() {
        gw.close();
    }

    @BeforeEach
    void reset() {
        gw.sim("alpha").resetStats();
        gw.sim("beta").resetStats();
    }

    static String body(String alias, String prompt, boolean stream) {
        return "{\"model\":\"" + alias + "\",\"stream\":" + stream
                + ",\"messages\":[{\"role\":\"user\",\"content\":\"" + prompt + "\"}]}";
    }

    @Test
    void streamsTheUpstreamTextByteForByteWithOneIdAndDone() {
        String out = given().auth().oauth2("k-acme").contentType("application/json")
                .body(body("chat", "tell me a story", true))
                .post("/v1/chat/completions").then().statusCode(200)
                .header("content-type", equalTo("text/event-stream"))
                .header("x-hedgerow-route", equalTo("chat-alpha"))
                .header("transfer-encoding", equalTo("chunked"))
                .extract().asString();
        assertEquals(SimText.expected(SEED, "tell me a story", 24), Sse.content(out));
        assertTrue(Sse.endsWithDone(out));
        Set<String> ids = new HashSet<>();
        for (JsonNode e : Sse.events(out)) {
            ids.add(e.path("id").asText());
            assertEquals("alpha-model", e.path("model").asText());
            assertEquals("alpha", e.path("provider").asText());
        }
        assertEquals(1, ids.size());
        assertTrue(ids.iterator().next().startsWith("chatcmpl-"));
    }

    @Test
    void answersNonStreamingWithModelProviderUsageAndTrail() {
        io.restassured.response.Response r = given().auth().oauth2("k-acme").contentType("application/json")
                .body(body("chat", "hello there", false))
                .post("/v1/chat/completions").then().statusCode(200)
                .body("choices[0].message.content", equalTo(SimText.expected(SEED, "hello there", 24)))
                .body("model", equalTo("alpha-model"))
                .body("provider", equalTo("alpha"))
                .body("usage.completion_tokens", org.hamcrest.Matchers.greaterThan(0))
                .header("x-hedgerow-attempts", org.hamcrest.Matchers.containsString("\"outcome\":\"success\""))
                .header("transfer-encoding", org.hamcrest.Matchers.nullValue())
                .extract().response();
        // a whole answer goes out in one piece with its length, as OpenAI's own does
        assertEquals(r.asByteArray().length, Integer.parseInt(r.header("content-length")));
    }

    @Test
    void aNonStreamedAnswerBillsTheUpstreamsOwnUsage() throws Exception {
        // a message name, which the gateway's tokenizer counts and the simulator does not: the two counts differ
        String body = "{\"model\":\"%s\",\"stream\":false,\"messages\":[{\"role\":\"user\",\"name\":\"alice\","
                + "\"content\":\"antidisestablishmentarianism supercalifragilistic pneumonoultramicroscopic\"}]}";
        JsonNode direct = given().auth().oauth2("sk-alpha").contentType("application/json")
                .body(body.formatted("alpha-model"))
                .post(gw.sim("alpha").baseUrl() + "/chat/completions").then().statusCode(200)
                .extract().as(JsonNode.class).path("usage");
        assertNotEquals(TokenCounter.shared().countRequest(Json.parse(body.formatted("chat"))),
                direct.path("prompt_tokens").asInt(), "the gateway's own count would differ from the upstream's");
        JsonNode billed = given().auth().oauth2("k-acme").contentType("application/json")
                .body(body.formatted("chat"))
                .post("/v1/chat/completions").then().statusCode(200)
                .extract().as(JsonNode.class).path("usage");
        assertEquals(direct.path("prompt_tokens").asInt(), billed.path("prompt_tokens").asInt(), billed.toString());
        assertEquals(direct.path("completion_tokens").asInt(), billed.path("completion_tokens").asInt());
    }

    @Test
    void includeUsageAddsAFinalUsageChunkCountedWhenTheUpstreamSendsNone() {
        String out = given().auth().oauth2("k-acme").contentType("application/json")
                .body("{\"model\":\"quiet\",\"stream\":true,\"stream_options\":{\"include_usage\":true},"
                        + "\"messages\":[{\"role\":\"user\",\"content\":\"count me\"}]}")
                .post("/v1/chat/completions").then().statusCode(200).extract().asString();
        List<JsonNode> ev = Sse.events(out);
        JsonNode last = ev.get(ev.size() - 1);
        assertTrue(last.path("choices").isEmpty());
        assertTrue(last.path("usage").path("prompt_tokens").asInt() > 0);
        assertTrue(last.path("usage").path("completion_tokens").asInt() >= 20, last.toString());
        assertNotNull(last.get("attempt_trail"));
        // as OpenAI: the finish comes in the chunk before the usage chunk
        assertEquals("stop", ev.get(ev.size() - 2).path("choices").path(0).path("finish_reason").asText(),
                ev.get(ev.size() - 2).toString());
    }

    /**
     * Without include_usage every chunk has a choice (a client reading {@code choices[0]} of each chunk must not
     * trip on an empty closing chunk), one finish_reason comes, last, and the last chunk carries the trail.
     */
    @Test
    void withoutIncludeUsageEveryChunkHasAChoiceAndTheLastCarriesTheFinishAndTheTrail() {
        String out = given().auth().oauth2("k-acme").contentType("application/json")
                .body(body("chat", "choices please", true))
                .post("/v1/chat/completions").then().statusCode(200).extract().asString();
        List<JsonNode> ev = Sse.events(out);
        assertEquals(SimText.expected(SEED, "choices please", 24), Sse.content(out));
        List<String> finishes = new ArrayList<>();
        for (JsonNode e : ev) {
            assertEquals(1, e.path("choices").size(), e.toString());
            assertFalse(e.has("usage"), e.toString());
            JsonNode f = e.path("choices").path(0).path("finish_reason");
            if (!f.isNull() && !f.isMissingNode()) {
                finishes.add(f.asText());
            }
        }
        assertEquals(List.of("stop"), finishes);
        JsonNode last = ev.get(ev.size() - 1);
        assertEquals("stop", last.path("choices").path(0).path("finish_reason").asText());
        assertTrue(last.path("attempt_trail").isArray(), last.toString());
        assertEquals("success", last.path("attempt_trail").path(0).path("outcome").asText());
    }

    /** The provider's usage breakdowns (reasoning tokens here) reach the client with the bill, streamed or not. */
    @Test
    void theProvidersUsageDetailsPassThrough() {
        JsonNode whole = given().auth().oauth2("k-acme").contentType("application/json")
                .body(body("think", "think first", false))
                .post("/v1/chat/completions").then().statusCode(200).extract().as(JsonNode.class);
        assertEquals(6, whole.path("usage").path("completion_tokens_details").path("reasoning_tokens").asInt(),
                whole.path("usage").toString());
        String out = given().auth().oauth2("k-acme").contentType("application/json")
                .body("{\"model\":\"think\",\"stream\":true,\"stream_options\":{\"include_usage\":true},"
                        + "\"messages\":[{\"role\":\"user\",\"content\":\"think first\"}]}")
                .post("/v1/chat/completions").then().statusCode(200).extract().asString();
        List<JsonNode> ev = Sse.events(out);
        JsonNode usage = ev.get(ev.size() - 1).path("usage");
        assertEquals(6, usage.path("completion_tokens_details").path("reasoning_tokens").asInt(), usage.toString());
        assertEquals(whole.path("usage").path("completion_tokens").asInt(), usage.path("completion_tokens").asInt());
    }

    @Test
    void sendsTheProviderKeyAndUpstreamModelAndStripsHedgerowFields() {
        given().auth().oauth2("k-acme").contentType("application/json")
                .body("{\"model\":\"chat\",\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}],"
                        + "\"provider\":{\"sort\":\"price\"},\"x_custom\":{\"keep\":true},\"temperature\":0.2}")
                .post("/v1/chat/completions").then().statusCode(200);
        SimStats s = gw.sim("alpha").stats("alpha-model");
        SimStats.RecordedRequest r = s.recent().get(s.recent().size() - 1);
        assertEquals("Bearer sk-alpha", r.authorization());
        assertTrue(r.body().contains("\"model\":\"alpha-model\""), r.body());
        assertFalse(r.body().contains("\"provider\""), r.body());
        assertTrue(r.body().contains("\"x_custom\":{\"keep\":true}"), r.body());
        assertTrue(r.body().contains("\"temperature\":0.2"), r.body());
    }

    @Test
    void unknownKeyIsRejectedWith401() {
        given().auth().oauth2("nope").contentType("application/json").body(body("chat", "x", false))
                .post("/v1/chat/completions").then().statusCode(401)
                .body("error.code", equalTo("invalid_api_key"));
        given().contentType("application/json").body(body("chat", "x", false))
                .post("/v1/chat/completions").then().statusCode(401);
    }

    @Test
    void unknownAliasIs404ModelNotFound() {
        given().auth().oauth2("k-acme").contentType("application/json").body(body("nosuch", "x", false))
                .post("/v1/chat/completions").then().statusCode(404)
                .body("error.code", equalTo("model_not_found"))
                .body("error.type", equalTo("invalid_request_error"));
    }

    @Test
    void anotherOrgsAliasIsInvisible() {
        given().auth().oauth2("k-acme").contentType("application/json").body(body("secret", "x", false))
                .post("/v1/chat/completions").then().statusCode(404).body("error.code", equalTo("model_not_found"));
        given().auth().oauth2("k-acme").get("/v1/models").then().statusCode(200)
                .body("data.id", hasItems("chat", "quiet", "slow"))
                .body("data.id", not(hasItems("secret")));
        given().auth().oauth2("k-other").get("/v1/models").then().statusCode(200)
                .body("data.id", equalTo(List.of("secret")));
    }

    /** OpenAI's retrieve (the SDKs' {@code models.retrieve}): a model as listed, of the caller's org only. */
    @Test
    void aModelIsRetrievedAsListedAndOnlyInTheCallersOrg() {
        given().auth().oauth2("k-acme").get("/v1/models/chat").then().statusCode(200)
                .body("id", equalTo("chat")).body("object", equalTo("model")).body("owned_by", equalTo("acme"))
                .body("created", equalTo(0));
        given().auth().oauth2("k-acme").get("/v1/models/secret").then().statusCode(404)
                .body("error.code", equalTo("model_not_found")).body("error.param", equalTo("model"))
                .body("error.type", equalTo("invalid_request_error"));
        given().auth().oauth2("k-other").get("/v1/models/secret").then().statusCode(200)
                .body("id", equalTo("secret")).body("owned_by", equalTo("other"));
        given().get("/v1/models/chat").then().statusCode(401).body("error.code", equalTo("invalid_api_key"));
        given().auth().oauth2("k-acme").post("/v1/models/chat").then().statusCode(405)
                .header("allow", equalTo("GET, HEAD, OPTIONS")).body("error.code", equalTo("method_not_allowed"));
    }

    /** HEAD on the models paths answers as GET does (status, type), with no body, as RFC 9110 asks. */
    @Test
    void headOnTheModelsPathsAnswersAsGetWithoutABody() {
        io.restassured.response.Response head = given().auth().oauth2("k-acme").head("/v1/models");
        assertEquals(200, head.statusCode());
        assertTrue(head.contentType().startsWith("application/json"), head.contentType());
        assertEquals("", head.asString());
        given().auth().oauth2("k-acme").head("/v1/models/chat").then().statusCode(200);
        given().auth().oauth2("k-acme").head("/v1/models/secret").then().statusCode(404);
        given().head("/v1/models").then().statusCode(401);
    }

    /**
     * The request id also goes out as OpenAI's {@code x-request-id}, which the official SDKs expose (a completion's
     * {@code _request_id}, an error's {@code requestID}): on answers, streams and refusals alike.
     */
    @Test
    void theRequestIdIsAlsoSentAsOpenAisXRequestId() {
        Response whole = given().auth().oauth2("k-acme").contentType("application/json")
                .body(body("chat", "which id", false)).post("/v1/chat/completions");
        assertEquals(200, whole.statusCode(), whole.asString());
        assertEquals(whole.jsonPath().getString("id"), whole.header("x-request-id"));
        assertEquals(whole.header("x-hedgerow-request-id"), whole.header("x-request-id"));
        Response streamed = given().auth().oauth2("k-acme").contentType("application/json")
                .body(body("chat", "which id", true)).post("/v1/chat/completions");
        assertEquals(200, streamed.statusCode(), streamed.asString());
        assertEquals(streamed.header("x-hedgerow-request-id"), streamed.header("x-request-id"));
        assertTrue(streamed.asString().contains("\"id\":\"" + streamed.header("x-request-id") + "\""));
        // the router serves a trailing slash as the path without it, and its id is a completion's too (found by
        // hunt13: req-hr...)
        Response slashed = given().auth().oauth2("k-acme").contentType("application/json")
                .body(body("chat", "which id", true)).post("/v1/chat/completions/");
        assertEquals(200, slashed.statusCode(), slashed.asString());
        assertTrue(slashed.header("x-request-id").startsWith("chatcmpl-hr"), slashed.headers().toString());
        assertTrue(slashed.asString().contains("\"id\":\"" + slashed.header("x-request-id") + "\""));
        // and so does a path with dot segments, served as the path they resolve to (found by hunt20)
        for (String dotted : List.of("/v1/chat/completions/x/..", "/v1/chat/completions/.")) {
            Response r = given().urlEncodingEnabled(false).auth().oauth2("k-acme").contentType("application/json")
                    .body(body("chat", "which id", false)).post(dotted);
            assertEquals(200, r.statusCode(), dotted + " " + r.asString());
            assertTrue(r.header("x-request-id").startsWith("chatcmpl-hr"), dotted + " " + r.headers());
            assertEquals(r.jsonPath().getString("id"), r.header("x-request-id"));
        }
        for (Response refused : List.of(
                given().auth().oauth2("k-acme").contentType("application/json").body(body("nope", "x", false))
                        .post("/v1/chat/completions"),
                given().auth().oauth2("wrong").contentType("application/json").body(body("chat", "x", false))
                        .post("/v1/chat/completions"))) {
            assertTrue(refused.header("x-request-id").startsWith("chatcmpl-hr"), refused.headers().toString());
            assertEquals(refused.header("x-hedgerow-request-id"), refused.header("x-request-id"));
        }
        // every other answer under /v1 too: the model list, a 404, a 405, a body over the limit (found by hunt6)
        byte[] huge = new byte[9 << 20];
        java.util.Arrays.fill(huge, (byte) ' ');
        List<Integer> statuses = new java.util.ArrayList<>();
        for (Response other : List.of(given().auth().oauth2("k-acme").get("/v1/models"),
                given().auth().oauth2("k-acme").get("/v1/models/nope"),
                given().auth().oauth2("k-acme").get("/v1/chat/completions"),
                given().auth().oauth2("k-acme").get("/v1/nothing"),
                given().auth().oauth2("k-acme").contentType("application/json").body(huge)
                        .post("/v1/chat/completions"))) {
            String id = other.header("x-request-id");
            assertTrue(id != null && id.matches("(req|chatcmpl)-hr[A-Za-z0-9]{24}"),
                    other.statusCode() + " " + other.headers());
            assertEquals(other.header("x-hedgerow-request-id"), id);
            statuses.add(other.statusCode());
        }
        assertEquals(List.of(200, 404, 405, 404, 413), statuses);
    }

    /**
     * Content parts, tools and tool messages of shapes OpenAI refuses are refused before any provider is called,
     * naming the field, where they went upstream and a lax provider answered them (found by hunt13); the shapes
     * OpenAI takes, and a part or tool of a type Hedgerow does not know, are served.
     */
    @Test
    void malformedPartsToolsAndToolMessagesAreRefusedNamingTheField() {
        String user = "{\"role\":\"user\",\"content\":\"x\"}";
        Map<String, String> refused = new java.util.LinkedHashMap<>();
        refused.put("\"messages\":[{\"role\":\"user\",\"content\":[1,2]}]", "messages[0].content[0]");
        refused.put("\"messages\":[{\"role\":\"user\",\"content\":[null]}]", "messages[0].content[0]");
        refused.put("\"messages\":[{\"role\":\"user\",\"content\":[{\"type\":\"text\",\"text\":\"a\"},"
                + "[{\"type\":\"text\",\"text\":\"x\"}]]}]", "messages[0].content[1]");
        refused.put("\"messages\":[{\"role\":\"user\",\"content\":[{\"text\":\"x\"}]}]", "messages[0].content[0]");
        refused.put("\"messages\":[{\"role\":\"user\",\"content\":[{\"type\":\"text\",\"text\":5}]}]",
                "messages[0].content[0].text");
        refused.put("\"messages\":[" + user + ",{\"role\":\"tool\",\"content\":\"42\"}]", "messages[1].tool_call_id");
        refused.put("\"messages\":[" + user + ",{\"role\":\"assistant\",\"tool_calls\":\"f()\"}]",
                "messages[1].tool_calls");
        refused.put("\"messages\":[" + user + "],\"tools\":[{\"type\":\"function\",\"function\":{}}]",
                "tools[0].function.name");
        refused.put("\"messages\":[" + user + "],\"tools\":[{\"type\":5}]", "tools[0].type");
        long before = gw.sim("alpha").stats("alpha-model").received();
        refused.forEach((fields, param) -> given().auth().oauth2("k-acme").contentType("application/json")
                .body("{\"model\":\"chat\"," + fields + "}").post("/v1/chat/completions").then().statusCode(400)
                .body("error.type", equalTo("invalid_request_error")).body("error.param", equalTo(param)));
        assertEquals(before, gw.sim("alpha").stats("alpha-model").received(), "no refused request went upstream");
        for (String fields : List.of(
                "\"messages\":[{\"role\":\"user\",\"content\":[{\"type\":\"text\",\"text\":\"x\"},"
                        + "{\"type\":\"input_audio\",\"input_audio\":{\"data\":\"\",\"format\":\"wav\"}}]}]",
                "\"messages\":[" + user + ",{\"role\":\"assistant\",\"content\":null,\"tool_calls\":[{\"id\":\"c1\","
                        + "\"type\":\"function\",\"function\":{\"name\":\"f\",\"arguments\":\"{}\"}}]},"
                        + "{\"role\":\"tool\",\"tool_call_id\":\"c1\",\"content\":\"42\"}]",
                "\"messages\":[" + user + "],\"tools\":[{\"type\":\"function\",\"function\":{\"name\":\"f\"}},"
                        + "{\"type\":\"web_search\"}]")) {
            given().auth().oauth2("k-acme").contentType("application/json").body("{\"model\":\"chat\"," + fields + "}")
                    .post("/v1/chat/completions").then().statusCode(200);
        }
    }

    @Test
    void malformedBodiesGetAnOpenAiError() {
        String ok = body("chat", "x", false);
        for (String bad : List.of("{", "[]", "{\"model\":\"chat\"}", "{\"model\":\"chat\",\"messages\":[]}",
                "{\"model\":5,\"messages\":[{\"role\":\"user\",\"content\":\"x\"}]}",
                "{\"model\":\"chat\",\"stream\":\"yes\",\"messages\":[{\"role\":\"user\",\"content\":\"x\"}]}",
                ok + " xx", ok + "{}", ok + "[1]",
                // both limits go upstream, so the one that is not used must be valid too
                ok.replace("{\"model\"", "{\"max_completion_tokens\":2,\"max_tokens\":-5,\"model\""))) {
            given().auth().oauth2("k-acme").contentType("application/json").body(bad)
                    .post("/v1/chat/completions").then().statusCode(400)
                    .header("x-hedgerow-request-id", org.hamcrest.Matchers.startsWith("chatcmpl-hr"))
                    .body("error.type", equalTo("invalid_request_error"));
        }
        given().auth().oauth2("k-acme").contentType("application/json").body(ok + "\n  \n")
                .post("/v1/chat/completions").then().statusCode(200);
    }

    /**
     * The OpenAI parameters' types and ranges are checked before any route is tried: the simulator, a lax
     * provider, would answer every one of these, so the refusal can only come from the gateway.
     */
    @Test
    void mistypedOrOutOfRangeParametersAre400NamingTheParameterAndReachNoProvider() throws Exception {
        long before = gw.sim("alpha").stats("alpha-model").received();
        Map<String, String> bad = Map.ofEntries(Map.entry("temperature", "\"hot\""), Map.entry("top_p", "1.5"),
                Map.entry("n", "0"), Map.entry("presence_penalty", "-3"), Map.entry("seed", "1.5"),
                Map.entry("stop", "[\"a\",7]"), Map.entry("logit_bias", "{\"50256\":-101}"),
                Map.entry("logprobs", "\"yes\""), Map.entry("top_logprobs", "21"), Map.entry("tools", "{}"),
                Map.entry("tool_choice", "5"), Map.entry("response_format", "{\"kind\":1}"),
                Map.entry("user", "42"), Map.entry("parallel_tool_calls", "1"),
                Map.entry("stream_options", "{\"include_usage\":\"y\"}"));
        bad.forEach((field, value) -> {
            String param = field.equals("stream_options") ? "stream_options.include_usage" : field;
            given().auth().oauth2("k-acme").contentType("application/json")
                    .body(body("chat", "x", field.equals("stream_options")).replace("{\"model\"",
                            "{\"" + field + "\":" + value + ",\"model\""))
                    .post("/v1/chat/completions").then().statusCode(400)
                    .body("error.type", equalTo("invalid_request_error")).body("error.param", equalTo(param))
                    .body("error.message", org.hamcrest.Matchers.startsWith("'" + param + "' must be"));
        });
        // a message that says nothing: refused as OpenAI refuses it, but for an assistant's (its tool calls alone)
        for (String msg : List.of("{\"role\":\"user\"}", "{\"role\":\"system\",\"content\":null}",
                "{\"role\":\"tool\",\"tool_call_id\":\"c1\"}")) {
            String role = msg.substring(9, msg.indexOf('"', 9));
            given().auth().oauth2("k-acme").contentType("application/json")
                    .body("{\"model\":\"chat\",\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}," + msg + "]}")
                    .post("/v1/chat/completions").then().statusCode(400)
                    .body("error.type", equalTo("invalid_request_error"))
                    .body("error.param", equalTo("messages[1].content"))
                    .body("error.message", equalTo("'messages[1].content' is required for a " + role + " message."));
        }
        // stream_options without a stream: OpenAI (and vLLM) refuse it, other providers ignore it; refused here for
        // every route alike (found by hunt4)
        for (String stream : List.of("", "\"stream\":false,")) {
            given().auth().oauth2("k-acme").contentType("application/json")
                    .body("{" + stream + "\"stream_options\":{\"include_usage\":true},\"model\":\"chat\","
                            + "\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}]}")
                    .post("/v1/chat/completions").then().statusCode(400)
                    .body("error.type", equalTo("invalid_request_error")).body("error.param", equalTo("stream_options"))
                    .body("error.message", equalTo("The 'stream_options' parameter is only allowed when 'stream' is "
                            + "enabled."));
        }
        assertEquals(before, gw.sim("alpha").stats("alpha-model").received(), "no refused request went upstream");
        given().auth().oauth2("k-acme").contentType("application/json")
                .body("{\"stream_options\":null,\"model\":\"chat\",\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}]}")
                .post("/v1/chat/completions").then().statusCode(200);
        given().auth().oauth2("k-acme").contentType("application/json")
                .body("{\"model\":\"chat\",\"messages\":[{\"role\":\"user\",\"content\":\"hi\"},"
                        + "{\"role\":\"assistant\",\"content\":null,\"tool_calls\":[{\"id\":\"c1\",\"type\":"
                        + "\"function\",\"function\":{\"name\":\"f\",\"arguments\":\"{}\"}}]},"
                        + "{\"role\":\"tool\",\"tool_call_id\":\"c1\",\"content\":\"42\"}]}")
                .post("/v1/chat/completions").then().statusCode(200);

        // valid values, null for "not set", n > 1 (streamed too: SeveralChoicesTest), and edge values all pass
        // through as sent
        String fine = "{\"temperature\":2,\"top_p\":0,\"n\":2,\"presence_penalty\":-2,\"seed\":-9007199254740993,"
                + "\"stop\":[\"a\",\"b\"],\"logit_bias\":{\"50256\":-100},\"logprobs\":true,\"top_logprobs\":0,"
                + "\"tools\":null,\"tool_choice\":\"auto\",\"response_format\":{\"type\":\"text\"},\"user\":\"u1\","
                + "\"top_k\":-1,\"frequency_penalty\":null,\"model\"";
        given().auth().oauth2("k-acme").contentType("application/json")
                .body(body("chat", "x", false).replace("{\"model\"", fine))
                .post("/v1/chat/completions").then().statusCode(200);
        SimStats s = gw.sim("alpha").stats("alpha-model");
        JsonNode sent = Json.parse(s.recent().get(s.recent().size() - 1).body());
        assertEquals(-9007199254740993L, sent.get("seed").longValue());
        assertEquals(2, sent.get("n").intValue());
        assertEquals("[\"a\",\"b\"]", sent.get("stop").toString());
    }

    /**
     * An integer parameter that is not one, or does not fit, is refused with the range it must lie in: 2^31 is a
     * positive integer, so "must be a positive integer" told the client nothing it could act on.
     */
    @Test
    void anIntegerParameterOutOfRangeOrNotAnIntegerIsRefusedWithItsRange() {
        long before = gw.sim("alpha").stats("alpha-model").received();
        Map<String, String> ranges = Map.of(
                "max_tokens", "from 1 to 2147483647",
                "max_completion_tokens", "from 1 to 2147483647",
                "n", "from 1 to 128",
                "top_logprobs", "from 0 to 20",
                "top_k", "from -1 to 2147483647",
                "seed", "from -9223372036854775808 to 9223372036854775807");
        ranges.forEach((field, range) -> {
            List<String> values = new ArrayList<>(List.of("2147483648", "1e40", "-1", "1.5", "\"10\""));
            if (field.equals("top_k")) {
                values.set(2, "-2"); // -1 is top_k's "off"
            } else if (field.equals("seed")) {
                // a seed is a long: 2^31 and -1 fit, 2^63 does not
                values.removeAll(List.of("2147483648", "-1"));
                values.add("9223372036854775808");
            }
            for (String value : values) {
                given().auth().oauth2("k-acme").contentType("application/json")
                        .body(body("chat", "x", false).replace("{\"model\"", "{\"" + field + "\":" + value
                                + ",\"model\""))
                        .post("/v1/chat/completions").then().statusCode(400)
                        .body("error.type", equalTo("invalid_request_error"))
                        .body("error.code", equalTo("invalid_request"))
                        .body("error.param", equalTo(field))
                        .body("error.message", equalTo("'" + field + "' must be an integer " + range + "."));
            }
        });
        assertEquals(before, gw.sim("alpha").stats("alpha-model").received(), "no refused request went upstream");
        // the bounds themselves pass
        given().auth().oauth2("k-acme").contentType("application/json")
                .body(body("chat", "x", false).replace("{\"model\"", "{\"max_tokens\":2147483647,\"top_k\":"
                        + "2147483647,\"seed\":9223372036854775807,\"max_completion_tokens\":1,\"model\""))
                .post("/v1/chat/completions").then().statusCode(200);
    }

    @Test
    void everyRefusalCarriesARequestId() {
        given().auth().oauth2("k-acme").contentType("application/json").body(body("nope", "x", false))
                .post("/v1/chat/completions").then().statusCode(404)
                .header("x-hedgerow-request-id", org.hamcrest.Matchers.startsWith("chatcmpl-hr"));
        given().auth().oauth2("k-acme").contentType("application/json")
                .body(body("chat", "x", false).replace("{\"model\"", "{\"provider\":{\"only\":[\"zz\"]},\"model\""))
                .post("/v1/chat/completions").then().statusCode(400).body("error.code", equalTo("provider_not_in_group"))
                .header("x-hedgerow-request-id", org.hamcrest.Matchers.startsWith("chatcmpl-hr"));
        given().auth().oauth2("wrong").contentType("application/json").body(body("chat", "x", false))
                .post("/v1/chat/completions").then().statusCode(401)
                .header("x-hedgerow-request-id", org.hamcrest.Matchers.startsWith("chatcmpl-hr"));
    }

    @Test
    void aHugePromptIsCountedOffTheEventLoopSoOtherRequestsAreNotHeldBehindIt() throws Exception {
        // 1 M characters in one unbroken run (the harness takes 1 MiB): most of a second of BPE; refused after counting (no such provider)
        byte[] huge = body("chat", "f".repeat(1_000_000), false)
                .replace("{\"model\"", "{\"provider\":{\"only\":[\"zz\"]},\"model\"").getBytes(StandardCharsets.UTF_8);
        try (java.net.Socket socket = new java.net.Socket("127.0.0.1", gw.port())) {
            socket.getOutputStream().write(("POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\n"
                    + "Authorization: Bearer k-acme\r\nContent-Type: application/json\r\nConnection: close\r\n"
                    + "Content-Length: " + huge.length + "\r\n\r\n").getBytes(StandardCharsets.US_ASCII));
            socket.getOutputStream().write(huge);
            socket.getOutputStream().flush();
            java.util.concurrent.CompletableFuture<String> bigAnswer = java.util.concurrent.CompletableFuture.supplyAsync(
                    () -> {
                        try {
                            return new String(socket.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
                        } catch (java.io.IOException e) {
                            throw new java.io.UncheckedIOException(e);
                        }
                    });
            Thread.sleep(50); // the big body is in and being counted (not a timing assertion: it only orders)

            given().auth().oauth2("k-acme").contentType("application/json").body(body("chat", "small", false))
                    .post("/v1/chat/completions").then().statusCode(200);
            boolean bigDoneFirst = bigAnswer.isDone();

            String big = bigAnswer.get(60, java.util.concurrent.TimeUnit.SECONDS);
            assertTrue(big.startsWith("HTTP/1.1 400"), big.lines().findFirst().orElse(""));
            assertTrue(big.contains("provider_not_in_group"), big);
            assertFalse(bigDoneFirst, "the small request waited for the huge one's count");
        }
    }

    /** A hang-up mid-upload, by an orderly close (FIN) and by a reset (RST, as a killed client or a proxy sends). */
    @org.junit.jupiter.params.ParameterizedTest
    @org.junit.jupiter.params.provider.ValueSource(booleans = {false, true})
    void aClientHangingUpMidUploadIsNoServerError(boolean reset) throws Exception {
        try (LogCapture capture = new LogCapture()) {
            try (java.net.Socket socket = new java.net.Socket("127.0.0.1", gw.port())) {
                if (reset) {
                    socket.setSoLinger(true, 0); // close() then sends RST
                }
                socket.getOutputStream().write(("POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\n"
                        + "Authorization: Bearer k-acme\r\nContent-Type: application/json\r\n"
                        + "Content-Length: 1000\r\n\r\n{\"model\":").getBytes(StandardCharsets.US_ASCII));
                socket.getOutputStream().flush();
            }
            eventually(() -> capture.lines().stream().anyMatch(l -> l.contains("before its request body was read")),
                    "the hang-up is noticed");
            assertTrue(capture.lines().stream().noneMatch(l -> l.contains(" ERROR ") || l.contains(" SEVERE ")),
                    String.join("\n", capture.lines()));
        }
        given().auth().oauth2("k-acme").contentType("application/json").body(body("chat", "after", false))
                .post("/v1/chat/completions").then().statusCode(200);
    }

    @Test
    void aClientHangUpClosesTheUpstreamConnection() throws Exception {
        HttpClient client = HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(5)).build();
        HttpRequest req = HttpRequest.newBuilder(URI.create(gw.baseUrl() + "/v1/chat/completions"))
                .header("authorization", "Bearer k-acme").header("content-type", "application/json")
                .POST(HttpRequest.BodyPublishers.ofString(body("slow", "a long one", true))).build();
        HttpResponse<InputStream> resp = client.send(req, HttpResponse.BodyHandlers.ofInputStream());
        assertEquals(200, resp.statusCode());
        InputStream in = resp.body();
        byte[] buf = new byte[256];
        int got = in.read(buf);
        assertTrue(got > 0);
        assertTrue(new String(buf, 0, got, StandardCharsets.UTF_8).startsWith("data:"));
        in.close();
        eventually(() -> gw.sim("beta").stats("beta-slow").cancelled() > 0, "the upstream stream is cancelled");
        assertEquals(1, gw.sim("beta").stats("beta-slow").cancelled());
        assertEquals(0, gw.sim("beta").stats("beta-slow").completed());
    }

    @Test
    void chunksArriveAsTheUpstreamEmitsThem() throws Exception {
        HttpClient client = HttpClient.newHttpClient();
        HttpRequest req = HttpRequest.newBuilder(URI.create(gw.baseUrl() + "/v1/chat/completions"))
                .header("authorization", "Bearer k-acme").header("content-type", "application/json")
                .POST(HttpRequest.BodyPublishers.ofString(body("slow", "stream it", true))).build();
        HttpResponse<InputStream> resp = client.send(req, HttpResponse.BodyHandlers.ofInputStream());
        int first = resp.body().read(new byte[64]);
        // 400 tokens at 40 tokens/s: the upstream is still generating while the client already reads
        long completedWhileReading = gw.sim("beta").stats("beta-slow").completed();
        resp.body().close();
        assertTrue(first > 0);
        assertEquals(0, completedWhileReading);
    }

    @Test
    void aStreamThatFinishesWithoutDoneIsCompleteAndGetsDone() {
        gw.sim("alpha").enqueue("alpha-model", new dev.hedgerow.sim.Fault.NoDone());
        String out = given().auth().oauth2("k-acme").contentType("application/json")
                .body(body("chat", "no done please", true))
                .post("/v1/chat/completions").then().statusCode(200).extract().asString();
        assertEquals(SimText.expected(SEED, "no done please", 24), Sse.content(out));
        assertTrue(Sse.endsWithDone(out));
        assertEquals(1, Sse.trail(out).size());
    }

    @Test
    void aMalformedFrameIsSkippedAndTheStreamGoesOn() {
        gw.sim("alpha").enqueue("alpha-model", new dev.hedgerow.sim.Fault.MalformedFrame(3));
        String out = given().auth().oauth2("k-acme").contentType("application/json")
                .body(body("chat", "garbled in the middle", true))
                .post("/v1/chat/completions").then().statusCode(200).extract().asString();
        assertEquals(SimText.expected(SEED, "garbled in the middle", 24), Sse.content(out));
        assertEquals(1, Sse.trail(out).size());
        assertEquals("success", Sse.trail(out).get(0).path("outcome").asText());
    }

    @Test
    void aProviderErrorQuotingTheProviderKeyReachesTheClientRedacted() {
        // (a 401 is not passed through at all: it fails over, see FailoverTest)
        gw.sim("alpha").enqueue("alpha-model", new dev.hedgerow.sim.Fault.HttpError(403, "invalid_request_error",
                "model_not_permitted", "Key sk-alpha may not use this model", null, 0));
        String out = given().auth().oauth2("k-acme").contentType("application/json")
                .body(body("chat", "leak?", false))
                .post("/v1/chat/completions").then().statusCode(403).extract().asString();
        assertFalse(out.contains("sk-alpha"), out);
        assertTrue(out.contains("[redacted]"), out);
    }

    /** What the gateway answered a chat request with: the id it gave the client. */
    private static String requestId(String alias, boolean stream, int status) {
        return given().auth().oauth2("k-acme").contentType("application/json")
                .body(body(alias, "log me", stream))
                .post("/v1/chat/completions").then().statusCode(status)
                .extract().header("x-hedgerow-request-id");
    }

    private static java.util.Optional<String> logLine(LogCapture capture, String requestId) {
        return capture.lines().stream()
                .filter(l -> l.startsWith("dev.hedgerow.request INFO request " + requestId + " ")).findFirst();
    }

    private static JsonNode attemptsOf(String line) throws Exception {
        return Json.parse(line.substring(line.indexOf(" attempts=") + " attempts=".length()));
    }

    @Test
    void eachRequestGetsOneRequestLogLineWithItsIdStatusRouteAndTrail() throws Exception {
        try (LogCapture capture = new LogCapture()) {
            String whole = requestId("chat", false, 200);
            String streamed = requestId("chat", true, 200);
            gw.sim("alpha").enqueue("alpha-model", new dev.hedgerow.sim.Fault.HttpError(400, "invalid_request_error",
                    "bad_request", "no", null, 0));
            String refused = requestId("chat", false, 400);
            for (String id : List.of(whole, streamed, refused)) { // written by the request log's own thread
                eventually(() -> logLine(capture, id).isPresent(), "the request log line of " + id);
            }

            String line = logLine(capture, whole).orElseThrow();
            assertTrue(line.contains(" org=acme key=app alias=chat status=200 route=acme/chat-alpha attempts="), line);
            JsonNode attempts = attemptsOf(line);
            assertEquals(1, attempts.size(), line);
            assertEquals("primary", attempts.get(0).path("kind").asText());
            assertEquals("success", attempts.get(0).path("outcome").asText());
            assertTrue(logLine(capture, streamed).orElseThrow().contains(" status=200 route=acme/chat-alpha "));

            String failed = logLine(capture, refused).orElseThrow();
            assertTrue(failed.contains(" alias=chat status=400 route=- "), failed);
            assertEquals(400, attemptsOf(failed).get(0).path("status").asInt(), failed);
            assertEquals(1, capture.lines().stream().filter(l -> l.contains(" request " + whole + " ")).count(),
                    "one line per request");
        }
    }

    /**
     * Values outside the sets OpenAI defines, and tool choices no answer could honour, are refused before any provider
     * is called (a lax one would answer them as something else); what OpenAI takes still passes.
     */
    @Test
    void valuesOutsideOpenAisSetsAreRefusedAndReachNoProvider() {
        long before = gw.sim("alpha").stats("alpha-model").received();
        String tools = "\"tools\":[{\"type\":\"function\",\"function\":{\"name\":\"get_w\",\"parameters\":"
                + "{\"type\":\"object\"}}}],";
        Map<String, String> bad = Map.ofEntries(
                Map.entry("\"tool_choice\":\"sometimes\",", "tool_choice"),
                Map.entry("\"tool_choice\":\"required\",", "tool_choice"),
                Map.entry("\"tool_choice\":{\"type\":\"function\",\"function\":{\"name\":\"get_w\"}},", "tool_choice"),
                Map.entry(tools + "\"tool_choice\":{\"type\":\"function\",\"function\":{\"name\":\"other\"}},",
                        "tool_choice"),
                Map.entry(tools + "\"tool_choice\":{\"type\":\"function\",\"function\":{}},",
                        "tool_choice.function.name"),
                Map.entry("\"response_format\":{\"type\":\"yaml\"},", "response_format"),
                Map.entry("\"response_format\":{\"type\":\"json_schema\"},", "response_format.json_schema"),
                Map.entry("\"metadata\":\"x\",", "metadata"),
                Map.entry("\"metadata\":{\"a\":1},", "metadata"),
                // the legacy spelling of tools, judged as tools are (found by hunt23)
                Map.entry("\"functions\":[{\"name\":\"f\"}],\"function_call\":{\"name\":\"g\"},", "function_call"),
                Map.entry("\"function_call\":{\"name\":\"g\"},", "function_call"),
                Map.entry("\"functions\":[{\"name\":\"f\"}],\"function_call\":\"bogus\",", "function_call"),
                Map.entry("\"functions\":[{}],", "functions[0].name"),
                Map.entry("\"functions\":[{\"name\":5}],", "functions[0].name"));
        bad.forEach((fields, param) -> given().auth().oauth2("k-acme").contentType("application/json")
                .body(body("chat", "x", false).replace("{\"model\"", "{" + fields + "\"model\""))
                .post("/v1/chat/completions").then().statusCode(400)
                .body("error.type", equalTo("invalid_request_error")).body("error.param", equalTo(param)));
        for (String msg : List.of("{\"role\":\"wizard\",\"content\":\"hi\"}", "{\"role\":\"user\",\"content\":[]}")) {
            given().auth().oauth2("k-acme").contentType("application/json")
                    .body("{\"model\":\"chat\",\"messages\":[" + msg + "]}")
                    .post("/v1/chat/completions").then().statusCode(400)
                    .body("error.param", org.hamcrest.Matchers.startsWith("messages[0]."));
        }
        assertEquals(before, gw.sim("alpha").stats("alpha-model").received(), "no refused request went upstream");

        String fine = tools + "\"tool_choice\":{\"type\":\"function\",\"function\":{\"name\":\"get_w\"}},"
                + "\"response_format\":{\"type\":\"json_schema\",\"json_schema\":{\"name\":\"s\",\"schema\":"
                + "{\"type\":\"object\"}}},\"metadata\":{\"team\":\"a\"},";
        // chat's route declares no tools or structured outputs: the valid request passes the checks and is then
        // refused by routing, for what it needs
        given().auth().oauth2("k-acme").contentType("application/json")
                .body(body("chat", "x", false).replace("{\"model\"", "{" + fine + "\"model\""))
                .post("/v1/chat/completions").then().statusCode(400).body("error.code", equalTo("no_capable_provider"));
        for (String ok : List.of("\"tool_choice\":\"none\",", "\"tool_choice\":\"auto\",",
                "\"metadata\":{\"team\":\"a\"},\"response_format\":{\"type\":\"text\"},")) {
            given().auth().oauth2("k-acme").contentType("application/json")
                    .body(body("chat", "x", false).replace("{\"model\"", "{" + ok + "\"model\""))
                    .post("/v1/chat/completions").then().statusCode(200);
        }
        given().auth().oauth2("k-acme").contentType("application/json")
                .body("{\"model\":\"chat\",\"messages\":[{\"role\":\"developer\",\"content\":\"be brief\"},"
                        + "{\"role\":\"user\",\"content\":[{\"type\":\"text\",\"text\":\"hi\"}]}]}")
                .post("/v1/chat/completions").then().statusCode(200);
    }
}
