package dev.hedgerow.function.gateway;

import com.fasterxml.jackson.databind.JsonNode;
import dev.hedgerow.routing.LearnedModels;
import dev.hedgerow.routing.TokenCounter;
import dev.hedgerow.routing.TtftPredictor;
import dev.hedgerow.sim.Fault;
import dev.hedgerow.sim.ModelScript;
import dev.hedgerow.sim.SimConfig;
import dev.hedgerow.sim.SimServer;
import dev.hedgerow.sim.SimText;
import dev.hedgerow.state.LedgerEntry;
import dev.hedgerow.testsupport.GatewayHarness;
import dev.hedgerow.testsupport.RedisServer;
import dev.hedgerow.testsupport.RedisStores;
import dev.hedgerow.testsupport.Sse;
import dev.hedgerow.testsupport.SseReader;
import io.restassured.response.Response;
import io.vertx.core.Vertx;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

import java.time.Duration;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;

import static dev.hedgerow.testsupport.Eventually.eventually;
import static io.restassured.RestAssured.given;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Several choices ({@code n > 1}) end to end over HTTP on a real Redis, the simulators upstream (choice i of a
 * simulator is the text of its seed + i): a stream carries every choice whole and byte-exact with its index under
 * one id, the usage chunk counts them all, a failure before the first content fails over unseen, a break or a
 * truncation after it ends the stream with its error event and is never resumed, a hedge race has one winner whose
 * choices are all the client gets, and a whole answer holds every choice.
 */
class SeveralChoicesTest {
    static final long SEED = 31;
    /** The hedge route's simulator writes other texts, so a mix of two routes' choices would show. */
    static final long OTHER_SEED = 977;
    static final int LENGTH = 12;
    static final String YAML = """
            orgs:
              - id: acme
                keys: [{ name: app, key: "k-acme" }]
                providers:
                  - { id: a, base_url: "${SIM_A_URL}", dialect: vllm }
                  - { id: b, base_url: "${SIM_B_URL}", dialect: vllm }
                  - { id: quiet, base_url: "${SIM_QUIET_URL}" }
                  - { id: other, base_url: "${SIM_OTHER_URL}" }
                routes:
                  - { alias: multi, provider: a, model: m-multi, priority: 1, capabilities: [prefill] }
                  - { alias: multi, provider: b, model: m-multi, priority: 2, capabilities: [prefill] }
                  - { alias: usage, provider: a, model: m-usage, priority: 1 }
                  - { alias: counted, provider: quiet, model: m-counted }
                  - { alias: wholecounted, provider: quiet, model: m-counted }
                  - { alias: countedtools, provider: quiet, model: m-counted, capabilities: [tools] }
                  - { alias: stalled, provider: a, model: m-stalled, priority: 1, capabilities: [prefill] }
                  - { alias: stalled, provider: b, model: m-stalled, priority: 2, capabilities: [prefill] }
                  - { alias: tools, provider: a, model: m-tools, priority: 1, capabilities: [prefill, tools] }
                  - { alias: tools, provider: b, model: m-tools, priority: 2, capabilities: [prefill, tools] }
                  - { alias: race, provider: a, model: m-race, priority: 1 }
                  - { alias: race, provider: other, model: m-race, priority: 2 }
                groups:
                  multi: { strategy: priority, hedging: false }
                  usage: { strategy: priority, hedging: false }
                  counted: { strategy: priority, hedging: false }
                  wholecounted: { strategy: priority, hedging: false }
                  countedtools: { strategy: priority, hedging: false }
                  stalled: { strategy: priority, hedging: false, read_timeout: 1s, stall_floor: 100ms }
                  tools: { strategy: priority, hedging: false, stall_floor: 30s }
                  race: { strategy: priority, first_token_floor: 200ms }
            """;

    static RedisServer redis;
    static Vertx vertx;
    static Map<String, SimServer> sims;
    static RedisStores.Opened store;
    static GatewayHarness gw;

