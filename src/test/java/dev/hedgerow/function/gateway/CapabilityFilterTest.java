package dev.hedgerow.function.gateway;

import dev.hedgerow.api.Json;
import dev.hedgerow.routing.TokenCounter;
import dev.hedgerow.sim.ModelScript;
import dev.hedgerow.sim.SimConfig;
import dev.hedgerow.testsupport.GatewayHarness;
import io.restassured.RestAssured;
import io.restassured.response.Response;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

import java.util.HashSet;
import java.util.Map;
import java.util.Set;

import static io.restassured.RestAssured.given;
import static org.hamcrest.Matchers.containsString;
import static org.hamcrest.Matchers.equalTo;
import static org.hamcrest.Matchers.startsWith;
import static org.junit.jupiter.api.Assertions.assertEquals;

/**
 * The capability filter over real HTTP: before speed is weighed, the pool is narrowed to routes that can serve
 * the request (tools and JSON mode per transport, images, reasoning off, demanded parameters, context window
 * counted with a real tokenizer); when none can, 400 no_capable_provider naming what is missing, or OpenAI's
 * context_length_exceeded when only the context window is (its one blocked
 * audit event: {@link AuditTrailTest}).
 */
class CapabilityFilterTest {
    static final String YAML = """
            orgs:
              - id: acme
                keys: [{ name: app, key: "k-acme" }]
                providers:
                  - { id: alpha, base_url: "${SIM_ALPHA_URL}", api_key: "sk-alpha" }
                  - { id: beta, base_url: "${SIM_BETA_URL}", api_key: "sk-beta" }
                routes:
                  - { id: t-stream, alias: tools, provider: alpha, model: m, capabilities: ["tools:stream"] }
                  - { id: t-nonstream, alias: tools, provider: beta, model: m, capabilities: ["tools:nonstream"] }
                  - { id: j-nonstream, alias: json, provider: alpha, model: m, capabilities: ["json_mode:nonstream"] }
                  - { id: j-none, alias: json, provider: beta, model: m, capabilities: [] }
                  - { id: v-images, alias: vision, provider: alpha, model: m, capabilities: [images] }
                  - { id: v-text, alias: vision, provider: beta, model: m, capabilities: [tools] }
                  - { id: th-off, alias: think, provider: alpha, model: m, capabilities: [reasoning_off] }
                  - { id: th-on, alias: think, provider: beta, model: m, capabilities: [] }
                  - { id: always-thinks, alias: thinker, provider: alpha, model: m, capabilities: [tools] }
                  - { id: p-basic, alias: params, provider: alpha, model: m, parameters: [temperature] }
                  - { id: p-seed, alias: params, provider: beta, model: m, parameters: [temperature, seed] }
                  - { id: c-small, alias: ctx, provider: alpha, model: m, context_window: 2000 }
                  - { id: c-big, alias: ctx, provider: beta, model: m, context_window: 200000 }
                  - { id: tiny-only, alias: tiny, provider: alpha, model: m, context_window: 2000 }
                  - { id: w-a, alias: windows, provider: alpha, model: m, context_window: 2000 }
                  - { id: w-b, alias: windows, provider: beta, model: m, context_window: 4000 }
                  - { id: w-c, alias: windows, provider: alpha, model: m, context_window: 3000 }
                  - { id: same-a, alias: same, provider: alpha, model: m, context_window: 2000 }
                  - { id: same-b, alias: same, provider: beta, model: m, context_window: 2000 }
            TEN_ROUTES
            """.replace("TEN_ROUTES", tenRoutes());
    static final String TOOLS = ",\"tools\":[{\"type\":\"function\",\"function\":{\"name\":\"lookup\","
            + "\"parameters\":{\"type\":\"object\",\"properties\":{\"q\":{\"type\":\"string\"}}}}}]";
    static final int REPEAT = 6;

    static GatewayHarness gw;

    /** Alias {@code ten}: routes ten-0 .. ten-9, windows of 3000 tokens, the first four without tools. */
    static String tenRoutes() {
        StringBuilder out = new StringBuilder();
        for (int i = 0; i < 10; i++) {
            out.append("      - { id: ten-").append(i).append(", alias: ten, provider: ").append(i % 2 == 0 ? "alpha"
                    : "beta").append(", model: m, context_window: 3000, capabilities: ").append(i < 4 ? "[]"
                    : "[tools]").append(" }\n");
        }
        return out.toString().stripTrailing();
    }

