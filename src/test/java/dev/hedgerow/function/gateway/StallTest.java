package dev.hedgerow.function.gateway;

import com.fasterxml.jackson.databind.JsonNode;
import dev.hedgerow.sim.Fault;
import dev.hedgerow.sim.ModelScript;
import dev.hedgerow.sim.SimConfig;
import dev.hedgerow.sim.SimText;
import dev.hedgerow.state.RouteSnapshot;
import dev.hedgerow.testsupport.GatewayHarness;
import dev.hedgerow.testsupport.Sse;
import io.restassured.RestAssured;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

import java.time.Duration;
import java.util.List;
import java.util.Map;

import static dev.hedgerow.testsupport.Eventually.eventually;
import static io.restassured.RestAssured.given;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Stall detection over real HTTP, scaled down (a 300 ms stall floor): a stream that stops is cut (the simulator
 * sees the cancel) and resumed elsewhere byte-exact, and so is one whose generation hangs behind a heartbeat
 * (keep-alive comments or empty chunks: no progress); a reasoning model's long pause before its first visible token
 * is left alone, kept alive by keep-alive comments or wholly silent on a route whose thinking is not measured yet; a
 * stream nothing could resume (committed under {@code resume_mid_stream: false}, or its resumes spent) is not cut at a
 * pause, only after read_timeout of silence. The 60 s versions run with fake time in DispatchTimingTest.
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
                  - { alias: committed, provider: a, model: m-commit, priority: 1, capabilities: [prefill] }
                  - { alias: committed, provider: b, model: m-commit, priority: 2, capabilities: [prefill] }
                  - { alias: spent, provider: a, model: m-commit, priority: 1, capabilities: [prefill] }
                  - { alias: spent, provider: b, model: m-commit, priority: 2, capabilities: [prefill] }
                  - { alias: beat, provider: a, model: m-beat, priority: 1, capabilities: [prefill] }
                  - { alias: beat, provider: b, model: m-beat, priority: 2, capabilities: [prefill] }
                  - { alias: lingers, provider: a, model: m-linger, priority: 1, capabilities: [prefill] }
                  - { alias: lingers, provider: b, model: m-linger, priority: 2, capabilities: [prefill] }
                  - { alias: blank, provider: a, model: m-blank, priority: 1, capabilities: [prefill] }
                  - { alias: blank, provider: b, model: m-blank, priority: 2, capabilities: [prefill] }
                groups:
                  stall: { strategy: priority, stall_floor: 300ms }
                  beat: { strategy: priority, stall_floor: 300ms }
                  blank: { strategy: priority, stall_floor: 300ms }
                  whole: { strategy: priority, stall_floor: 300ms }
                  lingers: { strategy: priority, stall_floor: 60s }
                  ponder: { strategy: priority, stall_floor: 300ms }
                  muse: { strategy: priority, stall_floor: 300ms }
                  committed: { strategy: priority, stall_floor: 300ms, resume_mid_stream: false, read_timeout: 3s,
                               head_hold: 200ms }
                  spent: { strategy: priority, stall_floor: 300ms, max_resumes: 0, read_timeout: 3s }
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
                        .withModel("m-muse", muse).withModel("m-commit", text).withModel("m-beat", text)
                        .withModel("m-blank", text).withModel("m-linger", text),
                "b", SimConfig.of(SEED).withModel("m-text", text).withModel("m-ponder", ponder)
                        .withModel("m-muse", muse).withModel("m-commit", text).withModel("m-beat", text)
                        .withModel("m-blank", text).withModel("m-linger", text)));
        RestAssured.baseURI = gw.baseUrl();
    }

    /** The tests of streams nothing could resume fail their route on purpose: each starts with both routes healthy. */
    @BeforeEach
    void healthy() {
        for (String route : List.of("committed-a", "committed-b", "spent-a", "spent-b")) {
            gw.core().store().resetHealth("acme/" + route).await().atMost(Duration.ofSeconds(5));
        }
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

    /**
     * Keln: a generation that stops making progress is cut. A proxy or server heartbeat in front of a hung generation
     * (keep-alive comments, or chunks with nothing in them) is not progress once the visible answer has begun.
     */
    @Test
    @Timeout(value = 120, threadMode = Timeout.ThreadMode.SEPARATE_THREAD)   // not cut, the stream never ends
    void aGenerationHungBehindKeepAliveCommentsIsCutAndResumedElsewhereByteExact() {
        assertCutAndResumed("beat", "m-beat", Fault.stallKeptAlive(5, 100));
    }

    @Test
    @Timeout(value = 120, threadMode = Timeout.ThreadMode.SEPARATE_THREAD)
    void aGenerationHungBehindEmptyChunksIsCutAndResumedElsewhereByteExact() {
        assertCutAndResumed("blank", "m-blank", Fault.stallKeptAliveByEmptyChunks(5, 100));
    }

    private static void assertCutAndResumed(String alias, String model, Fault fault) {
        String prompt = "then only a heartbeat";
        gw.sim("a").enqueue(model, fault);
        String out = stream(alias, prompt);
        assertEquals(SimText.expected(SEED, prompt, LENGTH), Sse.content(out));
        JsonNode trail = Sse.trail(out);
        assertEquals(2, trail.size(), trail.toString());
        assertEquals("stall", trail.get(0).path("error").asText(), trail.toString());
        assertEquals("resume", trail.get(1).path("kind").asText(), trail.toString());
        assertEquals("success", trail.get(1).path("outcome").asText(), trail.toString());
        eventually(() -> gw.sim("a").stats(model).cancelled() == 1, "the hung upstream is hung up on");
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

    /**
     * A stream that sent its finish and its usage but neither [DONE] nor its close is ended a second later, not after
     * stall_floor (60 s here): its client's last chunk and [DONE] came that much after the text (found by hunt12). The
     * bound on the wait only stops a hang: the old behaviour took the whole 60 s (checked: it times out at 30 s).
     */
    @Test
    void aStreamLeftOpenAfterItsFinishAndUsageEndsWithoutWaitingOutTheStallFloor() throws Exception {
        gw.sim("a").enqueue("m-linger", Fault.hangAfterFinish());
        long cancelledBefore = gw.sim("a").stats("m-linger").cancelled();
        java.net.http.HttpResponse<String> r = java.net.http.HttpClient.newHttpClient().sendAsync(
                java.net.http.HttpRequest.newBuilder(java.net.URI.create(gw.baseUrl() + "/v1/chat/completions"))
                        .header("Authorization", "Bearer k-acme").header("Content-Type", "application/json")
                        .POST(java.net.http.HttpRequest.BodyPublishers.ofString("{\"model\":\"lingers\",\"stream\":"
                                + "true,\"messages\":[{\"role\":\"user\",\"content\":\"finished, then silence\"}]}"))
                        .build(), java.net.http.HttpResponse.BodyHandlers.ofString())
                .get(30, java.util.concurrent.TimeUnit.SECONDS);
        String out = r.body();
        assertEquals(SimText.expected(SEED, "finished, then silence", LENGTH), Sse.content(out));
        assertTrue(out.endsWith("data: [DONE]\n\n"), out);
        JsonNode trail = Sse.trail(out);
        assertEquals(1, trail.size(), trail.toString());
        assertEquals("success", trail.get(0).path("outcome").asText(), trail.toString());
        eventually(() -> gw.sim("a").stats("m-linger").cancelled() > cancelledBefore, "the open upstream is hung up on");
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

    /**
     * Trifrost's commit point: once content reached the client the attempt is never retried, so cutting it at a pause
     * would only lose an answer still on its way. It is waited for (the client hearing keep-alive comments every
     * head_hold meanwhile), and a slow route is not cooled down for it.
     */
    @Test
    void aPauseInAStreamCommittedWithoutResumeIsWaitedForNotCut() {
        gw.sim("a").enqueue("m-commit", Fault.stall(5, 1500));
        long elsewhere = gw.sim("b").stats("m-commit").received();
        String prompt = "pause, then go on";
        String out = stream("committed", prompt);
        assertEquals(SimText.expected(SEED, prompt, LENGTH), Sse.content(out), out);
        assertTrue(Sse.events(out).stream().noneMatch(e -> e.has("error")), out);
        JsonNode trail = Sse.trail(out);
        assertEquals(1, trail.size(), trail.toString());
        assertEquals("success", trail.get(0).path("outcome").asText(), trail.toString());
        assertEquals(elsewhere, gw.sim("b").stats("m-commit").received(), "never retried after content");
        assertTrue(out.substring(out.indexOf("data:")).contains(": keep-alive"),
                "the client heard from the stream during the pause: " + out);
        assertEquals(0, health("committed-a").fails(), "a pause is not a failure of the route");
    }

    @Test
    void aStreamCommittedWithoutResumeThatStaysSilentForTheReadTimeoutEndsWithAnErrorEvent() {
        gw.sim("a").enqueue("m-commit", Fault.stallForever(5));
        long elsewhere = gw.sim("b").stats("m-commit").received();
        long cancelled = gw.sim("a").stats("m-commit").cancelled();
        String prompt = "pause forever";
        String out = stream("committed", prompt);
        assertEquals(SimText.expected(SEED, prompt, 5), Sse.content(out), out);
        List<JsonNode> ev = Sse.events(out);
        assertEquals("stream_interrupted", ev.get(ev.size() - 1).path("error").path("code").asText(), out);
        assertTrue(Sse.endsWithDone(out));
        assertEquals("stall", Sse.trail(out).get(0).path("error").asText());
        assertEquals(elsewhere, gw.sim("b").stats("m-commit").received(), "never retried after content");
        eventually(() -> gw.sim("a").stats("m-commit").cancelled() > cancelled, "the dead upstream is hung up on");
        assertTrue(health("committed-a").coolingDown(), "a stream silent for read_timeout is the route failing");
    }

    @Test
    void aPauseAfterTheResumesAreSpentIsWaitedForNotCut() {
        gw.sim("a").enqueue("m-commit", Fault.stall(5, 1500));
        String prompt = "no resumes left";
        String out = stream("spent", prompt);
        assertEquals(SimText.expected(SEED, prompt, LENGTH), Sse.content(out), out);
        assertTrue(Sse.events(out).stream().noneMatch(e -> e.has("error")), out);
        assertEquals(1, Sse.trail(out).size(), out);
        assertEquals(0, health("spent-a").fails());
    }

    static RouteSnapshot health(String routeId) {
        String key = "acme/" + routeId;
        return gw.core().store().snapshot(List.of(key), Duration.ofMinutes(1)).await().atMost(Duration.ofSeconds(5))
                .get(key);
    }
}