    @BeforeAll
    static void start() {
        redis = RedisServer.start();
        vertx = Vertx.vertx();
        ModelScript text = ModelScript.defaults().withLength(LENGTH).withLatency(ModelScript.Latency.of(5, 2000));
        ModelScript noUsage = text.withCapabilities(ModelScript.Capabilities.DEFAULT
                .withUsage(ModelScript.UsageMode.NONE));
        SimConfig ab = SimConfig.of(SEED);
        for (String m : List.of("m-multi", "m-usage", "m-stalled", "m-race", "m-tools")) {
            ab = ab.withModel(m, text);
        }
        sims = GatewayHarness.startSims(vertx, Map.of("a", ab, "b", ab,
                "quiet", SimConfig.of(SEED).withModel("m-counted", noUsage),
                "other", SimConfig.of(OTHER_SEED).withModel("m-race", text)));
        store = RedisStores.open(vertx, redis.url());
        gw = GatewayHarness.start(vertx, YAML, sims, store.store());
        // the race's first route has answered in ~100 ms so far: its hedge window is the 200 ms floor
        TtftPredictor p = TtftPredictor.fresh(TtftPredictor.Prior.defaults());
        for (int i = 0; i < 40; i++) {
            p = p.update(5 + i, 100);
        }
        gw.core().store().putRouteBlob("acme/race-a", LearnedModels.TTFT, p.encode(), null).await()
                .atMost(Duration.ofSeconds(5));
    }

    /** Tests break route a on purpose: each starts with every route healthy (the breaker is not under test). */
    @BeforeEach
    void healthy() {
        for (String route : List.of("multi-a", "multi-b", "stalled-a", "stalled-b", "race-a", "race-other", "tools-a",
                "tools-b")) {
            gw.core().store().resetHealth("acme/" + route).await().atMost(Duration.ofSeconds(5));
        }
    }

    @AfterAll
    static void stop() {
        gw.close();
        store.close();
        sims.values().forEach(SimServer::close);
        vertx.close().toCompletionStage().toCompletableFuture().join();
        redis.close();
    }

    static String body(String alias, String prompt, boolean stream, String extra) {
        return "{\"model\":\"" + alias + "\",\"stream\":" + stream + extra
                + ",\"messages\":[{\"role\":\"user\",\"content\":\"" + prompt + "\"}]}";
    }

    static Response post(String alias, String prompt, boolean stream, String extra) {
        return given().baseUri(gw.baseUrl()).auth().oauth2("k-acme").contentType("application/json")
                .body(body(alias, prompt, stream, extra)).post("/v1/chat/completions");
    }

    static String stream(String alias, String prompt, String extra) {
        Response r = post(alias, prompt, true, extra);
        assertEquals(200, r.statusCode(), r.asString());
        return r.asString();
    }

    /** The text of choice {@code index} of a simulator seeded {@code seed}. */
    static String expected(long seed, String prompt, int index, int tokens) {
        return SimText.expected(seed + index, prompt, tokens);
    }

    /** Each choice's content as a client assembles it, by index. */
    static Map<Integer, String> texts(String out) {
        Map<Integer, String> texts = new TreeMap<>();
        for (JsonNode e : Sse.events(out)) {
            for (JsonNode c : e.path("choices")) {
                texts.merge(c.path("index").asInt(), c.path("delta").path("content").asText(""), String::concat);
            }
        }
        return texts;
    }

    /** Each choice's finish reasons, by index, in the order they came. */
    static Map<Integer, List<String>> finishes(String out) {
        Map<Integer, List<String>> finishes = new TreeMap<>();
        for (JsonNode e : Sse.events(out)) {
            for (JsonNode c : e.path("choices")) {
                if (c.hasNonNull("finish_reason")) {
                    finishes.computeIfAbsent(c.path("index").asInt(), i -> new ArrayList<>())
                            .add(c.get("finish_reason").asText());
                }
            }
        }
        return finishes;
    }

    /** The ids and providers the stream's chunks carry. */
    static Set<String> field(String out, String name) {
        Set<String> values = new HashSet<>();
        for (JsonNode e : Sse.events(out)) {
            if (!e.has("error")) {
                values.add(e.path(name).asText());
            }
        }
        return values;
    }

    static JsonNode last(String out) {
        List<JsonNode> ev = Sse.events(out);
        return ev.get(ev.size() - 1);
    }

    /** The stream's attempt trail as "route:outcome[:error]" strings. */
    static List<String> trail(String out) {
        List<String> t = new ArrayList<>();
        for (JsonNode a : Sse.trail(out)) {
            t.add(a.path("route").asText() + ":" + a.path("outcome").asText()
                    + (a.path("error").isTextual() ? ":" + a.path("error").asText() : ""));
        }
        return t;
    }

