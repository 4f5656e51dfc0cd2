package dev.hedgerow.hardening;

import com.fasterxml.jackson.databind.JsonNode;
import dev.hedgerow.sim.Fault;
import dev.hedgerow.sim.ModelScript;
import dev.hedgerow.sim.SimConfig;
import dev.hedgerow.sim.SimText;
import dev.hedgerow.testsupport.GatewayHarness;
import dev.hedgerow.testsupport.Sse;
import io.restassured.RestAssured;
import io.restassured.response.Response;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

import java.util.List;
import java.util.Map;

import static dev.hedgerow.testsupport.Eventually.eventually;
import static io.restassured.RestAssured.given;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Hostile upstreams through a real gateway: each misbehaviour of the preferred route (alpha) is a failover or
 * resume onto the other (beta), or a clear error event, and nothing grows without bound.
 */
class HostileUpstreamTest {
    static final long SEED = 5;
    static final int LENGTH = 12;
    static final String YAML = """
            orgs:
              - id: acme
                keys: [{ name: app, key: "k-acme" }]
                providers:
                  - { id: alpha, base_url: "${SIM_ALPHA_URL}" }
                  - { id: beta, base_url: "${SIM_BETA_URL}" }
                routes:
                  - { alias: pair, provider: alpha, model: m }
                  - { alias: pair, provider: beta, model: m }
                groups:
                  pair: { strategy: rr_health, hedging: false, breaker: { max_fails: 1000, fail_timeout: 1s },
                          stall_floor: 300ms, first_token_floor: 200ms, first_token_ceiling: 2s }
            """;
    static GatewayHarness gw;

    @BeforeAll
    static void start() {
        ModelScript m = ModelScript.defaults().withLength(LENGTH).withLatency(ModelScript.Latency.of(5, 500));
        gw = GatewayHarness.start(YAML, Map.of("alpha", SimConfig.of(SEED).withModel("m", m),
                "beta", SimConfig.of(SEED).withModel("m", m)));
        RestAssured.baseURI = gw.baseUrl();
    }

    @AfterAll
    static void stop() {
        gw.close();
    }

    @BeforeEach
    void reset() {
        gw.sim("alpha").clearFaults();
        gw.sim("alpha").resetStats();
        gw.sim("beta").resetStats();
    }

    /** Alpha first, beta as the fallback: a soft order every strategy honours. */
    static Response ask(String prompt, boolean stream, String extra) {
        return given().auth().oauth2("k-acme").contentType("application/json")
                .body("{\"model\":\"pair\",\"stream\":" + stream + ",\"provider\":{\"order\":[\"alpha\",\"beta\"]},"
                        + "\"messages\":[{\"role\":\"user\",\"content\":\"" + prompt + "\"}]" + extra + "}")
                .post("/v1/chat/completions");
    }

    static void assertTrail(JsonNode trail, String... routeOutcomeError) {
        assertEquals(routeOutcomeError.length, trail.size(), trail.toString());
        for (int i = 0; i < trail.size(); i++) {
            JsonNode r = trail.get(i);
            String got = r.path("route").asText() + " " + r.path("outcome").asText()
                    + (r.path("error").isTextual() ? " " + r.path("error").asText() : "");
            assertEquals(routeOutcomeError[i], got, trail.toString());
        }
    }

    @Test
    void anHtmlPageWith200OnAStreamFailsOver() {
        gw.sim("alpha").enqueue("m", new Fault.Html200(0));
        String out = ask("html please", true, "").then().statusCode(200).extract().asString();
        assertEquals(SimText.expected(SEED, "html please", LENGTH), Sse.content(out));
        assertTrail(Sse.trail(out), "pair-alpha failed wrong_content_type", "pair-beta success");
    }

    @Test
    void anHtmlPageWith200WithoutStreamingFailsOver() {
        gw.sim("alpha").enqueue("m", new Fault.Html200(0));
        Response r = ask("html again", false, "");
        assertEquals(200, r.statusCode(), r.asString());
        assertEquals(SimText.expected(SEED, "html again", LENGTH), r.path("choices[0].message.content"));
        assertTrue(r.header("x-hedgerow-attempts").contains("malformed_body"), r.header("x-hedgerow-attempts"));
    }

    @Test
    void aGiantLineBeforeContentFailsOver() {
        gw.sim("alpha").enqueue("m", new Fault.GiantLine(0, 3 * 1024 * 1024));
        String out = ask("giant first", true, "").then().statusCode(200).extract().asString();
        assertEquals(SimText.expected(SEED, "giant first", LENGTH), Sse.content(out));
        assertTrail(Sse.trail(out), "pair-alpha failed oversize_event", "pair-beta success");
    }

