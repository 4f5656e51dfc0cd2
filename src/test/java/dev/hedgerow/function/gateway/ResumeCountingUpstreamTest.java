package dev.hedgerow.function.gateway;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.hedgerow.testsupport.GatewayHarness;
import dev.hedgerow.testsupport.Sse;
import io.restassured.RestAssured;
import io.vertx.core.Vertx;
import io.vertx.core.http.HttpServer;
import io.vertx.core.http.HttpServerRequest;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.atomic.AtomicInteger;

import static io.restassured.RestAssured.given;
import static org.junit.jupiter.api.Assertions.assertEquals;

/**
 * Resumes through an upstream written here that behaves as real providers do where the simulator does not: it
 * streams a logprob with every token, and an instruction-style continuation re-emits the last two tokens it was shown,
 * counting them against {@code max_tokens} (x and z resume by prefill, y by instruction). The answer is whole and
 * exact, its logprobs cover it, and {@code max_tokens} is met exactly (an instruction resume ended early with
 * {@code length}, its re-emitted overlap using the budget; found by hunt18).
 */
class ResumeCountingUpstreamTest {
    static final ObjectMapper M = new ObjectMapper();
    static final List<String> WORDS = List.of("alpha", " bravo", " charl", " delta", " echoo", " foxtr", " golfy",
            " hotel", " india", " julie", " kilos", " limas", " mikes", " novem", " oscar", " papas", " quebe",
            " romeo", " sierr", " tango");
    static Vertx vertx;
    static HttpServer server;
    static GatewayHarness gw;
    /** Paths whose next fresh request breaks after 4 tokens. */
    static final ConcurrentLinkedQueue<String> breakNext = new ConcurrentLinkedQueue<>();
    static final ConcurrentLinkedQueue<String> bodies = new ConcurrentLinkedQueue<>();