    @Test
    void twoChoicesStreamWholeAndByteExactWithTheirIndicesUnderOneId() {
        String prompt = "two at once";
        String out = stream("multi", prompt, ",\"n\":2");
        assertEquals(Map.of(0, expected(SEED, prompt, 0, LENGTH), 1, expected(SEED, prompt, 1, LENGTH)), texts(out),
                out);
        assertEquals(Map.of(0, List.of("stop"), 1, List.of("stop")), finishes(out), out);
        assertEquals(1, field(out, "id").size(), "one id: " + out);
        assertEquals(Set.of("a"), field(out, "provider"), out);
        assertEquals(Set.of("m-multi"), field(out, "model"), out);
        assertTrue(Sse.endsWithDone(out), out);
        assertTrue(Sse.events(out).stream().noneMatch(e -> e.has("error")), out);
        // each choice's role once; the closing chunk carries the trail and a choice (the last finish), not nothing
        for (int i = 0; i < 2; i++) {
            int index = i;
            assertEquals(1, Sse.events(out).stream().flatMap(e -> java.util.stream.StreamSupport.stream(
                    e.path("choices").spliterator(), false)).filter(c -> c.path("index").asInt() == index
                    && c.path("delta").has("role")).count(), out);
        }
        JsonNode closing = last(out);
        assertTrue(closing.has("attempt_trail"), closing.toString());
        assertFalse(closing.path("choices").isEmpty(), closing.toString());
        assertEquals(List.of("multi-a:success"), trail(out));
    }

    @Test
    void includeUsageGivesOneUsageChunkCoveringEveryChoiceBilledOnce() {
        String out = stream("usage", "count us", ",\"n\":2,\"stream_options\":{\"include_usage\":true}");
        List<JsonNode> usages = Sse.events(out).stream().filter(e -> e.hasNonNull("usage")).toList();
        assertEquals(1, usages.size(), out);
        JsonNode u = usages.get(0);
        assertEquals(u, last(out), "the usage chunk is the last: " + out);
        assertTrue(u.path("choices").isArray() && u.path("choices").isEmpty(), u.toString());
        assertEquals(2 * LENGTH, u.path("usage").path("completion_tokens").asInt(), u.toString());
        long prompt = u.path("usage").path("prompt_tokens").asLong();
        assertTrue(prompt > 0, u.toString());
        eventually(() -> gw.ledger("acme").containsKey("usage"), "the stream is in the ledger");
        LedgerEntry billed = gw.ledger("acme").get("usage");
        assertEquals(1, billed.requests(), billed.toString());
        assertEquals(prompt, billed.usage().promptTokens(), billed.toString());
        assertEquals(2 * LENGTH, billed.usage().completionTokens(), billed.toString());
    }

    /** A provider that sends no usage: each choice's text is counted as one choice's would be, and summed. */
    @Test
    void withoutTheProvidersUsageEachChoiceIsCountedAndSummed() {
        String prompt = "count them yourself";
        String out = stream("counted", prompt, ",\"n\":3,\"stream_options\":{\"include_usage\":true}");
        TokenCounter tokens = TokenCounter.shared();
        int sum = 0;
        for (int i = 0; i < 3; i++) {
            assertEquals(expected(SEED, prompt, i, LENGTH), texts(out).get(i), out);
            sum += tokens.countText(expected(SEED, prompt, i, LENGTH));
        }
        assertEquals(sum, last(out).path("usage").path("completion_tokens").asInt(), last(out).toString());
        eventually(() -> gw.ledger("acme").containsKey("counted"), "the stream is in the ledger");
        assertEquals(sum, gw.ledger("acme").get("counted").usage().completionTokens());
    }

    @Test
    void aFailureBeforeTheFirstContentFailsOverUnseen() {
        String prompt = "fail over first";
        gw.sim("a").enqueue("m-multi", Fault.dropAfter(0));   // both role chunks, then a reset
        String out = stream("multi", prompt, ",\"n\":2");
        assertEquals(Map.of(0, expected(SEED, prompt, 0, LENGTH), 1, expected(SEED, prompt, 1, LENGTH)), texts(out),
                out);
        assertEquals(Map.of(0, List.of("stop"), 1, List.of("stop")), finishes(out), out);
        assertEquals(Set.of("b"), field(out, "provider"), "nothing of route a reached the client: " + out);
        assertEquals(1, field(out, "id").size(), out);
        assertTrue(Sse.events(out).stream().noneMatch(e -> e.has("error")), out);
        assertEquals(List.of("multi-a:failed:transport_reset", "multi-b:success"), trail(out));
    }

