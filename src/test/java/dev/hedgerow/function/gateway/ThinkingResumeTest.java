package dev.hedgerow.function.gateway;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.hedgerow.state.RouteSnapshot;
import dev.hedgerow.testsupport.GatewayHarness;
import dev.hedgerow.testsupport.Sse;
import io.vertx.core.Vertx;
import io.vertx.core.http.HttpServer;
import io.vertx.core.http.HttpServerRequest;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

import java.time.Duration;
import java.util.List;
import java.util.Map;

import static io.restassured.RestAssured.given;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Instruction-style resumes on a reasoning model, through an upstream written here: x streams the whole answer and
 * drops before its finish; y and z (no prefill) think about the continuation and then stop with nothing to add, or
 * write a tool call. Either is a good end of the answer, not the failed resume a prefill continuation written wholly
 * as reasoning is (ReasoningContinuationTest): review29 found both ended with an error event, their routes cooled.
 */
class ThinkingResumeTest {
    static final ObjectMapper M = new ObjectMapper();
    static final List<String> WORDS = List.of("The", " answer", " is", " forty", " two", ".");
    static Vertx vertx;
    static HttpServer server;
    static GatewayHarness gw;

    @BeforeAll
    static void start() {
        vertx = Vertx.vertx();
        server = vertx.createHttpServer().requestHandler(ThinkingResumeTest::handle).listen(0, "127.0.0.1")
                .toCompletionStage().toCompletableFuture().join();
        String yaml = """
                orgs:
                  - id: acme
                    keys: [{ name: app, key: "k-acme" }]
                    providers:
                      - { id: x, base_url: "BASE/x/v1", dialect: openai }
                      - { id: y, base_url: "BASE/y/v1", dialect: openai }
                      - { id: z, base_url: "BASE/z/v1", dialect: openai }
                    routes:
                      - { alias: chat, provider: x, model: m, priority: 1, capabilities: [tools] }
                      - { alias: chat, provider: y, model: r1, priority: 2, capabilities: [tools] }
                      - { alias: chat, provider: z, model: r1, priority: 3, capabilities: [tools] }
                    groups:
                      chat: { strategy: priority, hedging: false }
                """.replace("BASE", "http://127.0.0.1:" + server.actualPort());
        gw = GatewayHarness.start(yaml, Map.of());
    }

    @AfterAll
    static void stop() {
        gw.close();
        vertx.close();
    }

    @BeforeEach
    void healthy() {
        for (String r : List.of("chat-x", "chat-y", "chat-z")) {
            gw.core().store().resetHealth("acme/" + r).await().atMost(Duration.ofSeconds(5));
        }
    }

    static void handle(HttpServerRequest req) {
        req.body().onSuccess(buf -> {
            boolean tools = buf.toString().contains("\"tools\"");
            String provider = req.path().split("/")[1];
            req.response().setChunked(true).putHeader("content-type", "text/event-stream");
            if (provider.equals("x")) {
                for (String w : WORDS) {
                    req.response().write("data: " + chunk(delta().put("content", w), null) + "\n\n");
                }
                vertx.setTimer(30, id -> req.connection().close());   // dropped before the finish
                return;
            }
            for (String w : List.of("The", " previous", " message", " is", " complete", ".")) {
                req.response().write("data: " + chunk(delta().put("reasoning_content", w), null) + "\n\n");
            }
            if (tools) {
                ObjectNode d = delta();
                ObjectNode call = d.putArray("tool_calls").addObject().put("index", 0).put("id", "call_1")
                        .put("type", "function");
                call.putObject("function").put("name", "lookup").put("arguments", "{}");
                req.response().write("data: " + chunk(d, null) + "\n\n");
            }
            req.response().write("data: " + chunk(delta(), "stop") + "\n\n");
            req.response().end("data: [DONE]\n\n");
        });
    }

    static ObjectNode delta() {
        return M.createObjectNode();
    }

    static String chunk(ObjectNode delta, String finish) {
        ObjectNode c = M.createObjectNode().put("id", "up").put("object", "chat.completion.chunk").put("created", 1)
                .put("model", "m");
        ObjectNode ch = c.putArray("choices").addObject().put("index", 0);
        ch.set("delta", delta);
        if (finish != null) {
            ch.put("finish_reason", finish);
        } else {
            ch.putNull("finish_reason");
        }
        return c.toString();
    }

    static String stream(String extra) {
        return given().baseUri(gw.baseUrl()).auth().oauth2("k-acme").contentType("application/json")
                .body("{\"model\":\"chat\",\"stream\":true" + extra
                        + ",\"messages\":[{\"role\":\"user\",\"content\":\"go\"}]}")
                .post("/v1/chat/completions").then().statusCode(200).extract().asString();
    }

    static RouteSnapshot health(String route) {
        return gw.core().store().snapshot(List.of("acme/" + route), Duration.ofMinutes(1))
                .await().atMost(Duration.ofSeconds(5)).get("acme/" + route);
    }

    @Test
    void aWholeAnswerResumedByARouteThatThinksAndStopsEndsWithStop() {
        String out = stream("");
        assertEquals(String.join("", WORDS), Sse.content(out), out);
        assertEquals("stop", Sse.finishReason(out), out);
        assertFalse(out.contains("{\"error\":{"), out);
        assertEquals(0, health("chat-y").fails(), "the resuming route is not charged");
    }

    @Test
    void aResumeThatThinksThenCallsAToolEndsWithTheCall() {
        String out = stream(",\"tools\":[{\"type\":\"function\",\"function\":{\"name\":\"lookup\","
                + "\"parameters\":{\"type\":\"object\"}}}]");
        assertTrue(out.contains("\"lookup\""), out);
        assertFalse(out.contains("{\"error\":{"), out);
        JsonNode trail = Sse.trail(out);
        assertTrue(trail.toString().contains("\"outcome\":\"success\""), trail.toString());
    }
}