    @BeforeAll
    static void start() {
        ModelScript m = ModelScript.defaults().withLength(8).withLatency(ModelScript.Latency.of(2, 0))
                .withCapabilities(ModelScript.Capabilities.DEFAULT.withImages(true));
        gw = GatewayHarness.start(YAML, Map.of(
                "alpha", SimConfig.of(1).withApiKey("sk-alpha").withModel("m", m),
                "beta", SimConfig.of(1).withApiKey("sk-beta").withModel("m", m)));
        RestAssured.baseURI = gw.baseUrl();
    }

    @AfterAll
    static void stop() {
        gw.close();
    }

    static String body(String alias, boolean stream, String content, String extra) {
        return "{\"model\":\"" + alias + "\",\"stream\":" + stream
                + ",\"messages\":[{\"role\":\"user\",\"content\":" + content + "}]" + extra + "}";
    }

    static Response send(String body) {
        return given().auth().oauth2("k-acme").contentType("application/json").body(body)
                .post("/v1/chat/completions");
    }

    /** The routes that served {@code n} identical requests. */
    static Set<String> servedBy(String body) {
        Set<String> routes = new HashSet<>();
        for (int i = 0; i < REPEAT; i++) {
            Response r = send(body);
            assertEquals(200, r.statusCode(), r.asString());
            routes.add(r.header("x-hedgerow-route"));
        }
        return routes;
    }

    @Test
    void streamingToolsGoOnlyToRoutesWithStreamingTools() {
        assertEquals(Set.of("t-stream"), servedBy(body("tools", true, "\"weather?\"", TOOLS)));
    }

    @Test
    void nonStreamingToolsGoOnlyToRoutesWithNonStreamingTools() {
        assertEquals(Set.of("t-nonstream"), servedBy(body("tools", false, "\"weather?\"", TOOLS)));
    }

    @Test
    void jsonModeGoesOnlyToRoutesWithJsonModeInThatTransport() {
        String extra = ",\"response_format\":{\"type\":\"json_object\"}";
        assertEquals(Set.of("j-nonstream"), servedBy(body("json", false, "\"as json\"", extra)));
    }

    @Test
    void jsonModeInATransportNoRouteServesIsRefusedNamingIt() {
        send(body("json", true, "\"as json\"", ",\"response_format\":{\"type\":\"json_object\"}")).then()
                .statusCode(400)
                .body("error.code", equalTo("no_capable_provider"))
                .body("error.message", containsString("json_mode (streaming)"));
        // images narrow the pool to a route without JSON mode at all
        send(body("vision", false, "[{\"type\":\"image_url\",\"image_url\":{\"url\":\"https://x/y.png\"}}]",
                ",\"response_format\":{\"type\":\"json_object\"}")).then()
                .statusCode(400)
                .body("error.code", equalTo("no_capable_provider"))
                .body("error.message", containsString("json_mode (non-streaming)"));
    }

    @Test
    void imageInputGoesOnlyToRoutesWithImages() {
        String parts = "[{\"type\":\"text\",\"text\":\"what is this\"},"
                + "{\"type\":\"image_url\",\"image_url\":{\"url\":\"https://example.com/cat.png\"}}]";
        assertEquals(Set.of("v-images"), servedBy(body("vision", true, parts, "")));
    }

    @Test
    void turningReasoningOffGoesOnlyToRoutesThatCan() {
        assertEquals(Set.of("th-off"), servedBy(body("think", true, "\"quick\"", ",\"reasoning_effort\":\"none\"")));
    }

    /** Reasoning off as each kind of server spells it: none of them may go to a route that cannot turn it off. */
    @ParameterizedTest
    @ValueSource(strings = {
            ",\"reasoning_effort\":\"none\"",
            ",\"reasoning\":{\"enabled\":false}",
            ",\"reasoning\":{\"effort\":\"none\"}",
            ",\"thinking\":{\"type\":\"disabled\"}",
            ",\"chat_template_kwargs\":{\"enable_thinking\":false}",
            ",\"chat_template_kwargs\":{\"thinking\":false}",
            ",\"enable_thinking\":false"})
    void everySpellingOfReasoningOffNeedsARouteThatCanTurnItOff(String extra) {
        send(body("thinker", true, "\"quick\"", extra)).then()
                .statusCode(400)
                .body("error.code", equalTo("no_capable_provider"))
                .body("error.message", containsString("missing reasoning_off on always-thinks"));
        assertEquals(Set.of("th-off"), servedBy(body("think", true, "\"quick\"", extra)));
    }