    @Test
    void aBreakAfterTheFirstContentEndsWithTheErrorEventAndIsNotResumed() {
        String prompt = "no resume for two";
        long before = gw.sim("b").stats("m-multi").received();
        gw.sim("a").enqueue("m-multi", Fault.dropAfter(3));   // choice 0's first two tokens, choice 1's first
        String out = stream("multi", prompt, ",\"n\":2");
        assertEquals(Map.of(0, expected(SEED, prompt, 0, 2), 1, expected(SEED, prompt, 1, 1)), texts(out), out);
        JsonNode error = last(out).path("error");
        assertEquals("stream_interrupted", error.path("code").asText(), out);
        assertEquals("The upstream stream failed after content was sent (transport_reset).",
                error.path("message").asText(), out);
        assertTrue(Sse.endsWithDone(out), out);
        assertEquals(List.of("multi-a:failed:transport_reset"), trail(out));
        assertEquals(before, gw.sim("b").stats("m-multi").received(), "no resume was asked of route b");
    }

    /**
     * With max_tokens, the deltas of all choices together passing it is no sign that each choice is whole: a break
     * still ends the stream with the error event, not with a length finish (the transcript counts them together).
     */
    @Test
    void aBreakPastMaxTokensCountedOverAllChoicesStillEndsWithTheErrorEvent() {
        String prompt = "two capped, then cut";
        gw.sim("a").enqueue("m-multi", Fault.dropAfter(3));
        String out = stream("multi", prompt, ",\"n\":2,\"max_tokens\":2");
        assertEquals("stream_interrupted", last(out).path("error").path("code").asText(), out);
        assertTrue(Sse.endsWithDone(out), out);
    }

    /** The stream ends cleanly after every token, but one choice never finished: a truncation, not an answer. */
    @Test
    void aStreamEndingBeforeEveryChoiceFinishedEndsWithTheErrorEvent() {
        String prompt = "one left open";
        long before = gw.sim("b").stats("m-multi").received();
        // after all 2 x LENGTH tokens: choice 0's finish came right after its last token, choice 1's never comes
        gw.sim("a").enqueue("m-multi", new Fault.EofBeforeFinish(2 * LENGTH));
        String out = stream("multi", prompt, ",\"n\":2");
        assertEquals(Map.of(0, expected(SEED, prompt, 0, LENGTH), 1, expected(SEED, prompt, 1, LENGTH)), texts(out),
                out);
        assertEquals(Map.of(0, List.of("stop")), finishes(out), out);
        JsonNode error = last(out).path("error");
        assertEquals("stream_interrupted", error.path("code").asText(), out);
        assertEquals("The upstream stream failed after content was sent (eof_before_finish).",
                error.path("message").asText(), out);
        assertEquals(before, gw.sim("b").stats("m-multi").received(), "no resume was asked of route b");
    }

    /**
     * A provider that ignores {@code n} streams one choice, whole: that is its answer, relayed and ended cleanly (with
     * the usage chunk asked for), as its whole answer of one choice is, and its route is not charged. It was ended
     * with an error event after the complete choice and counted against the route, cooling it for every client
     * (found by hunt6).
     */
    @Test
    void aProviderThatIgnoresNStreamsOneWholeChoiceAndIsNotCharged() {
        String prompt = "n ignored";
        gw.sim("a").enqueue("m-multi", new Fault.IgnoreN());
        String out = stream("multi", prompt, ",\"n\":2,\"stream_options\":{\"include_usage\":true}");
        assertEquals(Map.of(0, expected(SEED, prompt, 0, LENGTH)), texts(out), out);
        assertEquals(Map.of(0, List.of("stop")), finishes(out), out);
        assertTrue(Sse.events(out).stream().noneMatch(e -> e.has("error")), out);
        assertTrue(Sse.endsWithDone(out), out);
        assertEquals(LENGTH, last(out).path("usage").path("completion_tokens").asInt(), out);
        assertEquals(List.of("multi-a:success"), trail(out));
        assertEquals(0, gw.core().store().snapshot(List.of("acme/multi-a"), Duration.ofMinutes(1))
                .await().atMost(Duration.ofSeconds(5)).get("acme/multi-a").fails(), "route a is not charged");
    }

