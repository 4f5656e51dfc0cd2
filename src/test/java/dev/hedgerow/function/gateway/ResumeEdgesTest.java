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
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.Set;

import static io.restassured.RestAssured.given;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Mid-stream resume at its edges, over HTTP on simulated providers (routes a and b resume by prefill, plain by
 * instruction): hunt18's findings (a resume that lost its text on the way ended the answer as complete; a break at
 * exactly max_tokens gave the client one token more; a first token under 4 characters was repeated after an
 * instruction resume; the reasoning field changed name at the seam; max_tokens counted the reasoning the provider
 * does not) and what it checked and found right (instruction resumes inside and at the end of reasoning, one with
 * nothing left to write, usage after a resume). Every answer is compared with the simulator's deterministic text.
 */
class ResumeEdgesTest {
    static final long SEED = 23;
    static final int LENGTH = 24;
    static final int REASONING = 8;
    static final String YAML = """
            orgs:
              - id: acme
                keys: [{ name: app, key: "k-acme" }]
                providers:
                  - { id: a, base_url: "${SIM_A_URL}", dialect: vllm }
                  - { id: b, base_url: "${SIM_B_URL}", dialect: vllm }
                  - { id: plain, base_url: "${SIM_PLAIN_URL}", dialect: openai }
                routes:
                  - { alias: resume, provider: a, model: m-text, priority: 1, capabilities: [prefill] }
                  - { alias: resume, provider: b, model: m-text, priority: 2, capabilities: [prefill] }
                  - { alias: plain, provider: a, model: m-text, priority: 1 , capabilities: [prefill]}
                  - { alias: plain, provider: plain, model: m-text, priority: 2 }
                  - { alias: thinkplain, provider: a, model: m-think, priority: 1, capabilities: [prefill] }
                  - { alias: thinkplain, provider: plain, model: m-think, priority: 2 }
                  - { alias: think, provider: a, model: m-think, priority: 1, capabilities: [prefill] }
                  - { alias: think, provider: b, model: m-think, priority: 2, capabilities: [prefill] }
                  - { alias: mixr, provider: a, model: m-think-r, priority: 1, capabilities: [prefill] }
                  - { alias: mixr, provider: b, model: m-think, priority: 2, capabilities: [prefill] }
                  - { alias: noresume, provider: a, model: m-text, priority: 1, capabilities: [prefill] }
                  - { alias: noresume, provider: b, model: m-text, priority: 2, capabilities: [prefill] }
                groups:
                  resume: { strategy: priority }
                  plain: { strategy: priority }
                  thinkplain: { strategy: priority }
                  think: { strategy: priority }
                  mixr: { strategy: priority }
                  noresume: { strategy: priority, resume_mid_stream: false }
            """;

    static GatewayHarness gw;

    @BeforeAll
    static void start() {
        ModelScript text = ModelScript.defaults().withLength(LENGTH).withLatency(ModelScript.Latency.of(5, 2000));
        ModelScript think = text.withReasoning(new ModelScript.Reasoning(REASONING, 0, 0));
        ModelScript noPrefill = text.withCapabilities(ModelScript.Capabilities.DEFAULT.withContinuation(Set.of()));
        ModelScript noPrefillThink = noPrefill.withReasoning(new ModelScript.Reasoning(REASONING, 0, 0));
        gw = GatewayHarness.start(YAML, Map.of(
                "a", SimConfig.of(SEED).withModel("m-text", text).withModel("m-think", think)
                        .withModel("m-think-r", text.withReasoning(new ModelScript.Reasoning(REASONING, 0, 0).inField("reasoning"))),
                "b", SimConfig.of(SEED).withModel("m-text", text).withModel("m-think", think),
                "plain", SimConfig.of(SEED).withModel("m-text", noPrefill).withModel("m-think", noPrefillThink)));
        RestAssured.baseURI = gw.baseUrl();
    }

    @BeforeEach
    void healthy() {
        for (String alias : List.of("resume", "plain", "thinkplain", "think", "mixr", "noresume")) {
            for (String p : List.of("a", "b", "plain")) {
                gw.core().store().resetHealth("acme/" + alias + "-" + p).await().atMost(Duration.ofSeconds(5));
            }
        }
    }

    @AfterAll
    static void stop() {
        gw.close();
    }

    static String stream(String alias, String prompt, String extra) {
        return given().auth().oauth2("k-acme").contentType("application/json")
                .body("{\"model\":\"" + alias + "\",\"stream\":true" + extra
                        + ",\"messages\":[{\"role\":\"user\",\"content\":\"" + prompt + "\"}]}")
                .post("/v1/chat/completions").then().statusCode(200).extract().asString();
    }