    @Test
    void aGiantLineAfterContentResumesOnTheOtherRoute() {
        gw.sim("alpha").enqueue("m", new Fault.GiantLine(3, 3 * 1024 * 1024));
        String out = ask("giant later", true, "").then().statusCode(200).extract().asString();
        assertTrue(Sse.endsWithDone(out));
        assertFalse(Sse.events(out).stream().anyMatch(e -> e.path("error").isObject()), out);
        assertTrue(Sse.content(out).startsWith(SimText.expected(SEED, "giant later", 3)), Sse.content(out));
        JsonNode trail = Sse.trail(out);
        assertEquals("pair-alpha failed oversize_event", trail.get(0).path("route").asText() + " "
                + trail.get(0).path("outcome").asText() + " " + trail.get(0).path("error").asText());
        assertEquals("success", trail.get(trail.size() - 1).path("outcome").asText());
    }

    @Test
    void anEndlessStreamIsCutAtTheOutputLimitWithAClearErrorEvent() throws InterruptedException {
        gw.sim("alpha").enqueue("m", new Fault.Endless(2));
        String out = ask("never stop", true, ",\"max_tokens\":16").then().statusCode(200).extract().asString();
        List<JsonNode> events = Sse.events(out);
        JsonNode last = events.get(events.size() - 1);
        assertEquals("output_limit_exceeded", last.path("error").path("code").asText(), last.toString());
        assertTrue(Sse.endsWithDone(out));
        // one delta is one token: a provider ignoring max_tokens 16 is cut after 16 + 16/4 + 16 tokens of slack
        long deltas = events.stream().filter(e -> !e.path("choices").path(0).path("delta").path("content")
                .asText("").isEmpty()).count();
        assertEquals(16 + 4 + 16, deltas, out);
        assertTrue(last.path("error").path("message").asText().contains("36 tokens (max_tokens 16)"), last.toString());
        assertTrail(last.path("attempt_trail"), "pair-alpha failed output_limit");
        eventually(() -> gw.sim("alpha").stats("m").cancelled() > 0, "the endless upstream is hung up on");
        assertEquals(1, gw.sim("alpha").stats("m").cancelled(), "the endless upstream must be hung up on");
        assertEquals(0, gw.sim("beta").stats("m").received(), "a runaway answer is not resumed elsewhere");
    }

    /**
     * A resume that will not stop is held to what was left of max_tokens: an instruction-style resume (these routes
     * take no prefill) asks for what was left plus room for the overlap it may repeat, and the gateway ends the
     * answer at max_tokens itself, with finish_reason length, hanging up on the resuming provider.
     */
    @Test
    void aResumeThatWillNotStopIsEndedAtMaxTokens() {
        gw.sim("alpha").enqueue("m", new Fault.Drop(4, false));
        gw.sim("beta").enqueue("m", new Fault.Endless(0));
        long cancelled = gw.sim("beta").stats("m").cancelled();
        String out = ask("stop after four", true, ",\"max_tokens\":16").then().statusCode(200).extract().asString();
        List<JsonNode> events = Sse.events(out);
        JsonNode last = events.get(events.size() - 1);
        assertTrue(last.path("error").isMissingNode(), last.toString());
        assertTrue(Sse.endsWithDone(out));
        long deltas = events.stream().filter(e -> !e.path("choices").path(0).path("delta").path("content")
                .asText("").isEmpty()).count();
        // 4 delivered, then the held overlap-trimmed text goes out as one delta and each later token as one: at most
        // 16 tokens' worth, the last chunk carrying the length finish
        assertTrue(deltas > 4 && deltas <= 16, deltas + " deltas: " + out);
        assertEquals("length", last.path("choices").path(0).path("finish_reason").asText(), last.toString());
        JsonNode trail = last.path("attempt_trail");
        assertEquals("pair-beta success", trail.get(trail.size() - 1).path("route").asText() + " "
                + trail.get(trail.size() - 1).path("outcome").asText());
        eventually(() -> gw.sim("beta").stats("m").cancelled() > cancelled, "the endless resume is hung up on");
    }

    @Test
    void aSlowDripAfterContentIsAStallNotLife() {
        gw.sim("alpha").enqueue("m", new Fault.SlowDrip(3, 50));
        String out = ask("drip drip", true, "").then().statusCode(200).extract().asString();
        assertTrue(Sse.endsWithDone(out));
        assertFalse(Sse.events(out).stream().anyMatch(e -> e.path("error").isObject()), out);
        JsonNode trail = Sse.trail(out);
        assertEquals("pair-alpha failed stall", trail.get(0).path("route").asText() + " "
                + trail.get(0).path("outcome").asText() + " " + trail.get(0).path("error").asText());
        assertEquals("pair-beta", trail.get(trail.size() - 1).path("route").asText());
        assertEquals("success", trail.get(trail.size() - 1).path("outcome").asText());
    }

    @Test
    void nonJsonFramesAreSkippedAndTheAnswerIsWhole() {
        gw.sim("alpha").enqueue("m", new Fault.MalformedFrame(1));
        String out = ask("garbage inside", true, "").then().statusCode(200).extract().asString();
        assertEquals(SimText.expected(SEED, "garbage inside", LENGTH), Sse.content(out));
        assertTrail(Sse.trail(out), "pair-alpha success");
    }
}