    /** A stall after the first content is waited for as a stream nothing can resume (read_timeout), then ended. */
    @Test
    void aStallAfterTheFirstContentEndsWithTheErrorEventAndIsNotResumed() {
        String prompt = "stall with two";
        long before = gw.sim("b").stats("m-stalled").received();
        gw.sim("a").enqueue("m-stalled", Fault.stallForever(3));
        String out = stream("stalled", prompt, ",\"n\":2");
        assertEquals(Map.of(0, expected(SEED, prompt, 0, 2), 1, expected(SEED, prompt, 1, 1)), texts(out), out);
        JsonNode error = last(out).path("error");
        assertEquals("The upstream stream failed after content was sent (stall).", error.path("message").asText(),
                out);
        assertEquals(List.of("stalled-a:failed:stall"), trail(out));
        assertEquals(before, gw.sim("b").stats("m-stalled").received(), "no resume was asked of route b");
    }

    /**
     * The primary waits at a gate before its first content; the hedge (another seed: other texts) streams, and its
     * first content commits it: the primary is cancelled, and opening its gate afterwards adds nothing. The client
     * gets every choice of the hedge, none of the primary's.
     */
    @Test
    void aHedgeRaceWithTwoChoicesHasOneWinnerWhoseChoicesAloneReachTheClient() {
        String prompt = "race two choices";
        gw.sim("a").enqueue("m-race", Fault.gate(0, "race-primary"));
        gw.sim("other").enqueue("m-race", Fault.gate(1, "race-hedge"));
        try (SseReader in = SseReader.post(gw.baseUrl() + "/v1/chat/completions", "k-acme",
                body("race", prompt, true, ",\"n\":2"), Duration.ofSeconds(30))) {
            assertEquals(200, in.status());
            JsonNode first = in.until(e -> e.path("choices").path(0).path("delta").path("content").asText("")
                    .length() > 0);
            assertNotNull(first, in.text());
            eventually(() -> gw.sim("a").stats("m-race").cancelled() == 1, "the primary is cancelled");
            gw.sim("a").openGate("race-primary");
            gw.sim("other").openGate("race-hedge");
            String out = in.rest();
            assertEquals(Map.of(0, expected(OTHER_SEED, prompt, 0, LENGTH),
                    1, expected(OTHER_SEED, prompt, 1, LENGTH)), texts(out), out);
            assertEquals(Map.of(0, List.of("stop"), 1, List.of("stop")), finishes(out), out);
            assertEquals(Set.of("other"), field(out, "provider"), out);
            assertEquals(1, field(out, "id").size(), out);
            assertEquals(List.of("race-a:lost_race", "race-other:success"), trail(out));
        }
    }

    static final String TOOLS = ",\"n\":2,\"tools\":[{\"type\":\"function\",\"function\":{\"name\":\"get_weather\","
            + "\"parameters\":{\"type\":\"object\",\"properties\":{\"city\":{\"type\":\"string\"}}}}}]";

    /** Each choice's tool call as a client assembles it ("id name arguments"), by index. */
    static Map<Integer, String> toolCalls(String out) {
        Map<Integer, String> calls = new TreeMap<>();
        for (JsonNode e : Sse.events(out)) {
            for (JsonNode c : e.path("choices")) {
                for (JsonNode call : c.path("delta").path("tool_calls")) {
                    calls.merge(c.path("index").asInt(), call.path("id").asText("") + "|"
                            + call.path("function").path("name").asText("") + "|"
                            + call.path("function").path("arguments").asText(""), String::concat);
                }
            }
        }
        return calls;
    }