    /** A break after exactly max_tokens tokens, before the finish: the answer must not exceed max_tokens. */
    @Test
    void breakAtMaxTokensBeforeTheFinishDoesNotExceedMaxTokens() {
        String prompt = "cap reached then cut";
        gw.sim("a").enqueue("m-text", Fault.dropAfter(5));
        String out = stream("resume", prompt, ",\"max_tokens\":5");
        assertEquals(SimText.expected(SEED, prompt, 5), Sse.content(out));
        assertEquals("length", Sse.finishReason(out));
    }

    /** Under resume_mid_stream: false too, an answer whole at max_tokens when its stream broke ends with length. */
    @Test
    void breakAtMaxTokensEndsWithLengthWhereNothingResumes() {
        String prompt = "cap reached, no resume";
        gw.sim("a").enqueue("m-text", Fault.dropAfter(5));
        String out = stream("noresume", prompt, ",\"max_tokens\":5");
        assertEquals(SimText.expected(SEED, prompt, 5), Sse.content(out));
        assertEquals("length", Sse.finishReason(out));
        assertTrue(Sse.events(out).stream().noneMatch(e -> e.has("error")), out);
    }

    /**
     * A stream resumes on the route that just broke, its last resort, rather than on the route that answered the same
     * request a 429 with a minute's Retry-After a moment before: the resume went back to it (found by hunt22).
     */
    @Test
    void aResumeDoesNotGoBackToARouteThatAskedTheRequestToWait() {
        String prompt = "limited then cut";
        long limitedBefore = gw.sim("a").stats("m-text").received();
        gw.sim("a").enqueue("m-text", Fault.rateLimited(60));
        gw.sim("b").enqueue("m-text", Fault.dropAfter(5));
        String out = stream("resume", prompt, "");
        assertEquals(SimText.expected(SEED, prompt, LENGTH), Sse.content(out));
        assertEquals("stop", Sse.finishReason(out));
        assertEquals(limitedBefore + 1, gw.sim("a").stats("m-text").received(), "asked once, answered 429");
    }

    /** An instruction resume after a single short (< 4 chars) first token. */
    @Test
    void instructionResumeAfterAShortFirstTokenDoesNotRepeatIt() {
        String prompt = null;
        for (int i = 0; i < 500 && prompt == null; i++) {
            String p = "short first " + i;
            String first = SimText.tokens(SEED, p, 1).get(0);
            if (first.length() < 4 && !first.endsWith(".")) {
                prompt = p;
            }
        }
        gw.sim("a").enqueue("m-text", Fault.dropAfter(1));
        String out = stream("plain", prompt, "");
        assertEquals(SimText.expected(SEED, prompt, LENGTH), Sse.content(out));
    }

    /** An instruction resume whose continuation is only the overlap (the whole text had been delivered). */
    @Test
    void instructionResumeWithNothingLeftAddsNothing() {
        String prompt = "all delivered then cut";
        gw.sim("a").enqueue("m-text", Fault.dropAfter(LENGTH));
        String out = stream("plain", prompt, "");
        assertEquals(SimText.expected(SEED, prompt, LENGTH), Sse.content(out));
        assertEquals("stop", Sse.finishReason(out));
    }

    /** A break inside reasoning, resumed by instruction. */
    @Test
    void instructionResumeInsideReasoning() {
        String prompt = "think on plain";
        gw.sim("a").enqueue("m-think", Fault.dropInReasoning(3));
        String out = stream("thinkplain", prompt, "");
        assertEquals(String.join("", SimText.reasoningTokens(SEED, prompt, REASONING)), Sse.reasoning(out));
        assertEquals(SimText.expected(SEED, prompt, LENGTH), Sse.content(out));
    }

    /** A break at the end of reasoning (all reasoning delivered, no content), resumed by instruction. */
    @Test
    void instructionResumeAtTheEndOfReasoning() {
        String prompt = "think fully on plain";
        gw.sim("a").enqueue("m-think", Fault.dropInReasoning(REASONING));
        String out = stream("thinkplain", prompt, "");
        assertEquals(String.join("", SimText.reasoningTokens(SEED, prompt, REASONING)), Sse.reasoning(out));
        assertEquals(SimText.expected(SEED, prompt, LENGTH), Sse.content(out));
    }

    /** A break at the end of reasoning, prefill resume. */
    @Test
    void prefillResumeAtTheEndOfReasoning() {
        String prompt = "think fully on b";
        gw.sim("a").enqueue("m-think", Fault.dropInReasoning(REASONING));
        String out = stream("think", prompt, "");
        assertEquals(String.join("", SimText.reasoningTokens(SEED, prompt, REASONING)), Sse.reasoning(out));
        assertEquals(SimText.expected(SEED, prompt, LENGTH), Sse.content(out));
    }

