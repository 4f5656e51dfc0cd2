package dev.hedgerow.function.gateway;

import com.fasterxml.jackson.databind.JsonNode;
import dev.hedgerow.api.Json;
import dev.hedgerow.sim.ModelScript;
import dev.hedgerow.sim.SimServer;
import dev.hedgerow.sim.SimStats;
import dev.hedgerow.sim.SimText;
import dev.hedgerow.state.LedgerEntry;
import dev.hedgerow.testsupport.GatewayHarness;
import dev.hedgerow.testsupport.RedisServer;
import dev.hedgerow.testsupport.RedisStores;
import dev.hedgerow.testsupport.Sse;
import io.restassured.response.Response;
import io.vertx.core.Vertx;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

import java.io.IOException;
import java.util.List;
import java.util.Map;
import java.util.Set;

import static dev.hedgerow.function.gateway.GroupKit.KEY;
import static dev.hedgerow.function.gateway.GroupKit.SEED;
import static dev.hedgerow.testsupport.Eventually.eventually;
import static io.restassured.RestAssured.given;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * A provider that refuses the {@code stream_options} the gateway adds to every stream (an older vLLM: 400, its field
 * named in the message, in vLLM's own error form), end to end over HTTP on a real Redis: the stream is sent again at
 * once on the same route without the field and served, billed by the gateway's own count; the route is remembered,
 * so the next stream never sends the field; a client that sent {@code stream_options} itself gets the provider's 400.
 */
class StreamOptionsRefusedTest {
    static final int TOKENS = 8;
    static final String YAML = GroupKit.yaml("""
                  - { id: oldv, alias: oldv, provider: openrouter, model: old-vllm }
                  - { id: oldc, alias: oldc, provider: openrouter, model: old-vllm-c }
            """, """
                  oldv: { strategy: rr_health, hedging: false }
                  oldc: { strategy: rr_health, hedging: false }
            """);

    static RedisServer redis;
    static Vertx vertx;
    static Map<String, SimServer> sims;
    static RedisStores.Opened store;
    static GatewayHarness gw;

    @BeforeAll
    static void start() {
        redis = RedisServer.start();
        vertx = Vertx.vertx();
        ModelScript oldVllm = GroupKit.quick(TOKENS).withCapabilities(ModelScript.Capabilities.DEFAULT
                .withUnknownFields(Set.of("stream_options")));
        sims = GatewayHarness.startSims(vertx, GroupKit.sims(oldVllm, "old-vllm", "old-vllm-c"));
        store = RedisStores.open(vertx, redis.url());
        gw = GatewayHarness.start(vertx, YAML, sims, store.store());
    }

    @AfterAll
    static void stop() {
        gw.close();
        store.close();
        sims.values().forEach(SimServer::close);
        vertx.close().toCompletionStage().toCompletableFuture().join();
        redis.close();
    }

    static Response stream(String alias, String prompt, String extra) {
        return given().baseUri(gw.baseUrl()).auth().oauth2(KEY).contentType("application/json")
                .body("{\"model\":\"" + alias + "\",\"stream\":true" + extra
                        + ",\"messages\":[{\"role\":\"user\",\"content\":\"" + prompt + "\"}]}")
                .post("/v1/chat/completions");
    }

    /** The bodies the simulator received for the model, oldest first. */
    static List<JsonNode> received(String model) {
        return gw.sim("openrouter").stats(model).recent().stream().map(SimStats.RecordedRequest::body).map(b -> {
            try {
                return Json.parse(b.getBytes());
            } catch (IOException e) {
                throw new AssertionError(e);
            }
        }).toList();
    }

    /** The stream's attempt trail as "route:outcome[:error]" strings. */
    static List<String> trail(Response r) {
        List<String> out = new java.util.ArrayList<>();
        for (JsonNode a : Sse.trail(r.asString())) {
            out.add(a.path("route").asText() + ":" + a.path("outcome").asText()
                    + (a.path("error").isTextual() ? ":" + a.path("error").asText() : ""));
        }
        return out;
    }

    @Test
    void aRefusedStreamOptionsIsDroppedOnTheSameRouteAndNeverSentToItAgain() {
        Response first = stream("oldv", "first", "");
        String out = first.asString();
        assertEquals(200, first.statusCode(), out);
        assertEquals(SimText.expected(SEED, "first", TOKENS), Sse.content(out), out);
        assertTrue(Sse.endsWithDone(out), out);
        assertEquals(List.of("oldv:refused:stream_options_refused", "oldv:success"), trail(first));
        List<JsonNode> sent = received("old-vllm");
        assertEquals(2, sent.size(), sent.toString());
        assertTrue(sent.get(0).has("stream_options"), sent.get(0).toString());
        assertFalse(sent.get(1).has("stream_options"), sent.get(1).toString());
        // the provider sent no usage: the request is billed by the gateway's own count, once
        eventually(() -> gw.ledger("acme").containsKey("oldv"), "the stream is in the ledger");
        LedgerEntry billed = gw.ledger("acme").get("oldv");
        assertEquals(1, billed.requests(), billed.toString());
        assertTrue(billed.usage().promptTokens() > 0 && billed.usage().completionTokens() > 0, billed.toString());

        Response second = stream("oldv", "second", "");
        assertEquals(200, second.statusCode(), second.asString());
        assertEquals(SimText.expected(SEED, "second", TOKENS), Sse.content(second.asString()));
        assertEquals(List.of("oldv:success"), trail(second));
        sent = received("old-vllm");
        assertEquals(3, sent.size(), sent.toString());
        assertFalse(sent.get(2).has("stream_options"), "the route is known to refuse it: " + sent.get(2));
    }

    /** Whether the route is known to refuse it or not: the client asked for the field, and it is the client's. */
    @Test
    void aStreamOptionsTheClientSentReachesTheProviderAndItsRefusalTheClient() {
        String mine = ",\"stream_options\":{\"include_usage\":true}";
        Response r = stream("oldc", "mine", mine);
        assertEquals(400, r.statusCode(), r.asString());
        assertTrue(r.jsonPath().getString("error.message").contains("stream_options"), r.asString());
        List<JsonNode> sent = received("old-vllm-c");
        assertEquals(1, sent.size(), sent.toString());
        assertTrue(sent.get(0).path("stream_options").path("include_usage").asBoolean(), sent.get(0).toString());

        assertEquals(200, stream("oldc", "learn", "").statusCode());
        assertEquals(3, received("old-vllm-c").size(), "the route refused the gateway's field and was learnt");
        Response again = stream("oldc", "mine again", mine);
        assertEquals(400, again.statusCode(), again.asString());
        sent = received("old-vllm-c");
        assertEquals(4, sent.size(), sent.toString());
        assertTrue(sent.get(3).path("stream_options").path("include_usage").asBoolean(), sent.get(3).toString());
    }
}