    @ParameterizedTest
    @ValueSource(strings = {
            ",\"thinking\":{\"type\":\"enabled\",\"budget_tokens\":1024}",
            ",\"chat_template_kwargs\":{\"enable_thinking\":true}",
            ",\"reasoning_effort\":\"low\""})
    void askingForReasoningNeedsNoReasoningOff(String extra) {
        send(body("thinker", true, "\"think hard\"", extra)).then().statusCode(200);
    }

    @Test
    void requireParametersKeepsOnlyRoutesHonouringEveryParameterCarried() {
        String extra = ",\"temperature\":0.3,\"seed\":5,\"provider\":{\"require_parameters\":true}";
        assertEquals(Set.of("p-seed"), servedBy(body("params", true, "\"seeded\"", extra)));
    }

    @Test
    void aPromptTooLargeForASmallWindowGoesToTheLargeWindow() {
        String prompt = "\"" + "hello ".repeat(2500) + "\"";
        assertEquals(Set.of("c-big"), servedBy(body("ctx", true, prompt, ",\"max_tokens\":100")));
    }

    @Test
    void theContextWindowIsJudgedInRealTokensNotCharacters() {
        // 9000 characters (2250 by chars/4) but about 1500 real tokens: fits a 2000-token window with 100 to spare
        String prompt = "\"" + "hello ".repeat(1500) + "\"";
        assertEquals(Set.of("tiny-only"), servedBy(body("tiny", true, prompt, ",\"max_tokens\":100")));
    }

    /**
     * A request too long for every route's window is refused as OpenAI refuses one too long for the model
     * ({@code context_length_exceeded}, param {@code messages}, in its words, counted in real tokens): clients key on
     * that code to trim a conversation and retry, and got {@code no_capable_provider} (found by hunt23).
     */
    @Test
    void aPromptTooLongForEveryWindowIsContextLengthExceededInRealTokens() throws Exception {
        String body = body("tiny", true, "\"" + "hello ".repeat(2500) + "\"", ",\"max_tokens\":100");
        long prompt = TokenCounter.shared().countRequest(Json.parse(body));
        send(body).then().statusCode(400)
                .body("error.type", equalTo("invalid_request_error"))
                .body("error.code", equalTo("context_length_exceeded"))
                .body("error.param", equalTo("messages"))
                .body("error.message", equalTo("This model's maximum context length is 2000 tokens. However, you"
                        + " requested " + (prompt + 100) + " tokens (" + prompt + " in the messages, 100 in the"
                        + " completion). Please reduce the length of the messages or completion (no route of 'tiny'"
                        + " has a larger context window)."));
    }

    /** The window to fit is the largest of the routes' (they were three reasons, one per route). */
    @Test
    void aPromptLargerThanEveryWindowNamesTheLargestWindow() throws Exception {
        String body = body("windows", true, "\"" + "hello ".repeat(5000) + "\"", ",\"max_tokens\":100");
        long needed = TokenCounter.shared().countRequest(Json.parse(body)) + 100L;
        send(body).then().statusCode(400)
                .body("error.type", equalTo("invalid_request_error"))
                .body("error.code", equalTo("context_length_exceeded"))
                .body("error.param", equalTo("messages"))
                .body("error.message", startsWith("This model's maximum context length is 4000 tokens. However, you"
                        + " requested " + needed + " tokens"));
        String same = body("same", true, "\"" + "hello ".repeat(5000) + "\"", ",\"max_tokens\":100");
        send(same).then().statusCode(400)
                .body("error.message", startsWith("This model's maximum context length is 2000 tokens."));
    }

    @Test
    void tenRoutesLackingTwoThingsGetTwoReasonsWithTheirRoutesCounted() throws Exception {
        String body = body("ten", true, "\"" + "hello ".repeat(5000) + "\"", ",\"max_tokens\":100" + TOOLS);
        long needed = TokenCounter.shared().countRequest(Json.parse(body)) + 100L;
        send(body).then().statusCode(400)
                .body("error.code", equalTo("no_capable_provider"))
                .body("error.message", equalTo("No provider of 'ten' can serve this request: missing tools (streaming) "
                        + "on 4 of 10 routes (ten-0, ten-1, ten-2 and 1 more); context window (" + needed
                        + " tokens needed, 3000 available) on all 10 routes."));
    }
}