    /**
     * The usage after a resume keeps the reasoning's share, {@code completion_tokens_details.reasoning_tokens}, as the
     * provider's usage carries it without one: it was dropped, and a client that counts the visible tokens as the
     * completion less the reasoning counted the reasoning as visible (found by hunt29-b).
     */
    @Test
    void theUsageAfterAResumeSaysHowManyTokensWereReasoning() {
        String prompt = "think fully and count";
        gw.sim("a").enqueue("m-think", Fault.dropInReasoning(REASONING));
        String out = stream("think", prompt, ",\"stream_options\":{\"include_usage\":true}");
        assertTrue(Sse.trail(out).toString().contains("\"kind\":\"resume\""), out);
        JsonNode usage = null;
        for (JsonNode e : Sse.events(out)) {
            if (e.path("usage").isObject()) {
                usage = e.path("usage");
            }
        }
        assertNotNull(usage, out);
        int reasoning = dev.hedgerow.routing.TokenCounter.shared().countText(Sse.reasoning(out));
        assertEquals(reasoning, usage.path("completion_tokens_details").path("reasoning_tokens").asInt(-1),
                usage.toString());
        assertTrue(usage.path("completion_tokens").asInt() > reasoning, usage.toString());
    }

    /** Max_tokens across an instruction resume, break exactly at max. */
    @Test
    void instructionBreakAtMaxTokens() {
        String prompt = "cap reached then cut plain";
        gw.sim("a").enqueue("m-text", Fault.dropAfter(6));
        String out = stream("plain", prompt, ",\"max_tokens\":6");
        assertEquals(SimText.expected(SEED, prompt, 6), Sse.content(out));
        assertEquals("length", Sse.finishReason(out));
    }

    /** The usage chunk after a resume counts the request's prompt as a clean answer's does. */
    @Test
    void usageAfterResumeCountsThePromptOnce() {
        String prompt = "bill me after a cut";
        gw.sim("a").enqueue("m-text", Fault.dropAfter(4));
        String out = stream("resume", prompt, ",\"stream_options\":{\"include_usage\":true}");
        List<JsonNode> ev = Sse.events(out);
        JsonNode usage = ev.get(ev.size() - 1).path("usage");
        String clean = stream("resume", prompt, ",\"stream_options\":{\"include_usage\":true}");
        List<JsonNode> ev2 = Sse.events(clean);
        assertEquals(SimText.expected(SEED, prompt, LENGTH), Sse.content(out));
        assertEquals(ev2.get(ev2.size() - 1).path("usage").path("prompt_tokens").asInt(),
                usage.path("prompt_tokens").asInt(), usage.toString());
    }

    /** Reasoning the provider does not count against max_tokens (the sim's default), break after content. */
    @Test
    void maxTokensWithUncountedReasoning() {
        String prompt = "think capped content";
        String clean = stream("think", prompt, ",\"max_tokens\":16");
        gw.sim("a").enqueue("m-think", Fault.dropAfter(3));
        String out = stream("think", prompt, ",\"max_tokens\":16");
        assertEquals(Sse.content(clean), Sse.content(out));
    }

    /** The reasoning field name changes across the seam when routes stream it under different names. */
    @Test
    void reasoningFieldNameAcrossTheSeam() {
        String prompt = "mixed reasoning fields";
        String clean = stream("mixr", prompt, "");
        gw.sim("a").enqueue("m-think-r", Fault.dropInReasoning(3));
        String out = stream("mixr", prompt, "");
        java.util.Set<String> fields = new java.util.TreeSet<>();
        StringBuilder inReasoningField = new StringBuilder();
        for (JsonNode e : Sse.events(out)) {
            JsonNode d = e.path("choices").path(0).path("delta");
            if (d.has("reasoning")) { fields.add("reasoning"); inReasoningField.append(d.get("reasoning").asText()); }
            if (d.has("reasoning_content")) { fields.add("reasoning_content"); }
        }
        assertEquals(Sse.reasoning(clean), Sse.reasoning(out));
        assertEquals(Sse.reasoning(clean), inReasoningField.toString(), "a client reading delta.reasoning");
    }

    /** The resume's route loses the text on the way (finish stop, usage counting 19 tokens, no content). */
    @Test
    void aResumeThatLosesItsContentIsNotTakenAsTheEnd() {
        String prompt = "resume loses its text";
        gw.sim("a").enqueue("m-text", Fault.dropAfter(5));
        gw.sim("b").enqueue("m-text", new Fault.LostContent());
        String out = stream("resume", prompt, ",\"stream_options\":{\"include_usage\":true}");
        assertEquals(SimText.expected(SEED, prompt, LENGTH), Sse.content(out));
    }
}
