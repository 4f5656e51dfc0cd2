package dev.hedgerow.function.gateway;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.hedgerow.testsupport.GatewayHarness;
import dev.hedgerow.testsupport.Sse;
import io.restassured.RestAssured;
import io.vertx.core.Vertx;
import io.vertx.core.http.HttpServer;
import io.vertx.core.http.HttpServerRequest;
import io.vertx.core.http.HttpServerResponse;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ConcurrentLinkedQueue;

import static io.restassured.RestAssured.given;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * The bytes a client receives across a resume seam, through an upstream written here that behaves as vLLM does where
 * the simulator does not: it honours {@code stop} on its own generated text (never the prompt or the prefill), may
 * hold back the last {@code len(stop)-1} characters while streaming (vLLM's stop buffer), counts every token against
 * {@code max_tokens}, and may put several tokens in one chunk. x and z resume by prefill (vllm), y by instruction.
 * Found by hunt19 and hunt20; each test failed before its fix.
 */
class SeamBytesTest {
    static final ObjectMapper M = new ObjectMapper();
    static Vertx vertx;
    static HttpServer server;
    static GatewayHarness gw;

    /** One scripted generation: the tokens of each chunk, where to break (chunks written before the reset, -1 none). */
    record Script(List<List<String>> chunks, int breakAfterChunks, boolean holdBack, List<Double> logprobs,
                  List<String> raw) {
        Script(List<List<String>> chunks, int breakAfterChunks, boolean holdBack) {
            this(chunks, breakAfterChunks, holdBack, null, null);
        }

        Script(List<List<String>> chunks, int breakAfterChunks, boolean holdBack, List<Double> logprobs) {
            this(chunks, breakAfterChunks, holdBack, logprobs, null);
        }

        /** Raw chunk JSON frames, sent as they are; reset after {@code breakAfter} of them (-1: [DONE] after all). */
        static Script raw(int breakAfter, String... frames) {
            return new Script(null, breakAfter, false, null, List.of(frames));
        }
    }

    static final Map<String, ConcurrentLinkedQueue<Script>> scripts = new ConcurrentHashMap<>();
    static final Map<String, ConcurrentLinkedQueue<JsonNode>> bodies = new ConcurrentHashMap<>();
    /** Whole (non-streamed) answers, sent as they are, before any script. */
    static final Map<String, ConcurrentLinkedQueue<String>> wholes = new ConcurrentHashMap<>();

    @BeforeAll
    static void start() {
        vertx = Vertx.vertx();
        server = vertx.createHttpServer().requestHandler(SeamBytesTest::handle).listen(0, "127.0.0.1")
                .toCompletionStage().toCompletableFuture().join();
        String base = "http://127.0.0.1:" + server.actualPort();
        String yaml = """
                orgs:
                  - id: acme
                    keys: [{ name: app, key: "k-acme" }]
                    providers:
                      - { id: x, base_url: "BASE/x/v1", dialect: vllm }
                      - { id: y, base_url: "BASE/y/v1", dialect: openai }
                      - { id: z, base_url: "BASE/z/v1", dialect: vllm }
                    routes:
                      - { alias: pref, provider: x, model: m, priority: 1, capabilities: [prefill, tools] }
                      - { alias: pref, provider: z, model: m, priority: 2, capabilities: [prefill, tools] }
                      - { alias: instr, provider: x, model: m, priority: 1, capabilities: [prefill] }
                      - { alias: instr, provider: y, model: m, priority: 2 }
                      - { alias: itool, provider: x, model: m, priority: 1, capabilities: [prefill, tools] }
                      - { alias: itool, provider: y, model: m, priority: 2, capabilities: [tools] }
                    groups:
                      pref: { strategy: priority }
                      instr: { strategy: priority }
                      itool: { strategy: priority }
                """.replace("BASE", base);
        gw = GatewayHarness.start(yaml, Map.of());
        RestAssured.baseURI = gw.baseUrl();
    }

    @BeforeEach
    void clean() {
        scripts.clear();
        bodies.clear();
        wholes.clear();
        for (String r : List.of("pref-x", "pref-z", "instr-x", "instr-y", "itool-x", "itool-y")) {
            gw.core().store().resetHealth("acme/" + r).await().atMost(java.time.Duration.ofSeconds(5));
        }
    }

    @AfterAll
    static void stop() {
        gw.close();
        vertx.close();
    }

    static void script(String provider, Script s) {
        scripts.computeIfAbsent(provider, k -> new ConcurrentLinkedQueue<>()).add(s);
    }

    static List<List<String>> oneEach(String... tokens) {
        List<List<String>> out = new ArrayList<>();
        for (String t : tokens) {
            out.add(List.of(t));
        }
        return out;
    }

    static void handle(HttpServerRequest req) {
        req.body().onSuccess(buf -> {
            try {
                JsonNode body = M.readTree(buf.toString());
                String provider = req.path().split("/")[1];
                bodies.computeIfAbsent(provider, k -> new ConcurrentLinkedQueue<>()).add(body);
                String whole = wholes.getOrDefault(provider, new ConcurrentLinkedQueue<>()).poll();
                if (whole != null) {
                    req.response().putHeader("content-type", "application/json").end(whole.replace('\'', '"'));
                    return;
                }
                Script s = scripts.getOrDefault(provider, new ConcurrentLinkedQueue<>()).poll();
                if (s == null) {
                    req.response().setStatusCode(503).putHeader("content-type", "application/json")
                            .end("{\"error\":{\"message\":\"no script\",\"type\":\"server_error\"}}");
                    return;
                }
                generate(req, body, s);
            } catch (Exception e) {
                req.response().setStatusCode(500).end(e.toString());
            }
        });
    }

    /** vLLM's generation loop, as far as the client sees it. */
    static void generate(HttpServerRequest req, JsonNode body, Script s) {
        if (s.raw() != null) {
            HttpServerResponse r = req.response().setChunked(true).putHeader("content-type", "text/event-stream");
            for (int i = 0; i < s.raw().size(); i++) {
                if (i == s.breakAfterChunks()) {
                    vertx.setTimer(20, id -> req.connection().close());
                    return;
                }
                r.write("data: " + s.raw().get(i).replace('\'', '"') + "\n\n");
            }
            r.end("data: [DONE]\n\n");
            return;
        }
        List<String> stops = new ArrayList<>();
        JsonNode st = body.get("stop");
        if (st != null && st.isTextual()) {
            stops.add(st.asText());
        } else if (st != null && st.isArray()) {
            st.forEach(n -> stops.add(n.asText()));
        }
        Integer max = body.hasNonNull("max_completion_tokens") ? Integer.valueOf(body.get("max_completion_tokens").asInt())
                : body.hasNonNull("max_tokens") ? Integer.valueOf(body.get("max_tokens").asInt()) : null;
        int hold = s.holdBack() && !stops.isEmpty() ? stops.stream().mapToInt(String::length).max().getAsInt() - 1 : 0;
        boolean streaming = body.path("stream").asBoolean(false);
        HttpServerResponse r = req.response();
        if (streaming) {
            r.setChunked(true).putHeader("content-type", "text/event-stream");
            r.write("data: " + chunk("", null, null, true) + "\n\n");
        }
        StringBuilder out = new StringBuilder();
        int sent = 0;
        int tokens = 0;
        int lp = 0;
        String finish = null;
        for (int c = 0; c < s.chunks().size() && finish == null; c++) {
            if (c == s.breakAfterChunks()) {
                vertx.setTimer(20, id -> req.connection().close());
                return;
            }
            int lpFrom = lp;
            for (String t : s.chunks().get(c)) {
                out.append(t);
                tokens++;
                lp++;
                int at = -1;
                for (String stop : stops) {
                    int i = out.indexOf(stop);
                    if (i >= 0 && (at < 0 || i < at)) {
                        at = i;
                    }
                }
                if (at >= 0) {
                    out.setLength(at);
                    finish = "stop";
                    break;
                }
                if (max != null && tokens >= max) {
                    finish = "length";
                    break;
                }
            }
            int upto = finish != null ? out.length() : Math.max(sent, out.length() - hold);
            if (streaming && upto > sent) {
                r.write("data: " + chunk(out.substring(sent, upto), s.logprobs() == null ? null
                        : s.logprobs().subList(lpFrom, lp), s.chunks().get(c), false) + "\n\n");
                sent = upto;
            }
        }
        if (finish == null) {
            finish = "stop";
        }
        if (!streaming) {
            ObjectNode whole = base().put("object", "chat.completion");
            whole.putArray("choices").addObject().put("index", 0).put("finish_reason", finish).putObject("message")
                    .put("role", "assistant").put("content", out.toString());
            whole.putObject("usage").put("prompt_tokens", 10).put("completion_tokens", tokens)
                    .put("total_tokens", 10 + tokens);
            r.putHeader("content-type", "application/json").end(whole.toString());
            return;
        }
        if (sent < out.length()) {
            r.write("data: " + chunk(out.substring(sent), null, null, false) + "\n\n");
        }
        ObjectNode fin = base();
        fin.putArray("choices").addObject().put("index", 0).put("finish_reason", finish).putObject("delta");
        r.write("data: " + fin + "\n\n");
        if (body.path("stream_options").path("include_usage").asBoolean(false)) {
            ObjectNode u = base();
            u.putArray("choices");
            u.putObject("usage").put("prompt_tokens", 10).put("completion_tokens", tokens)
                    .put("total_tokens", 10 + tokens);
            r.write("data: " + u + "\n\n");
        }
        r.end("data: [DONE]\n\n");
    }

    static ObjectNode base() {
        return M.createObjectNode().put("id", "up").put("object", "chat.completion.chunk").put("created", 1)
                .put("model", "m");
    }

    static String chunk(String text, List<Double> logprobs, List<String> tokens, boolean role) {
        ObjectNode c = base();
        ObjectNode ch = c.putArray("choices").addObject().put("index", 0);
        ObjectNode delta = ch.putObject("delta");
        if (role) {
            delta.put("role", "assistant");
        }
        delta.put("content", text);
        if (logprobs != null) {
            var arr = ch.putObject("logprobs").putArray("content");
            for (int i = 0; i < tokens.size(); i++) {
                ObjectNode entry = arr.addObject().put("token", tokens.get(i)).put("logprob", logprobs.get(i));
                var bytes = entry.putArray("bytes");
                for (byte b : tokens.get(i).getBytes(java.nio.charset.StandardCharsets.UTF_8)) {
                    bytes.add(b & 0xff);
                }
                entry.putArray("top_logprobs");
            }
        }
        ch.putNull("finish_reason");
        return c.toString();
    }

    static String stream(String alias, String extra) {
        return given().auth().oauth2("k-acme").contentType("application/json")
                .body("{\"model\":\"" + alias + "\",\"stream\":true" + extra
                        + ",\"messages\":[{\"role\":\"user\",\"content\":\"go\"}]}")
                .post("/v1/chat/completions").then().statusCode(200).extract().asString();
    }

    static void assertResumed(String out) {
        assertTrue(Sse.trail(out).toString().contains("\"kind\":\"resume\""), Sse.trail(out).toString());
    }

    // ---- stop sequences ----------------------------------------------------------------------------------------

    /**
     * A stop string straddles the seam: the first route delivered "... EN" and broke; the route that continues by
     * prefill writes "D and more text". vLLM checks stop strings against the text it generates, never the prefill,
     * so only the gateway can see "END" across the seam. The client asked never to see it.
     */
    @Test
    void prefillResumeStopStraddlingTheSeamIsNeverDelivered() {
        script("x", new Script(oneEach("Hello", " world", ",", " then", " EN", "D"), 5, false));
        script("z", new Script(oneEach("D", " and", " more", " text"), -1, true));
        String out = stream("pref", ",\"stop\":[\"END\"]");
        assertResumed(out);
        String content = Sse.content(out);
        assertFalse(content.contains("END"), "the stop text reached the client: " + content);
        assertFalse(content.contains("more text"), "text after the stop reached the client: " + content);
        assertEquals("stop", Sse.finishReason(out));
    }

    /**
     * A stop's beginning at the seam that the continuation does not complete, and a stop that never comes: every byte
     * is delivered, the provider's own finish kept (the seam's check takes nothing that is not a stop).
     */
    @Test
    void aStopBegunAtTheSeamButNotCompletedTakesNothing() {
        script("x", new Script(oneEach("Hello", " world", ",", " then", " EN", "D"), 5, false));
        script("z", new Script(oneEach("Gine", " room", " is", " hot", "."), -1, true));
        String out = stream("pref", ",\"stop\":[\"END\",\"\\n\\n\"]");
        assertResumed(out);
        assertEquals("Hello world, then ENGine room is hot.", Sse.content(out));
        assertEquals("stop", Sse.finishReason(out));
        clean(); // x failed: healthy again for the next
        script("x", new Script(oneEach("Hello", " world", ",", " then", " EN", "D"), 5, false));
        script("z", new Script(oneEach("D", " and", " more"), -1, true));
        out = stream("pref", ",\"stop\":\"NEVER\",\"max_tokens\":8");
        assertResumed(out);
        assertEquals("Hello world, then END and more", Sse.content(out));
        assertEquals("length", Sse.finishReason(out));
    }

    /** The same with the most common stop in practice, a blank line: "\n" delivered, the continuation begins "\n". */
    @Test
    void prefillResumeBlankLineStopAcrossTheSeam() {
        script("x", new Script(oneEach("Para", " one", ".", "\n", "\n"), 4, false));
        script("z", new Script(oneEach("\n", "Para", " two", "."), -1, true));
        String out = stream("pref", ",\"stop\":\"\\n\\n\"");
        assertResumed(out);
        String content = Sse.content(out);
        assertFalse(content.contains("\n\n"), "the stop text reached the client: " + M.valueToTree(content));
        assertFalse(content.contains("Para two"), "a second paragraph past the stop: " + M.valueToTree(content));
        assertEquals("stop", Sse.finishReason(out));
    }

    /**
     * Instruction resume: the first route delivered "... lazy dog EN" and broke. The continuing route re-emits the end
     * of what it was shown and goes on "D"; its own stop check now finds "END" inside its re-emitted overlap and cuts
     * its output there, so what it streams is " over the lazy dog " (vLLM holds back the "EN" while it may be a stop).
     * That is no longer a suffix of the delivered text, so the overlap trimmer releases it as new text.
     */
    @Test
    void instructionResumeWhoseOverlapEndsAtTheStopIsNotRepeated() {
        String delivered = "The quick brown fox jumps over the lazy dog EN";
        script("x", new Script(oneEach("The", " quick", " brown", " fox", " jumps", " over", " the", " lazy", " dog",
                " EN", "D"), 10, false));
        script("y", new Script(oneEach(" over", " the", " lazy", " dog", " EN", "D", " more"), -1, true));
        String out = stream("instr", ",\"stop\":[\"END\"]");
        assertResumed(out);
        String content = Sse.content(out);
        assertTrue(content.equals(delivered) || content.equals("The quick brown fox jumps over the lazy dog "),
                "duplicated text after the seam: " + content);
        assertEquals("stop", Sse.finishReason(out));
    }

    // ---- max_tokens with several tokens a chunk ------------------------------------------------------------------

    /** Each one token to the gateway's tokenizer (o200k) as to this upstream: the two count alike. */
    static final List<String> WORDS = List.of("one", " two", " three", " four", " five", " six", " seven", " eight",
            " nine", " ten", " eleven", " twelve", " thirteen", " fourteen", " fifteen", " sixteen", " seventeen",
            " eighteen", " nineteen", " twenty");

    static List<List<String>> pairs(List<String> words) {
        List<List<String>> out = new ArrayList<>();
        for (int i = 0; i < words.size(); i += 2) {
            out.add(words.subList(i, Math.min(words.size(), i + 2)));
        }
        return out;
    }

    /** Control: unbroken, the upstream (two tokens a chunk) ends at exactly max_tokens with length. */
    @Test
    void unbrokenStreamOfTwoTokensAChunkEndsAtMaxTokens() {
        script("x", new Script(pairs(WORDS), -1, false));
        String out = stream("pref", ",\"max_tokens\":10");
        assertEquals(String.join("", WORDS.subList(0, 10)), Sse.content(out));
        assertEquals("length", Sse.finishReason(out));
    }

    /**
     * An upstream that streams two tokens a chunk (vLLM with speculative decoding or a stream interval, SGLang's
     * stream_interval, Groq, ...) breaks after 3 chunks = 6 tokens under max_tokens 10; the prefill resume is asked for
     * 10 - 3 = 7 more, and the client gets 13 tokens where it asked for 10.
     */
    @Test
    void prefillResumeAfterMultiTokenChunksNeverExceedsMaxTokens() {
        script("x", new Script(pairs(WORDS), 3, false));
        script("z", new Script(pairs(WORDS.subList(6, WORDS.size())), -1, false));
        String out = stream("pref", ",\"max_tokens\":10,\"stream_options\":{\"include_usage\":true}");
        assertResumed(out);
        assertEquals(String.join("", WORDS.subList(0, 10)), Sse.content(out),
                "asked by the gateway for " + bodies.get("z").peek().path("max_tokens"));
        assertEquals("length", Sse.finishReason(out));
    }

    /**
     * Two resumes from routes that chunk differently: x streams one token a chunk and breaks after 10, z (the first
     * resume) three a chunk and breaks after 3 chunks (9 tokens), and z resumes again. Counted over the whole text,
     * x's one-token deltas hid z's three-token chunks (19 tokens in 13 deltas, under 1.5 a delta): the second resume
     * (z again, the last resort) was asked for 7 tokens where 1 was left, and the client got 26 for max_tokens 20
     * (found by hunt29-b). Each part is counted on its own now.
     */
    @Test
    void aSecondResumeCountsEachRoutesPartOnItsOwn() {
        script("x", new Script(oneEach(WORDS.toArray(String[]::new)), 10, false));
        List<List<String>> threes = new ArrayList<>();
        for (int i = 10; i < 19; i += 3) {
            threes.add(WORDS.subList(i, i + 3));
        }
        threes.add(WORDS.subList(19, 20));
        script("z", new Script(threes, 3, false));
        script("z", new Script(oneEach(" twenty", " and", " then", " some", " more", " words", " here"), -1,
                false));
        String out = stream("pref", ",\"max_tokens\":20");
        assertEquals(String.join("", WORDS), Sse.content(out), Sse.trail(out) + " the second resume was asked for "
                + bodies.get("z").stream().skip(1).findFirst().map(b -> b.path("max_tokens").toString()).orElse("?"));
        assertEquals("length", Sse.finishReason(out));
    }

    // ---- logprobs across an inexact trim -----------------------------------------------------------------------

    /**
     * Instruction resume whose re-emitted overlap is tokenized differently: delivered "... the lazy do" (the break came
     * after the token " do"), the continuation re-emits " lazy" " dog" " sleeps". The trimmer cuts " lazy do" (8 chars),
     * in the middle of the piece " dog": the client gets content "g sleeps" but logprobs for " dog" and " sleeps", so
     * the logprob tokens no longer spell the content, as OpenAI's always do.
     */
    @Test
    void logprobsOfAPieceCutByTheTrimmerMatchTheContent() {
        script("x", new Script(oneEach("The", " quick", " brown", " fox", " jumps", " over", " the", " lazy", " do",
                "g"), 9, false, List.of(-0.1, -0.1, -0.1, -0.1, -0.1, -0.1, -0.1, -0.1, -0.1, -0.1)));
        script("y", new Script(oneEach(" lazy", " dog", " sleeps", " soundly", " all", " afternoon", " long", ".",
                " The", " end", " comes", " later", " today", " for", " sure"), -1, false,
                java.util.Collections.nCopies(15, -0.2)));
        String out = stream("instr", ",\"logprobs\":true");
        assertResumed(out);
        StringBuilder lpText = new StringBuilder();
        for (JsonNode e : Sse.events(out)) {
            for (JsonNode lp : e.path("choices").path(0).path("logprobs").path("content")) {
                lpText.append(lp.path("token").asText());
                byte[] bytes = new byte[lp.path("bytes").size()];
                for (int i = 0; i < bytes.length; i++) {
                    bytes[i] = (byte) lp.path("bytes").get(i).asInt();
                }
                assertEquals(lp.path("token").asText(), new String(bytes, java.nio.charset.StandardCharsets.UTF_8),
                        "a token's bytes spell it");
            }
        }
        assertEquals(Sse.content(out), lpText.toString());
        assertTrue(out.contains("\"token\":\"g\""), "the cut piece's token keeps its text past the cut: " + out);
    }

    // ---- raw frames ------------------------------------------------------------------------------------------

    static String frame(java.util.function.Consumer<ObjectNode> delta, String finish) {
        ObjectNode c = base();
        ObjectNode ch = c.putArray("choices").addObject().put("index", 0);
        delta.accept(ch.putObject("delta"));
        if (finish == null) {
            ch.putNull("finish_reason");
        } else {
            ch.put("finish_reason", finish);
        }
        return c.toString();
    }

    static String text(String field, String t) {
        return frame(d -> d.put(field, t), null);
    }

    static String role() {
        return frame(d -> d.put("role", "assistant").put("content", ""), null);
    }

    static String call(String id, String name, String args) {
        return frame(d -> {
            ObjectNode tc = d.putArray("tool_calls").addObject().put("index", 0);
            if (id != null) {
                tc.put("id", id).put("type", "function");
            }
            ObjectNode f = tc.putObject("function");
            if (name != null) {
                f.put("name", name);
            }
            f.put("arguments", args);
        }, null);
    }

    static String finish(String reason) {
        return frame(d -> { }, reason);
    }

    static io.restassured.response.Response post(String alias, String extra) {
        return given().auth().oauth2("k-acme").contentType("application/json")
                .body("{\"model\":\"" + alias + "\",\"stream\":true" + extra
                        + ",\"messages\":[{\"role\":\"user\",\"content\":\"go\"}]}")
                .post("/v1/chat/completions");
    }

    /**
     * The model's first tokens spell a multi-token stop string ("</answer>": "</", "answer", ">"), as a model asked for
     * an empty answer does: vLLM streams nothing, finishes with stop, and its usage counts the 3 tokens it generated
     * for the stop string. That is a complete (empty) answer, as OpenAI and vLLM return it; the gateway takes it for
     * the Trifrost failure (text lost on the way), charges the route, fails over, and the client gets a 502.
     */
    @Test
    void anAnswerThatStopsAtOnceOnAMultiTokenStopIsAnEmptyAnswer() {
        script("x", new Script(oneEach("</", "answer", ">", " tail"), -1, true));
        script("z", new Script(oneEach("</", "answer", ">", " tail"), -1, true));
        io.restassured.response.Response r = post("pref", ",\"stop\":[\"</answer>\"]");
        String out = r.asString();
        assertEquals(200, r.statusCode(), out);
        assertTrue(Sse.events(out).stream().noneMatch(e -> e.has("error")), out);
        assertEquals("", Sse.content(out));
        assertEquals("stop", Sse.finishReason(out));
    }

    /** The same answer whole: its usage counts the stop sequence's 3 tokens, and it is an empty answer. */
    @Test
    void aWholeAnswerThatStopsAtOnceOnAMultiTokenStopIsAnEmptyAnswer() {
        script("x", new Script(oneEach("</", "answer", ">", " tail"), -1, true));
        io.restassured.response.Response r = given().auth().oauth2("k-acme").contentType("application/json")
                .body("{\"model\":\"pref\",\"stop\":[\"</answer>\"],\"messages\":[{\"role\":\"user\","
                        + "\"content\":\"go\"}]}")
                .post("/v1/chat/completions");
        assertEquals(200, r.statusCode(), r.asString() + " " + r.header("x-hedgerow-attempts"));
        assertEquals("", r.jsonPath().getString("choices[0].message.content"));
        assertEquals("stop", r.jsonPath().getString("choices[0].finish_reason"));
        assertEquals(1, bodies.get("x").size(), "no failover: " + r.asString());
    }

    static dev.hedgerow.state.UsageSample usage(String route) {
        return gw.core().store().snapshot(List.of("acme/" + route), java.time.Duration.ofMinutes(1)).await()
                .atMost(java.time.Duration.ofSeconds(5)).get("acme/" + route).usage();
    }

    /**
     * Each route of a resumed answer is charged its part in its usage window (what lowest_usage ranks by): the route
     * that broke, the text it delivered; the resuming one, the rest and the delivered text it was given as its prompt.
     * The whole bill went to the route that finished: one that always broke mid-stream never accrued usage and stayed
     * lowest_usage's first pick (found by hunt20). The client's bill is one and the parts sum to its completion.
     */
    @Test
    void eachRouteOfAResumedAnswerIsChargedItsPart() throws Exception {
        dev.hedgerow.state.UsageSample x0 = usage("pref-x");
        dev.hedgerow.state.UsageSample z0 = usage("pref-z");
        script("x", new Script(oneEach("The", " quick", " brown", " fox", " jumps", " over", " the", " lazy", " dog"),
                5, false));
        script("z", new Script(oneEach(" over", " the", " lazy", " dog", "."), -1, false));
        String out = stream("pref", ",\"stream_options\":{\"include_usage\":true}");
        assertResumed(out);
        assertEquals("The quick brown fox jumps over the lazy dog.", Sse.content(out));
        JsonNode billed = null;
        for (JsonNode e : Sse.events(out)) {
            if (e.hasNonNull("usage")) {
                billed = e.get("usage");
            }
        }
        assertTrue(billed != null, out);
        long x = 0;
        long z = 0;
        for (int i = 0; i < 100 && (x == 0 || z == 0); i++) {
            x = usage("pref-x").completionTokens() - x0.completionTokens();
            z = usage("pref-z").completionTokens() - z0.completionTokens();
            Thread.sleep(20);
        }
        assertTrue(x >= 4 && z >= 4, "x " + x + ", z " + z);
        assertEquals(billed.path("completion_tokens").asLong(), x + z);
        assertEquals(billed.path("prompt_tokens").asLong(), usage("pref-x").promptTokens() - x0.promptTokens());
        assertTrue(usage("pref-z").promptTokens() - z0.promptTokens() > billed.path("prompt_tokens").asLong(),
                "the resume read the delivered text too");
    }

    static final String WEATHER_TOOL = ",\"tools\":[{\"type\":\"function\",\"function\":{\"name\":\"get_weather\","
            + "\"parameters\":{\"type\":\"object\"}}}]";

    /**
     * A stream that finishes with tool_calls and holds no call lost its call on the way, whatever its usage counts
     * (with it or without): the request fails over, as for text lost with finish stop; a tool loop got an empty turn
     * with finish tool_calls, the route's success (found by hunt20).
     */
    @Test
    void aToolCallsFinishWithNoCallFailsOver() {
        for (String usage : List.of("{'id':'u','choices':[],'usage':{'prompt_tokens':5,'completion_tokens':0,"
                + "'total_tokens':5}}", "")) {
            clean();
            List<String> frames = new ArrayList<>(List.of(role(), finish("tool_calls")));
            if (!usage.isEmpty()) {
                frames.add(usage);
            }
            script("x", Script.raw(-1, frames.toArray(String[]::new)));
            script("z", Script.raw(-1, role(), call("call_9", "get_weather", "{}"), finish("tool_calls")));
            String out = stream("pref", WEATHER_TOOL);
            assertEquals(1, bodies.get("z").size(), "failed over: " + out);
            assertTrue(out.contains("call_9"), out);
            assertTrue(Sse.trail(out).toString().contains("zero_content"), Sse.trail(out).toString());
            assertEquals("tool_calls", Sse.finishReason(out));
        }
    }

    /** The same for a whole answer: finish tool_calls with no call in its message. */
    @Test
    void aWholeToolCallsAnswerWithNoCallFailsOver() {
        wholes.computeIfAbsent("x", k -> new ConcurrentLinkedQueue<>()).add("{'id':'u','object':'chat.completion',"
                + "'model':'m','choices':[{'index':0,'message':{'role':'assistant','content':null},"
                + "'finish_reason':'tool_calls'}],'usage':{'prompt_tokens':5,'completion_tokens':0,'total_tokens':5}}");
        wholes.computeIfAbsent("z", k -> new ConcurrentLinkedQueue<>()).add("{'id':'u','object':'chat.completion',"
                + "'model':'m','choices':[{'index':0,'message':{'role':'assistant','content':null,'tool_calls':[{"
                + "'id':'call_9','type':'function','function':{'name':'get_weather','arguments':'{}'}}]},"
                + "'finish_reason':'tool_calls'}],'usage':{'prompt_tokens':5,'completion_tokens':7,'total_tokens':12}}");
        io.restassured.response.Response r = given().auth().oauth2("k-acme").contentType("application/json")
                .body("{\"model\":\"pref\"" + WEATHER_TOOL + ",\"messages\":[{\"role\":\"user\",\"content\":\"go\"}]}")
                .post("/v1/chat/completions");
        assertEquals(200, r.statusCode(), r.asString());
        assertEquals("call_9", r.path("choices[0].message.tool_calls[0].id"), r.asString());
        assertEquals(1, bodies.get("z").size());
    }

    /**
     * An instruction resume whose model writes text and then a call: the text the trimmer held goes out with the chunk
     * that ends its deciding, and the call after it, as the model wrote them; the call went out first (found by
     * hunt20).
     */
    @Test
    void aCallAfterTextOnAnInstructionResumeComesAfterTheText() {
        script("x", Script.raw(3, role(), text("content", "The answer is 42."), text("content", " Let me also "),
                text("content", "never sent")));
        script("y", Script.raw(-1, role(), text("content", "also "), text("content", "check."),
                call("call_9", "get_weather", "{}"), finish("tool_calls")));
        String out = stream("itool", WEATHER_TOOL);
        assertResumed(out);
        assertEquals("The answer is 42. Let me also check.", Sse.content(out));
        int checkAt = -1;
        int callAt = -1;
        List<JsonNode> events = Sse.events(out);
        for (int i = 0; i < events.size(); i++) {
            JsonNode delta = events.get(i).path("choices").path(0).path("delta");
            if (delta.path("content").asText("").contains("check.")) {
                checkAt = i;
            }
            if (delta.has("tool_calls") && callAt < 0) {
                callAt = i;
            }
        }
        assertTrue(checkAt >= 0 && callAt > checkAt, "text at " + checkAt + ", call at " + callAt + ": " + out);
        assertEquals("tool_calls", Sse.finishReason(out));
    }

    /** A break in the middle of a tool call's arguments, resumed by prefill: the call reaches the client once, whole. */
    @Test
    void toolCallBrokenMidArgumentsArrivesOnceWhole() {
        script("x", Script.raw(4, role(), text("content", "Let me check."), call("call_1", "get_weather", ""),
                call(null, null, "{\"city\":"), call(null, null, "\"Paris\"}"), finish("tool_calls")));
        script("z", Script.raw(-1, role(), call("call_9", "get_weather", "{\"city\":"), call(null, null, "\"Paris\"}"),
                finish("tool_calls")));
        String out = stream("pref", ",\"tools\":[{\"type\":\"function\",\"function\":{\"name\":\"get_weather\","
                + "\"parameters\":{\"type\":\"object\"}}}]");
        assertResumed(out);
        assertEquals("Let me check.", Sse.content(out));
        StringBuilder args = new StringBuilder();
        java.util.Set<String> ids = new java.util.TreeSet<>();
        java.util.Set<String> names = new java.util.TreeSet<>();
        for (JsonNode e : Sse.events(out)) {
            for (JsonNode tc : e.path("choices").path(0).path("delta").path("tool_calls")) {
                if (tc.hasNonNull("id")) {
                    ids.add(tc.get("id").asText());
                }
                if (tc.path("function").hasNonNull("name")) {
                    names.add(tc.path("function").get("name").asText());
                }
                args.append(tc.path("function").path("arguments").asText(""));
            }
        }
        assertEquals("{\"city\":\"Paris\"}", args.toString(), out);
        assertEquals(1, ids.size(), out);
        assertEquals(java.util.Set.of("get_weather"), names);
        assertEquals("tool_calls", Sse.finishReason(out));
    }

    /**
     * A reasoning model resumed by instruction after its answer began thinks afresh about the gateway's "Continue
     * exactly where ..." message (DeepSeek-R1 and other open reasoning models always open with a think block), and
     * that second thinking reaches the client as reasoning after content: an unbroken stream never sends reasoning
     * once its content began, and this reasoning is about the gateway's instruction, not the user's question.
     */
    @Test
    void instructionResumeOfAReasoningModelSendsNoReasoningAfterContent() {
        script("x", Script.raw(5, role(), text("reasoning_content", "Think about foxes."),
                text("content", "The quick brown"), text("content", " fox jumps"), text("content", " over"),
                text("content", " the lazy dog."), finish("stop")));
        script("y", Script.raw(-1, role(), text("reasoning_content",
                        "The user wants me to continue my previous message exactly, without repeating it."),
                text("content", "brown fox jumps over"), text("content", " the lazy dog."), finish("stop")));
        String out = stream("instr", "");
        assertResumed(out);
        assertEquals("The quick brown fox jumps over the lazy dog.", Sse.content(out));
        boolean contentSeen = false;
        for (JsonNode e : Sse.events(out)) {
            JsonNode d = e.path("choices").path(0).path("delta");
            if (contentSeen && (d.hasNonNull("reasoning_content") && !d.get("reasoning_content").asText().isEmpty()
                    || d.hasNonNull("reasoning") && !d.get("reasoning").asText().isEmpty())) {
                org.junit.jupiter.api.Assertions.fail("reasoning after content: " + d + "\n" + out);
            }
            if (d.hasNonNull("content") && !d.get("content").asText().isEmpty()) {
                contentSeen = true;
            }
        }
        assertEquals("Think about foxes.", Sse.reasoning(out));
    }

    // ---- max_tokens on an instruction resume of short tokens ----------------------------------------------------

    /**
     * CJK text is about one token a character. The first route delivers 30 of max_tokens 40 and breaks; the instruction
     * resume re-emits the last 24 characters it was shown (24 tokens, well inside the trimmer's 64-character window)
     * before going on, and its provider counts them: asked for 10 + 16, it stopped with length after 2 new tokens,
     * and the client got 32 where it asked for 40. Asked for 10 + 64, the client gets 40 and finish_reason length.
     */
    @Test
    void instructionResumeOfShortTokensStillDeliversMaxTokens() {
        List<String> han = new ArrayList<>();
        String src = "天地玄黄宇宙洪荒日月盈昃辰宿列张寒来暑往秋收冬藏闰余成岁律吕调阳云腾致雨露结为霜金生丽水玉出昆冈剑号巨阙珠称夜光";
        for (int i = 0; i < src.length(); i++) {
            han.add(src.substring(i, i + 1));
        }
        script("x", new Script(oneEach(han.toArray(String[]::new)), 30, false));
        script("y", new Script(oneEach(han.subList(6, han.size()).toArray(String[]::new)), -1, false));
        String out = stream("instr", ",\"max_tokens\":40");
        assertResumed(out);
        assertEquals(String.join("", han.subList(0, 40)), Sse.content(out),
                "asked by the gateway for " + bodies.get("y").peek().path("max_tokens"));
        assertEquals("length", Sse.finishReason(out));
    }

    /** include_usage after a resume: one usage chunk, last, choices [], then [DONE]; one id and created throughout. */
    @Test
    void usageChunkOnceAndLastAfterAResume() {
        script("x", new Script(pairs(WORDS), 3, false));
        script("z", new Script(oneEach(WORDS.subList(6, WORDS.size()).toArray(String[]::new)), -1, false));
        String out = stream("pref", ",\"stream_options\":{\"include_usage\":true}");
        assertResumed(out);
        assertEquals(String.join("", WORDS), Sse.content(out));
        List<JsonNode> ev = Sse.events(out);
        long usages = ev.stream().filter(e -> e.hasNonNull("usage")).count();
        assertEquals(1, usages, out);
        JsonNode last = ev.get(ev.size() - 1);
        assertTrue(last.hasNonNull("usage") && last.path("choices").isArray() && last.path("choices").isEmpty(), out);
        assertTrue(Sse.endsWithDone(out));
        assertEquals(1, ev.stream().map(e -> e.path("id").asText()).distinct().count(), out);
        assertEquals(1, ev.stream().map(e -> e.path("created").asText()).distinct().count(), out);
        assertEquals("stop", Sse.finishReason(out));
    }
}