    @BeforeAll
    static void start() {
        vertx = Vertx.vertx();
        server = vertx.createHttpServer().requestHandler(ResumeCountingUpstreamTest::handle).listen(0, "127.0.0.1")
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
                      - { alias: instr, provider: x, model: lp, priority: 1, capabilities: [prefill] }
                      - { alias: instr, provider: y, model: lp, priority: 2 }
                      - { alias: pref, provider: x, model: lp, priority: 1, capabilities: [prefill] }
                      - { alias: pref, provider: z, model: lp, priority: 2, capabilities: [prefill] }
                    groups:
                      instr: { strategy: priority }
                      pref: { strategy: priority }
                """.replace("BASE", base);
        gw = GatewayHarness.start(yaml, Map.of());
        RestAssured.baseURI = gw.baseUrl();
    }

    @org.junit.jupiter.api.BeforeEach
    void healthy() {
        breakNext.clear();
        for (String r : List.of("instr-x", "instr-y", "pref-x", "pref-z")) {
            gw.core().store().resetHealth("acme/" + r).await().atMost(java.time.Duration.ofSeconds(5));
        }
    }

    static void assertResumed(String out) {
        org.junit.jupiter.api.Assertions.assertTrue(Sse.trail(out).toString().contains("\"kind\":\"resume\""),
                Sse.trail(out).toString());
    }

    @AfterAll
    static void stop() {
        gw.close();
        vertx.close();
    }

    static void handle(HttpServerRequest req) {
        req.body().onSuccess(buf -> {
            try {
                bodies.add(buf.toString());
                JsonNode body = M.readTree(buf.toString());
                String provider = req.path().split("/")[1];
                ArrayNode msgs = (ArrayNode) body.path("messages");
                JsonNode last = msgs.get(msgs.size() - 1);
                List<String> out = new ArrayList<>();
                boolean brk = false;
                if (last.path("role").asText().equals("user") && last.path("content").asText().startsWith("Continue exactly")) {
                    String partial = msgs.get(msgs.size() - 2).path("content").asText();
                    int written = covered(partial);
                    // a real model re-emits the end of what it was shown: its last two tokens
                    for (int i = Math.max(0, written - 2); i < WORDS.size(); i++) {
                        out.add(WORDS.get(i));
                    }
                } else if (last.path("role").asText().equals("assistant")) {
                    int written = covered(last.path("content").asText());
                    out.addAll(WORDS.subList(written, WORDS.size()));
                } else {
                    out.addAll(WORDS);
                    brk = breakNext.remove(provider);
                }
                String finish = "stop";
                if (body.hasNonNull("max_tokens") && out.size() > body.get("max_tokens").asInt()) {
                    // every generated token counts against max_tokens, a re-emitted one too
                    out = new ArrayList<>(out.subList(0, body.get("max_tokens").asInt()));
                    finish = "length";
                }
                String fin = finish;
                req.response().setChunked(true).putHeader("content-type", "text/event-stream");
                int n = 0;
                for (String t : out) {
                    if (brk && n == 4) {
                        req.response().write("data: " + chunk(t.substring(0, 2), false) + "\n");
                        vertx.setTimer(20, id -> req.connection().close());
                        return;
                    }
                    req.response().write("data: " + chunk(t, false) + "\n\n");
                    n++;
                }
                req.response().write("data: " + chunk(null, true).replace("\"stop\"", "\"" + fin + "\"") + "\n\n");
                req.response().end("data: [DONE]\n\n");
            } catch (Exception e) {
                req.response().setStatusCode(500).end(e.toString());
            }
        });
    }

    static int covered(String partial) {
        int pos = 0, i = 0;
        while (i < WORDS.size() && partial.startsWith(WORDS.get(i), pos)) {
            pos += WORDS.get(i).length();
            i++;
        }
        return i;
    }

    static String chunk(String token, boolean finish) {
        ObjectNode c = M.createObjectNode().put("id", "up").put("object", "chat.completion.chunk").put("created", 1)
                .put("model", "lp");
        ObjectNode ch = c.putArray("choices").addObject().put("index", 0);
        ObjectNode delta = ch.putObject("delta");
        if (token != null) {
            delta.put("content", token);
            ObjectNode lp = ch.putObject("logprobs");
            lp.putArray("content").addObject().put("token", token).put("logprob", -0.25).putArray("top_logprobs");
        }
        if (finish) {
            ch.put("finish_reason", "stop");
        } else {
            ch.putNull("finish_reason");
        }
        return c.toString();
    }

    static String stream(String alias) {
        return stream(alias, "");
    }

    static String stream(String alias, String extra) {
        return given().auth().oauth2("k-acme").contentType("application/json")
                .body("{\"model\":\"" + alias + "\",\"stream\":true,\"logprobs\":true" + extra
                        + ",\"messages\":[{\"role\":\"user\",\"content\":\"go\"}]}")
                .post("/v1/chat/completions").then().statusCode(200).extract().asString();
    }

    static String logprobTokens(String out) {
        StringBuilder sb = new StringBuilder();
        for (JsonNode e : Sse.events(out)) {
            for (JsonNode lp : e.path("choices").path(0).path("logprobs").path("content")) {
                sb.append(lp.path("token").asText());
            }
        }
        return sb.toString();
    }

    @Test
    void cleanStreamLogprobsCoverTheContent() {
        String out = stream("instr");
        assertEquals(String.join("", WORDS), Sse.content(out));
        assertEquals(Sse.content(out), logprobTokens(out));
    }

    @Test
    void prefillResumeLogprobsCoverTheContent() {
        breakNext.add("x");
        String out = stream("pref");
        assertResumed(out);
        assertEquals(String.join("", WORDS), Sse.content(out));
        assertEquals(Sse.content(out), logprobTokens(out));
    }

    @Test
    void instructionResumeLogprobsCoverTheContent() {
        breakNext.add("x");
        String out = stream("instr");
        assertResumed(out);
        assertEquals(String.join("", WORDS), Sse.content(out));
        assertEquals(Sse.content(out), logprobTokens(out));
    }

    @Test
    void instructionResumeWithMaxTokensDeliversMaxTokens() {
        breakNext.add("x");
        String out = stream("instr", ",\"max_tokens\":10");
        assertResumed(out);
        assertEquals(String.join("", WORDS.subList(0, 10)), Sse.content(out));
        assertEquals(Sse.content(out), logprobTokens(out));
        assertEquals("length", Sse.finishReason(out));
    }

    @Test
    void prefillResumeWithMaxTokensDeliversMaxTokens() {
        breakNext.add("x");
        String out = stream("pref", ",\"max_tokens\":10");
        assertResumed(out);
        assertEquals(String.join("", WORDS.subList(0, 10)), Sse.content(out));
        assertEquals("length", Sse.finishReason(out));
    }
}
