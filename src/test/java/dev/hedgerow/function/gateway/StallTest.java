package dev.hedgerow.function.gateway;

import com.fasterxml.jackson.databind.JsonNode;
import dev.hedgerow.sim.Fault;
import dev.hedgerow.sim.ModelScript;
import dev.hedgerow.sim.SimConfig;
import dev.hedgerow.sim.SimText;
import dev.hedgerow.testsupport.GatewayHarness;
import dev.hedgerow.testsupport.Sse;
import io.restassured.RestAssured;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

import java.util.Map;

import static dev.hedgerow.testsupport.Eventually.eventually;
import static io.restassured.RestAssured.given;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Stall detection over real HTTP, scaled down (a 300 ms stall floor): a stream that stops is cut (the simulator
 * sees the cancel) and resumed elsewhere byte-exact; a reasoning model's long pause before its first visible token
 * is left alone, kept alive by keep-alive comments or wholly silent on a route whose thinking is not measured yet. The 60 s versions run with fake time in DispatchTimingTest.
 */
class StallTest {
    static final long SEED = 31;
    static final int LENGTH = 24;
    static final String YAML = """
            orgs:
              - id: acme
                keys: [{ name: app, key: "k-acme" }]
                providers:
                  - { id: a, base_url: "${SIM_A_URL}", dialect: sglang }
                  - { id: b, base_url: "${SIM_B_URL}", dialect: sglang }
                routes:
                  - { alias: stall, provider: a, model: m-text, priority: 1, capabilities: [prefill] }
                  - { alias: stall, provider: b, model: m-text, priority: 2, capabilities: [prefill] }
                  - { alias: whole, provider: a, model: m-text, priority: 1, capabilities: [prefill] }
                  - { alias: whole, provider: b, model: m-text, priority: 2, capabilities: [prefill] }
                  - { alias: ponder, provider: a, model: m-ponder, priority: 1, capabilities: [prefill] }
                  - { alias: ponder, provider: b, model: m-ponder, priority: 2, capabilities: [prefill] }
                  - { alias: muse, provider: a, model: m-muse, priority: 1, capabilities: [prefill] }
                  - { alias: muse, provider: b, model: m-muse, priority: 2, capabilities: [prefill] }
                groups:
                  stall: { strategy: priority, stall_floor: 300ms }
                  whole: { strategy: priority, stall_floor: 300ms }
                  ponder: { strategy: priority, stall_floor: 300ms }
                  muse: { strategy: priority, stall_floor: 300ms }
            """;

    static GatewayHarness gw;

    @BeforeAll
    static void start() {
        ModelScript text = ModelScript.defaults().withLength(LENGTH).withLatency(ModelScript.Latency.of(5, 2000));
        // 4 reasoning deltas, then 1.5 s of silence but for a keep-alive comment every 100 ms, then the answer
        ModelScript ponder = text.withReasoning(new ModelScript.Reasoning(4, 1500, 100));
        // the same, but the 1.5 s are wholly silent: no keep-alive comments
        ModelScript muse = text.withReasoning(new ModelScript.Reasoning(4, 1500, 0));
        gw = GatewayHarness.start(YAML, Map.of(
                "a", SimConfig.of(SEED).withModel("m-text", text).withModel("m-ponder", ponder)
                        .withModel("m-muse", muse),
                "b", SimConfig.of(SEED).withModel("m-text", text).withModel("m-ponder", ponder)
                        .withModel("m-muse", muse)));
        RestAssured.baseURI = gw.baseUrl();
    }

    @AfterAll
    static void stop() {
        gw.close();
    }

    static String stream(String alias, String prompt) {
        return given().auth().oauth2("k-acme").contentType("application/json")
                .body("{\"model\":\"" + alias + "\",\"stream\":true"
                        + ",\"messages\":[{\"role\":\"user\",\"content\":\"" + prompt + "\"}]}")
                .post("/v1/chat/completions").then().statusCode(200).extract().asString();
    }

    @Test
    void aStalledStreamIsCutAndResumedElsewhereByteExact() {
        gw.sim("a").enqueue("m-text", Fault.stall(5, 30_000));
        String out = stream("stall", "then silence");
        assertEquals(SimText.expected(SEED, "then silence", LENGTH), Sse.content(out));
        JsonNode trail = Sse.trail(out);
        assertEquals("stall", trail.get(0).path("error").asText(), trail.toString());
        assertEquals("resume", trail.get(1).path("kind").asText());
        assertTrue(gw.sim("b").stats("m-text").recent().get(0).body().contains("\"continue_final_message\":true"));
        eventually(() -> gw.sim("a").stats("m-text").cancelled() > 0, "the stalled upstream is hung up on");
        assertEquals(1, gw.sim("a").stats("m-text").cancelled());
    }

    @Test
    void aStreamThatFinishedButIsNeverClosedIsWholeNotResumed() {
        gw.sim("a").enqueue("m-text", Fault.hangAfterFinish());
        long resumedBefore = gw.sim("b").stats("m-text").received();
        long cancelledBefore = gw.sim("a").stats("m-text").cancelled();
        String out = stream("whole", "finished, then silence");
        assertEquals(SimText.expected(SEED, "finished, then silence", LENGTH), Sse.content(out));
        assertTrue(out.endsWith("data: [DONE]\n\n"), out);
        JsonNode trail = Sse.trail(out);
        assertEquals(1, trail.size(), trail.toString());
        assertEquals("success", trail.get(0).path("outcome").asText(), trail.toString());
        assertEquals("whole-a", trail.get(0).path("route").asText(), trail.toString());
        assertEquals(resumedBefore, gw.sim("b").stats("m-text").received(), "nothing to resume");
        eventually(() -> gw.sim("a").stats("m-text").cancelled() > cancelledBefore, "the open upstream is hung up on");
    }

    @Test
    void aLongReasoningPauseWithKeepAlivesIsNotCut() {
        String prompt = "think for a while";
        String out = stream("ponder", prompt);
        assertEquals(String.join("", SimText.reasoningTokens(SEED, prompt, 4)), Sse.reasoning(out));
        assertEquals(SimText.expected(SEED, prompt, LENGTH), Sse.content(out));
        JsonNode trail = Sse.trail(out);
        assertEquals(1, trail.size(), trail.toString());
        assertEquals("success", trail.get(0).path("outcome").asText());
        assertEquals(0, gw.sim("b").stats("m-ponder").received());
    }

    @Test
    void aSilentReasoningPauseOnARouteNotYetMeasuredIsNotCut() {
        // Keln: a reasoning model thinking before its first visible token is left alone. Cut at the stall floor,
        // the route's thinking time could never be learnt, so every such pause would be cut.
        String prompt = "think in silence";
        String out = stream("muse", prompt);
        assertEquals(String.join("", SimText.reasoningTokens(SEED, prompt, 4)), Sse.reasoning(out));
        assertEquals(SimText.expected(SEED, prompt, LENGTH), Sse.content(out));
        JsonNode trail = Sse.trail(out);
        assertEquals(1, trail.size(), trail.toString());
        assertEquals("success", trail.get(0).path("outcome").asText());
        assertEquals(0, gw.sim("a").stats("m-muse").cancelled());
        assertEquals(0, gw.sim("b").stats("m-muse").received());
    }
}
