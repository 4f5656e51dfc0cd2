package dev.hedgerow.function.gateway;

import com.fasterxml.jackson.databind.JsonNode;
import dev.hedgerow.api.Json;
import dev.hedgerow.sim.Fault;
import dev.hedgerow.sim.Gates;
import dev.hedgerow.sim.ModelScript;
import dev.hedgerow.sim.SimConfig;
import dev.hedgerow.sim.SimStats;
import dev.hedgerow.sim.SimText;
import dev.hedgerow.state.LedgerEntry;
import dev.hedgerow.testsupport.GatewayHarness;
import dev.hedgerow.testsupport.Sse;
import dev.hedgerow.testsupport.SseReader;
import io.restassured.RestAssured;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

import java.time.Duration;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;

import static dev.hedgerow.testsupport.Eventually.eventually;
import static io.restassured.RestAssured.given;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Mid-stream resume over real HTTP: a stream killed at every awkward moment reaches the client complete and
 * byte-exact (checked against the simulator's deterministic text), with one id, billed once; a fallback that
 * refuses prefill is handled without the client seeing its 400; {@code resume_mid_stream: false} ends with an
 * error event instead.
 */
class ResumeTest {
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
                  - { id: refuser, base_url: "${SIM_REFUSER_URL}", dialect: vllm }
                  - { id: pfx, base_url: "${SIM_PFX_URL}", dialect: prefix }
                  - { id: anth, base_url: "${SIM_ANTH_URL}", dialect: anthropic }
                routes:
                  - { alias: resume, provider: a, model: m-text, priority: 1, capabilities: [prefill] }
                  - { alias: resume, provider: b, model: m-text, priority: 2, capabilities: [prefill] }
                  - { alias: think, provider: a, model: m-think, priority: 1, capabilities: [prefill] }
                  - { alias: think, provider: b, model: m-think, priority: 2, capabilities: [prefill] }
                  - { alias: refuse, provider: a, model: m-text, priority: 1, capabilities: [prefill] }
                  - { alias: refuse, provider: refuser, model: m-text, priority: 2, capabilities: [prefill] }
                  - { alias: plain, provider: a, model: m-text, priority: 1 }
                  - { alias: plain, provider: plain, model: m-text, priority: 2 }
                  - { alias: nores, provider: a, model: m-text, priority: 1, capabilities: [prefill] }
                  - { alias: nores, provider: b, model: m-text, priority: 2, capabilities: [prefill] }
                  - { alias: bill, provider: a, model: m-text, priority: 1, capabilities: [prefill] }
                  - { alias: bill, provider: b, model: m-text, priority: 2, capabilities: [prefill] }
                  - { alias: tools, provider: a, model: m-text, priority: 1, capabilities: [prefill, tools] }
                  - { alias: tools, provider: b, model: m-text, priority: 2, capabilities: [prefill, tools] }
                  - { alias: norestools, provider: a, model: m-text, priority: 1, capabilities: [prefill, tools] }
                  - { alias: norestools, provider: b, model: m-text, priority: 2, capabilities: [prefill, tools] }
                  - { alias: noresumetools, provider: a, model: m-text, priority: 1, capabilities: [prefill, tools] }
                  - { alias: noresumetools, provider: b, model: m-text, priority: 2, capabilities: [prefill, tools] }
                  - { alias: heldtools, provider: a, model: m-text, priority: 1, capabilities: [prefill, tools] }
                  - { alias: heldtools, provider: b, model: m-text, priority: 2, capabilities: [prefill, tools] }
                  - { alias: json, provider: a, model: m-text, priority: 1, capabilities: [prefill, json_mode] }
                  - { alias: json, provider: b, model: m-text, priority: 2, capabilities: [prefill, json_mode] }
                  - { alias: prefixed, provider: a, model: m-text, priority: 1, capabilities: [prefill] }
                  - { alias: prefixed, provider: pfx, model: m-text, priority: 2, capabilities: [prefill] }
                  - { alias: trailing, provider: a, model: m-text, priority: 1, capabilities: [prefill] }
                  - { alias: trailing, provider: anth, model: m-text, priority: 2, capabilities: [prefill] }
                  - { alias: capped, provider: a, model: m-text, priority: 1, capabilities: [prefill] }
                  - { alias: capped, provider: plain, model: m-text, priority: 2 }
                  - { alias: capped, provider: b, model: m-text, priority: 3, capabilities: [prefill] }
                  - { alias: smallwin, provider: a, model: m-text, priority: 1, capabilities: [prefill] }
                  - { alias: smallwin, provider: b, model: m-text, priority: 2, capabilities: [prefill],
                      context_window: 25 }
                  - { alias: smallwin, provider: anth, model: m-text, priority: 3, capabilities: [prefill] }
                  - { alias: ctxres, provider: a, model: m-text, priority: 1, capabilities: [prefill],
                      context_window: 200000 }
                  - { alias: ctxres, provider: b, model: m-text, priority: 2, capabilities: [prefill] }
                groups:
                  resume: { strategy: priority }
                  think: { strategy: priority }
                  refuse: { strategy: priority }
                  plain: { strategy: priority }
                  nores: { strategy: priority, resume_mid_stream: false }
                  bill: { strategy: priority }
                  tools: { strategy: priority }
                  norestools: { strategy: priority, resume_mid_stream: false }
                  noresumetools: { strategy: priority, max_resumes: 0 }
                  heldtools: { strategy: priority, stall_floor: 30s }
                  json: { strategy: priority }
                  prefixed: { strategy: priority }
                  trailing: { strategy: priority }
                  capped: { strategy: priority }
                  smallwin: { strategy: priority, hedging: false }
                  ctxres: { strategy: priority, hedging: false }
            """;

    static GatewayHarness gw;

    @BeforeAll
    static void start() {
        ModelScript text = ModelScript.defaults().withLength(LENGTH).withLatency(ModelScript.Latency.of(5, 2000));
        ModelScript think = text.withReasoning(new ModelScript.Reasoning(REASONING, 0, 0));
        ModelScript noPrefill = text.withCapabilities(ModelScript.Capabilities.DEFAULT.withContinuation(Set.of()));
        gw = GatewayHarness.start(YAML, Map.of(
                "a", SimConfig.of(SEED).withModel("m-text", text).withModel("m-think", think),
                "b", SimConfig.of(SEED).withModel("m-text", text).withModel("m-think", think),
                "plain", SimConfig.of(SEED).withModel("m-text", noPrefill),
                "refuser", SimConfig.of(SEED).withModel("m-text", noPrefill),
                // each takes its own dialect's prefill only, and refuses any other with a 400
                "pfx", SimConfig.of(SEED).withModel("m-text", only(text, ModelScript.Continuation.PREFIX)),
                "anth", SimConfig.of(SEED).withModel("m-text",
                        only(text, ModelScript.Continuation.TRAILING_ASSISTANT))));
        RestAssured.baseURI = gw.baseUrl();
    }

    static ModelScript only(ModelScript script, ModelScript.Continuation dialect) {
        return script.withCapabilities(ModelScript.Capabilities.DEFAULT.withContinuation(Set.of(dialect)));
    }

    /** Each test breaks route a on purpose: let it start every test healthy (the breaker is not under test). */
    @BeforeEach
    void healthy() {
        for (String alias : List.of("resume", "think", "refuse", "plain", "nores", "bill", "tools", "norestools",
                "noresumetools", "heldtools", "json", "prefixed", "trailing", "capped", "smallwin", "ctxres")) {
            for (String p : List.of("a", "b", "plain", "refuser", "pfx", "anth")) {
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

    static String expected(String prompt) {
        return SimText.expected(SEED, prompt, LENGTH);
    }

    static String lastBody(String sim, String model) {
        List<SimStats.RecordedRequest> recent = gw.sim(sim).stats(model).recent();
        return recent.get(recent.size() - 1).body();
    }

    static void assertOneResponse(String out) {
        Set<String> ids = new HashSet<>();
        for (JsonNode e : Sse.events(out)) {
            assertFalse(e.has("error"), "no error event: " + e);
            ids.add(e.path("id").asText());
        }
        assertEquals(1, ids.size(), "one id across the seam");
        assertTrue(Sse.endsWithDone(out));
    }

    static boolean trailHas(String out, String kind, String outcome) {
        for (JsonNode a : Sse.trail(out)) {
            if (a.path("kind").asText().equals(kind) && a.path("outcome").asText().equals(outcome)) {
                return true;
            }
        }
        return false;
    }

    @Test
    void killedBeforeTheFirstTokenFailsOverInvisibly() {
        gw.sim("a").enqueue("m-text", Fault.dropAfter(0));
        String out = stream("resume", "cut before anything", "");
        assertEquals(expected("cut before anything"), Sse.content(out));
        assertOneResponse(out);
        assertEquals("transport_reset", Sse.trail(out).get(0).path("error").asText());
    }

    @Test
    void killedAfterOneTokenResumesByteExactWithTheVllmPrefill() {
        double resumes = gw.metric("hedgerow_resumes");
        gw.sim("a").enqueue("m-text", Fault.dropAfter(1));
        String out = stream("resume", "one token then gone", "");
        assertEquals(expected("one token then gone"), Sse.content(out));
        assertOneResponse(out);
        assertTrue(trailHas(out, "resume", "success"), Sse.trail(out).toString());
        String cont = lastBody("b", "m-text");
        assertTrue(cont.contains("\"continue_final_message\":true"), cont);
        assertTrue(cont.contains("\"add_generation_prompt\":false"), cont);
        assertEquals(resumes + 1, gw.metric("hedgerow_resumes"));
    }

    /**
     * Breaks route a of {@code alias} after five tokens and checks the stream was resumed byte-exact on {@code sim}
     * at its first try (its simulator refused nothing); returns the continuation request it got, whose last message
     * is the partial answer.
     */
    static JsonNode resumedAtTheFirstTry(String alias, String sim, String prompt) throws Exception {
        gw.sim("a").enqueue("m-text", Fault.dropAfter(5));
        String out = stream(alias, prompt, "");
        assertEquals(expected(prompt), Sse.content(out));
        assertOneResponse(out);
        assertTrue(trailHas(out, "resume", "success"), Sse.trail(out).toString());
        assertEquals(0, gw.sim(sim).stats("m-text").rejected());
        JsonNode cont = Json.parse(lastBody(sim, "m-text"));
        JsonNode last = cont.path("messages").get(cont.path("messages").size() - 1);
        assertEquals("assistant", last.path("role").asText(), cont.toString());
        return cont;
    }

    /**
     * A provider of dialect {@code prefix} (DeepSeek, Mistral) is asked to continue with {@code "prefix": true} on the
     * trailing assistant message, and nothing else: its simulator refuses any other prefill with a 400, so the resume
     * succeeding at its first try, byte-exact, shows the dialect's own form was sent.
     */
    @Test
    void aPrefixDialectRouteResumesWithThePrefixFlag() throws Exception {
        JsonNode cont = resumedAtTheFirstTry("prefixed", "pfx", "continue with the prefix flag");
        JsonNode last = cont.path("messages").get(cont.path("messages").size() - 1);
        assertTrue(last.path("prefix").asBoolean(), cont.toString());
        assertFalse(cont.has("continue_final_message"), cont.toString());
    }

    /**
     * A provider of dialect {@code anthropic} continues a trailing assistant message as it stands: the resume sends
     * the partial answer as the last message with no flag and no instruction, and its simulator, which takes only that
     * form, continues it byte-exact at the first try.
     */
    @Test
    void anAnthropicDialectRouteResumesFromATrailingAssistantMessage() throws Exception {
        JsonNode cont = resumedAtTheFirstTry("trailing", "anth", "continue the trailing assistant");
        JsonNode last = cont.path("messages").get(cont.path("messages").size() - 1);
        assertFalse(last.has("prefix"), cont.toString());
        assertFalse(cont.has("continue_final_message"), cont.toString());
        assertFalse(cont.toString().contains("Continue exactly where"), cont.toString());
    }

    @Test
    void killedInsideAMultiByteCharacterResumesByteExact() {
        String prompt = "split a character";
        assertTrue(expected(prompt).chars().anyMatch(c -> c > 127), "the text has multi-byte characters");
        gw.sim("a").enqueue("m-text", Fault.dropMidCodePoint(2));
        String out = stream("resume", prompt, "");
        assertEquals(expected(prompt), Sse.content(out));
        assertOneResponse(out);
        assertTrue(trailHas(out, "resume", "success"));
    }

    @Test
    void killedDuringReasoningResumesTheReasoningThenTheContentByteExact() {
        String prompt = "think then answer";
        gw.sim("a").enqueue("m-think", Fault.dropInReasoning(3));
        String out = stream("think", prompt, "");
        assertEquals(String.join("", SimText.reasoningTokens(SEED, prompt, REASONING)), Sse.reasoning(out));
        assertEquals(expected(prompt), Sse.content(out));
        assertOneResponse(out);
        assertTrue(lastBody("b", "m-think").contains("\"reasoning_content\":"), lastBody("b", "m-think"));
    }

    @Test
    void killedAfterReasoningDoesNotRepeatTheReasoning() {
        String prompt = "thought already";
        gw.sim("a").enqueue("m-think", Fault.dropAfter(3));
        String out = stream("think", prompt, "");
        assertEquals(String.join("", SimText.reasoningTokens(SEED, prompt, REASONING)), Sse.reasoning(out));
        assertEquals(expected(prompt), Sse.content(out));
        assertOneResponse(out);
    }

    @Test
    void anEndOfStreamBeforeTheFinishResumes() {
        gw.sim("a").enqueue("m-text", new Fault.EofBeforeFinish(5));
        String out = stream("resume", "ends too soon", "");
        assertEquals(expected("ends too soon"), Sse.content(out));
        assertOneResponse(out);
        assertEquals("eof_before_finish", Sse.trail(out).get(0).path("error").asText());
    }

    @Test
    void anUpstreamErrorEventMidStreamResumes() {
        gw.sim("a").enqueue("m-text", new Fault.ErrorEvent(5, null, null));
        String out = stream("resume", "error event please", "");
        assertEquals(expected("error event please"), Sse.content(out));
        assertOneResponse(out);
        assertEquals("upstream_error_event", Sse.trail(out).get(0).path("error").asText());
    }

    @Test
    void aFallbackThatRefusesPrefillContinuesByInstructionAndTheClientNeverSeesThe400() {
        String prompt = "refuse the prefill";
        gw.sim("a").enqueue("m-text", Fault.dropAfter(4));
        String out = stream("refuse", prompt, "");
        assertEquals(expected(prompt), Sse.content(out));
        assertOneResponse(out);
        assertFalse(out.contains("prefill_not_supported"), out);
        SimStats refuser = gw.sim("refuser").stats("m-text");
        assertEquals(1, refuser.rejected());
        assertEquals(2, refuser.received());
        assertTrue(trailHas(out, "resume", "failed"));
        assertTrue(Sse.trail(out).toString().contains("prefill_refused"));
        assertTrue(lastBody("refuser", "m-text").contains("Continue exactly where"));
    }

    @Test
    void aRouteWithoutPrefillContinuesByInstructionWithTheOverlapTrimmed() {
        String prompt = "no prefill here";
        gw.sim("a").enqueue("m-text", Fault.dropAfter(6));
        String out = stream("plain", prompt, "");
        assertEquals(expected(prompt), Sse.content(out));
        assertOneResponse(out);
        assertEquals(0, gw.sim("plain").stats("m-text").rejected());
    }

    @Test
    void maxTokensIsReducedOnResumeSoTheAnswerEndsWhereItWouldHave() {
        String prompt = "cap the answer";
        gw.sim("a").enqueue("m-text", Fault.dropAfter(5));
        String out = stream("resume", prompt, ",\"max_tokens\":16");
        assertEquals(SimText.expected(SEED, prompt, 16), Sse.content(out));
        assertOneResponse(out);
        assertTrue(lastBody("b", "m-text").contains("\"max_tokens\":11"), lastBody("b", "m-text"));
        assertTrue(out.contains("\"finish_reason\":\"length\""));
    }

    @Test
    void withResumeOffTheStreamEndsWithAClearErrorEvent() {
        long before = gw.sim("b").stats("m-text").received();
        gw.sim("a").enqueue("m-text", Fault.dropAfter(3));
        String out = stream("nores", "no second chances", "");
        assertEquals(SimText.expected(SEED, "no second chances", 3), Sse.content(out));
        List<JsonNode> ev = Sse.events(out);
        assertEquals("stream_interrupted", ev.get(ev.size() - 1).path("error").path("code").asText(), out);
        assertTrue(Sse.endsWithDone(out));
        assertEquals(before, gw.sim("b").stats("m-text").received());
    }

    static final String TOOLS = ",\"tools\":[{\"type\":\"function\",\"function\":{\"name\":\"get_weather\","
            + "\"parameters\":{\"type\":\"object\",\"properties\":{\"city\":{\"type\":\"string\"}}}}}]";

    /** The streamed tool call as a client assembles it: "id name arguments", and how many chunks carried a call. */
    static List<String> toolCall(String out) {
        String id = "", name = "";
        StringBuilder args = new StringBuilder();
        int chunks = 0;
        for (JsonNode e : Sse.events(out)) {
            JsonNode calls = e.path("choices").path(0).path("delta").path("tool_calls");
            if (!calls.isArray() || calls.isEmpty()) {
                continue;
            }
            chunks++;
            JsonNode c = calls.get(0);
            id += c.path("id").asText("");
            name += c.path("function").path("name").asText("");
            args.append(c.path("function").path("arguments").asText(""));
        }
        return List.of(id + " " + name + " " + args, Integer.toString(chunks));
    }

    /**
     * A stream that breaks while a tool call's arguments arrive is not lost: the call's deltas are held until the
     * answer finishes, so nothing of it reached the client and another route answers the request afresh. The
     * client gets one whole call, the same as an unbroken stream's, and never an error event.
     */
    @Test
    void aStreamBrokenInsideAToolCallsArgumentsIsAnsweredWholeByAnotherRoute() throws Exception {
        String prompt = "weather in two cities";
        String clean = stream("tools", prompt, TOOLS);
        List<String> expected = toolCall(clean);
        assertTrue(expected.get(0).contains("get_weather {\""), expected.toString());
        assertTrue(Integer.parseInt(expected.get(1)) > 2, "the arguments come in several pieces: " + expected);

        gw.sim("a").enqueue("m-text", Fault.dropAfter(2));   // the call's head and one piece of its arguments
        String out = stream("tools", prompt, TOOLS);
        assertOneResponse(out);
        assertEquals(expected, toolCall(out));
        dev.hedgerow.api.Json.parse(toolCall(out).get(0).split(" ", 3)[2].getBytes());   // whole JSON arguments
        assertTrue(out.contains("\"finish_reason\":\"tool_calls\""), out);
        JsonNode trail = Sse.trail(out);
        assertEquals("transport_reset", trail.get(0).path("error").asText(), trail.toString());
        assertTrue(trailHas(out, "resume", "success"), trail.toString());
        // nothing was delivered but the role: the other route was asked the request itself, not a continuation
        assertFalse(lastBody("b", "m-text").contains("continue_final_message"), lastBody("b", "m-text"));
    }

    /**
     * With resume off (Trifrost: committed once a content frame reached the client) a tool call's deltas are not held
     * but sent as they come, and its first delta commits the stream as text does: a break inside the call ends the
     * stream with an error event after the pieces the client already has, and no other route is asked.
     */
    @Test
    void withResumeOffABreakInsideAToolCallEndsTheStreamWithAnErrorEvent() {
        String prompt = "weather without resume";
        List<String> whole = toolCall(stream("norestools", prompt, TOOLS));
        long before = gw.sim("b").stats("m-text").received();
        gw.sim("a").enqueue("m-text", Fault.dropAfter(2));   // the call's head and one piece of its arguments
        String out = stream("norestools", prompt, TOOLS);
        List<String> got = toolCall(out);
        assertEquals("2", got.get(1), "the head and the piece that came: " + out);
        assertTrue(whole.get(0).startsWith(got.get(0)) && !whole.get(0).equals(got.get(0)), got + " of " + whole);
        List<JsonNode> ev = Sse.events(out);
        assertEquals("stream_interrupted", ev.get(ev.size() - 1).path("error").path("code").asText(), out);
        assertTrue(Sse.endsWithDone(out));
        assertEquals(before, gw.sim("b").stats("m-text").received());
    }

    /** The chunk carries a piece of a tool call's arguments (not just the call's head, whose arguments are empty). */
    static boolean argumentPiece(JsonNode event) {
        JsonNode calls = event.path("choices").path(0).path("delta").path("tool_calls");
        return calls.isArray() && !calls.isEmpty()
                && !calls.get(0).path("function").path("arguments").asText("").isEmpty();
    }

    static SseReader open(String alias, String prompt) {
        SseReader in = SseReader.post(gw.baseUrl() + "/v1/chat/completions", "k-acme", "{\"model\":\"" + alias
                + "\",\"stream\":true" + TOOLS + ",\"messages\":[{\"role\":\"user\",\"content\":\"" + prompt
                + "\"}]}", Duration.ofSeconds(90));
        assertEquals(200, in.status());
        return in;
    }

    /**
     * Where nothing could resume a stream broken mid-call (resume off; no resumes allowed), a tool call's arguments
     * reach the client as the provider streams them, as OpenAI's do, not all at once when the answer ends. The
     * simulator holds the call's last argument piece at a gate until the client has seen an argument piece: a
     * gateway that held the call would show the client none (and the stream would stall instead).
     */
    @ParameterizedTest
    @ValueSource(strings = {"norestools", "noresumetools"})
    void whereNothingCouldResumeAToolCallsArgumentsReachTheClientAsTheyAreStreamed(String alias) {
        String prompt = "weather piece by piece";
        List<String> whole = toolCall(stream(alias, prompt, TOOLS));
        int chunks = Integer.parseInt(whole.get(1));
        assertTrue(chunks >= 3, "the call's head and at least two argument pieces: " + whole);
        long before = gw.sim("b").stats("m-text").received();
        String gate = alias + "-last-piece";
        gw.sim("a").enqueue("m-text", Fault.gate(chunks - 1, gate));   // the call's last piece waits at the gate
        try (SseReader in = open(alias, prompt)) {
            JsonNode piece = in.until(ResumeTest::argumentPiece);
            assertNotNull(piece, "no argument piece before the stream ended: " + in.text());
            // the simulator writes the pieces before the gate, then takes its place there: the client may read them
            // first. The last piece must still be held (waiting, never passed), not abandoned as a stalled stream is
            eventually(() -> gw.sim("a").gate(gate).waiting() == 1, "the last piece waits at the simulator");
            assertEquals(new Gates.State(1, 0, 0, false), gw.sim("a").gate(gate),
                    "the piece came while the last one waited at the simulator");
            gw.sim("a").openGate(gate);
            String out = in.rest();
            assertOneResponse(out);
            assertEquals(whole, toolCall(out), out);
            assertTrue(out.contains("\"finish_reason\":\"tool_calls\""), out);
            JsonNode trail = Sse.trail(out);
            assertEquals(1, trail.size(), trail.toString());
            assertEquals("success", trail.get(0).path("outcome").asText(), trail.toString());
        }
        assertEquals(before, gw.sim("b").stats("m-text").received());
    }

    /**
     * Where a stream broken mid-call could still be resumed, the call's deltas stay held (see
     * {@link #aStreamBrokenInsideAToolCallsArgumentsIsAnsweredWholeByAnotherRoute}): the simulator waits at a gate
     * before the call's last piece and goes on by itself, and the client's first tool-call delta comes only after
     * the simulator went past it, with the rest of the call.
     */
    @Test
    void whereAResumeIsPossibleAToolCallIsHeldUntilTheAnswerFinishes() {
        String prompt = "weather held whole";
        List<String> whole = toolCall(stream("heldtools", prompt, TOOLS));
        int chunks = Integer.parseInt(whole.get(1));
        String gate = "held-last-piece";
        gw.sim("a").enqueue("m-text", Fault.gate(chunks - 1, gate, 1000));
        try (SseReader in = open("heldtools", prompt)) {
            JsonNode first = in.until(e -> e.path("choices").path(0).path("delta").has("tool_calls"));
            assertNotNull(first, in.text());
            assertEquals(new Gates.State(0, 1, 1, false), gw.sim("a").gate(gate),
                    "no tool-call delta reached the client while the simulator waited before the last piece");
            String out = in.rest();
            assertOneResponse(out);
            assertEquals(whole, toolCall(out), out);
            assertEquals(1, Sse.trail(out).size(), Sse.trail(out).toString());
        }
    }

    /**
     * A JSON-mode stream broken mid-object is resumed into the same valid JSON an unbroken stream gives: the
     * continuation is asked without the JSON mode, whose grammar would open a second object after the half delivered
     * (the simulator's JSON mode does, as a grammar-constrained server; found by hunt27).
     */
    @Test
    void aJsonModeStreamBrokenMidObjectResumesIntoTheSameValidJson() throws Exception {
        String prompt = "json then gone";
        String mode = ",\"response_format\":{\"type\":\"json_object\"}";
        String clean = Sse.content(stream("json", prompt, mode));
        assertTrue(clean.startsWith("{\"text\":\"") && clean.endsWith("\"}"), clean);
        gw.sim("a").enqueue("m-text", Fault.dropAfter(5));
        String out = stream("json", prompt, mode);
        assertOneResponse(out);
        assertTrue(trailHas(out, "resume", "success"), Sse.trail(out).toString());
        assertEquals(clean, Sse.content(out));
        dev.hedgerow.api.Json.parse(Sse.content(out).getBytes(java.nio.charset.StandardCharsets.UTF_8));
        assertFalse(lastBody("b", "m-text").contains("\"response_format\""), lastBody("b", "m-text"));
    }


    /**
     * A resume goes only to a route whose declared context window takes what it sends, the prompt and the text so
     * far: b declares 25 tokens, which the prompt alone fits (it was a candidate) but not with 20 tokens delivered;
     * the resume passed over it to anth. It went to b, whose model would have truncated or refused the prompt
     * (found by hunt27).
     */
    @Test
    void aResumeSkipsARouteWhoseContextWindowCannotTakeTheTextSoFar() {
        long bBefore = gw.sim("b").stats("m-text").received();
        gw.sim("a").enqueue("m-text", Fault.dropAfter(20));
        String out = stream("smallwin", "window too small", "");
        assertEquals(expected("window too small"), Sse.content(out));
        assertOneResponse(out);
        assertEquals(bBefore, gw.sim("b").stats("m-text").received(), "b's window is too small for the resume");
        assertEquals("smallwin-anth", Sse.trail(out).get(1).path("route").asText(), Sse.trail(out).toString());
    }

    /**
     * A resume refused as too long by its route (b: a model whose real window is smaller than declared) is not sent
     * there again: the route that broke the stream, of a larger window, stays the last resort. The refuser became the
     * last resort, and every resume left went to it (found by hunt27).
     */
    @Test
    void aResumeRefusedAsTooLongGoesBackToTheRouteThatBrokeNotToTheRefuser() {
        gw.sim("a").enqueue("m-text", Fault.dropAfter(5));
        for (int i = 0; i < 3; i++) {
            gw.sim("b").enqueue("m-text", Fault.contextLengthExceeded());
        }
        String out = stream("ctxres", "refused as too long", "");
        assertEquals(expected("refused as too long"), Sse.content(out), Sse.trail(out).toString());
        assertOneResponse(out);
        List<String> routes = new java.util.ArrayList<>();
        Sse.trail(out).forEach(t -> routes.add(t.path("route").asText() + ":" + t.path("outcome").asText()));
        assertEquals(List.of("ctxres-a:failed", "ctxres-b:failed", "ctxres-a:success"), routes);
        gw.sim("b").clearFaults();   // the two refusals left
    }

    @Test
    void aResumedStreamIsBilledOnce() {
        gw.sim("a").enqueue("m-text", Fault.dropAfter(7));
        String out = stream("bill", "bill the resume once", ",\"stream_options\":{\"include_usage\":true}");
        List<JsonNode> ev = Sse.events(out);
        JsonNode usage = ev.get(ev.size() - 1).path("usage");
        assertTrue(usage.path("completion_tokens").asInt() > 0, usage.toString());
        eventually(() -> gw.ledger("acme").containsKey("bill"), "the resumed stream is in the ledger");
        LedgerEntry ledger = gw.ledger("acme").get("bill");
        assertEquals(1, ledger.requests());
        assertEquals(usage.path("prompt_tokens").asLong(), ledger.usage().promptTokens());
        assertEquals(usage.path("completion_tokens").asLong(), ledger.usage().completionTokens());
    }

    /**
     * A second resume after an instruction resume still ends the answer at the client's max_tokens. Fails today: the
     * overlap trimmer releases its held text as one delta, so the transcript undercounts the tokens delivered and the
     * next resume asks for (and relays) more than was left.
     */
    @Test
    void maxTokensHoldsAcrossASecondResumeAfterAnInstructionResume() {
        String prompt = "cap the answer twice";
        gw.sim("a").enqueue("m-text", Fault.dropAfter(3));
        gw.sim("plain").enqueue("m-text", new Fault.ErrorEvent(14, "boom", "server_error"));
        String out = stream("capped", prompt, ",\"max_tokens\":20");
        assertOneResponse(out);
        assertEquals(2, Sse.trail(out).size() - 1, "two resumes: " + Sse.trail(out));
        assertEquals(SimText.expected(SEED, prompt, 20), Sse.content(out));
    }

    /**
     * A request that ends with the client's own assistant prefill is resumed as that same message continued, so the
     * client sees the same text as an unbroken stream. Fails today: the resume appends a second assistant message.
     */
    @Test
    void aClientsOwnPrefillIsContinuedAcrossAResumeWithoutASeam() {
        String prompt = "prefilled by the client";
        String first = expected(prompt).split(" ")[0];
        String body = "{\"model\":\"resume\",\"stream\":true,\"messages\":[{\"role\":\"user\",\"content\":\""
                + prompt + "\"},{\"role\":\"assistant\",\"content\":\"" + first + "\"}]}";
        String clean = given().auth().oauth2("k-acme").contentType("application/json").body(body)
                .post("/v1/chat/completions").then().statusCode(200).extract().asString();
        gw.sim("a").enqueue("m-text", Fault.dropAfter(4));
        String out = given().auth().oauth2("k-acme").contentType("application/json").body(body)
                .post("/v1/chat/completions").then().statusCode(200).extract().asString();
        assertOneResponse(out);
        assertTrue(trailHas(out, "resume", "success"), Sse.trail(out).toString());
        assertEquals(Sse.content(clean), Sse.content(out));
    }

    /**
     * The same by instruction (a route without prefill): the model is shown the client's prefill and the delivered
     * text as its own, and re-emits the end of that; the overlap is trimmed against both. Trimmed against the
     * delivered text alone, a re-emission reaching back into the client's prefill went to the client twice (found by
     * hunt4: "bright crème the" then " ofcrème the of crème").
     */
    @Test
    void aClientsOwnPrefillIsContinuedByInstructionWithoutARepeat() {
        String prompt = "prefilled, then instructed";
        String[] words = expected(prompt).split(" ");
        String first = words[0] + " " + words[1] + " " + words[2];
        String body = "{\"model\":\"plain\",\"stream\":true,\"messages\":[{\"role\":\"user\",\"content\":\""
                + prompt + "\"},{\"role\":\"assistant\",\"content\":\"" + first + "\"}]}";
        String clean = given().auth().oauth2("k-acme").contentType("application/json").body(body)
                .post("/v1/chat/completions").then().statusCode(200).extract().asString();
        // one break (a then cools down, and plain, which takes no prefill, refuses the client's trailing message)
        gw.sim("a").enqueue("m-text", Fault.dropAfter(2));
        String out = given().auth().oauth2("k-acme").contentType("application/json").body(body)
                .post("/v1/chat/completions").then().statusCode(200).extract().asString();
        assertOneResponse(out);
        assertTrue(trailHas(out, "resume", "success"), Sse.trail(out).toString());
        assertTrue(lastBody("plain", "m-text").contains("Continue exactly where"), "by instruction");
        assertEquals(Sse.content(clean), Sse.content(out));
    }

    /**
     * A resumed stream that ends in a tool call bills the call's tokens. Fails today: after a resume the bill counts
     * only the transcript's text, and a tool call's arguments are not in it, so the client and the ledger see 0.
     */
    @Test
    void aResumedToolCallIsBilledItsCompletionTokens() {
        gw.sim("a").enqueue("m-text", Fault.dropAfter(2));
        String out = stream("tools", "bill the call", TOOLS + ",\"stream_options\":{\"include_usage\":true}");
        assertOneResponse(out);
        assertTrue(trailHas(out, "resume", "success"), Sse.trail(out).toString());
        List<JsonNode> ev = Sse.events(out);
        JsonNode usage = ev.get(ev.size() - 1).path("usage");
        assertTrue(usage.path("completion_tokens").asInt() > 0, usage.toString());
    }
}