    /**
     * Tool calls of several choices from a provider that sends no usage: the gateway counts each choice's text and
     * every call's name and arguments the client received (as it does for one choice), and bills that once.
     */
    @Test
    void withoutTheProvidersUsageSeveralChoicesToolCallsAreCountedAndBilled() {
        String out = stream("countedtools", "weather, counted", TOOLS + ",\"stream_options\":{\"include_usage\":true}");
        assertEquals(Set.of(0, 1), toolCalls(out).keySet(), out);
        TokenCounter tokens = TokenCounter.shared();
        StringBuilder calls = new StringBuilder();
        for (JsonNode e : Sse.events(out)) {
            for (JsonNode c : e.path("choices")) {
                for (JsonNode call : c.path("delta").path("tool_calls")) {
                    calls.append(call.path("function").path("name").asText(""))
                            .append(call.path("function").path("arguments").asText(""));
                }
            }
        }
        int expected = tokens.countText(calls.toString());
        for (String text : texts(out).values()) {
            expected += text.isEmpty() ? 0 : tokens.countText(text);
        }
        assertTrue(tokens.countText(calls.toString()) > 0, out);
        assertEquals(expected, last(out).path("usage").path("completion_tokens").asInt(), last(out).toString());
        eventually(() -> gw.ledger("acme").containsKey("countedtools"), "the stream is in the ledger");
        assertEquals(expected, gw.ledger("acme").get("countedtools").usage().completionTokens());
    }

    /**
     * A stream of several choices is never resumed, so its tool calls are not held (a single choice's are, where a
     * resume could follow): the simulator waits at a gate after both calls' heads and the first argument piece, and
     * the client has a call's delta while it waits. The calls reach the client whole, each under its choice.
     */
    @Test
    void toolCallsOfSeveralChoicesReachTheClientAsTheyAreStreamed() {
        String prompt = "weather twice";
        String whole = stream("tools", prompt, TOOLS);
        Map<Integer, String> calls = toolCalls(whole);
        assertEquals(Set.of(0, 1), calls.keySet(), whole);
        assertEquals(Map.of(0, List.of("tool_calls"), 1, List.of("tool_calls")), finishes(whole), whole);
        String gate = "tools-after-three";
        gw.sim("a").enqueue("m-tools", Fault.gate(3, gate, 5000));
        try (SseReader in = SseReader.post(gw.baseUrl() + "/v1/chat/completions", "k-acme",
                body("tools", prompt, true, TOOLS), Duration.ofSeconds(30))) {
            assertEquals(200, in.status());
            JsonNode first = in.until(e -> e.path("choices").path(0).path("delta").has("tool_calls"));
            assertNotNull(first, in.text());
            eventually(() -> gw.sim("a").gate(gate).waiting() == 1 || gw.sim("a").gate(gate).passed() > 0,
                    "the simulator reached the gate");
            assertEquals(0, gw.sim("a").gate(gate).passed(), "a call's delta came while the simulator waited");
            gw.sim("a").openGate(gate);
            String out = in.rest();
            assertEquals(calls, toolCalls(out), out);
            assertEquals(Map.of(0, List.of("tool_calls"), 1, List.of("tool_calls")), finishes(out), out);
            assertEquals(List.of("tools-a:success"), trail(out));
        }
    }

    @Test
    void aWholeAnswerHoldsEveryChoice() {
        String prompt = "three whole";
        Response r = post("multi", prompt, false, ",\"n\":3");
        assertEquals(200, r.statusCode(), r.asString());
        JsonNode body = r.as(JsonNode.class);
        assertEquals(3, body.path("choices").size(), body.toString());
        for (int i = 0; i < 3; i++) {
            JsonNode c = body.path("choices").get(i);
            assertEquals(i, c.path("index").asInt());
            assertEquals(expected(SEED, prompt, i, LENGTH), c.path("message").path("content").asText());
            assertEquals("stop", c.path("finish_reason").asText());
        }
        assertEquals(3 * LENGTH, body.path("usage").path("completion_tokens").asInt(), body.toString());
        assertEquals("a", body.path("provider").asText());
    }

    /** A whole answer without the provider's usage: each choice counted and summed, billed once. */
    @Test
    void aWholeAnswerWithoutTheProvidersUsageCountsEveryChoice() {
        String prompt = "three whole counted";
        Response r = post("wholecounted", prompt, false, ",\"n\":3");
        assertEquals(200, r.statusCode(), r.asString());
        TokenCounter tokens = TokenCounter.shared();
        int sum = 0;
        for (int i = 0; i < 3; i++) {
            sum += tokens.countText(expected(SEED, prompt, i, LENGTH));
        }
        assertEquals(sum, r.jsonPath().getInt("usage.completion_tokens"), r.asString());
        eventually(() -> gw.ledger("acme").containsKey("wholecounted"), "the answer is in the ledger");
        LedgerEntry billed = gw.ledger("acme").get("wholecounted");
        assertEquals(1, billed.requests(), billed.toString());
        assertEquals(sum, billed.usage().completionTokens(), billed.toString());
    }
}
