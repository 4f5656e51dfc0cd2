package dev.hedgerow.function.gateway;

import com.fasterxml.jackson.databind.JsonNode;
import dev.hedgerow.sim.Fault;
import dev.hedgerow.sim.SimServer;
import dev.hedgerow.state.MemoryStateStore;
import dev.hedgerow.testsupport.GatewayHarness;
import dev.hedgerow.testsupport.Sse;
import dev.hedgerow.time.Ticker;
import io.restassured.response.Response;
import io.vertx.core.Vertx;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

import java.util.List;
import java.util.Map;

import static dev.hedgerow.function.gateway.GroupKit.chat;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * A refusal streamed as OpenAI's structured outputs stream it ({@code delta.refusal}, no content) is the answer, as
 * text is: it commits the stream and reaches the client piece by piece, whole however long, and, as another model
 * cannot continue it, a break inside it ends the stream with an error instead of a resume. Found by hunt6: its
 * pieces were held as content-less chunks until the finish (the client heard only keep-alives, a hedge could fire
 * against a route that was answering), and past 64 they were dropped without a word.
 */
class StreamedRefusalTest {
    static final int TOKENS = 100;

    static Vertx vertx;
    static Map<String, SimServer> sims;
    static GatewayHarness gw;

    @BeforeAll
    static void start() {
        vertx = Vertx.vertx();
        sims = GatewayHarness.startSims(vertx, GroupKit.sims(GroupKit.quick(TOKENS), "m"));
        gw = GatewayHarness.start(vertx, GroupKit.yaml("""
                      - { alias: r, provider: openrouter, model: m, priority: 1, capabilities: [prefill] }
                      - { alias: r, provider: digitalocean, model: m, priority: 2, capabilities: [prefill] }
                """, """
                      r: { strategy: priority, hedging: false }
                """), sims, new MemoryStateStore(Ticker.system()));
    }

    @AfterAll
    static void stop() {
        gw.close();
        sims.values().forEach(SimServer::close);
        vertx.close().toCompletionStage().toCompletableFuture().join();
    }

    @BeforeEach
    void reset() {
        GroupKit.reset(gw);
    }

    /** The refusal text as the client assembles it from every chunk's {@code delta.refusal}. */
    static String refusal(String out) {
        StringBuilder sb = new StringBuilder();
        for (JsonNode e : Sse.events(out)) {
            JsonNode r = e.path("choices").path(0).path("delta").path("refusal");
            if (r.isTextual()) {
                sb.append(r.asText());
            }
        }
        return sb.toString();
    }

    @Test
    void aLongStreamedRefusalReachesTheClientWhole() {
        gw.sim("openrouter").enqueue("m", new Fault.Refuse(-1));
        Response r = chat(gw, "r", "refuse me", true, null);
        assertEquals(200, r.statusCode());
        String out = r.asString();
        assertEquals(gw.sim("openrouter").expectedText("refuse me", TOKENS), refusal(out), out);
        assertEquals("", Sse.content(out));
        assertTrue(out.contains("\"finish_reason\":\"stop\""), out);
        assertTrue(Sse.endsWithDone(out));
        JsonNode t = Sse.trail(out);
        assertEquals(1, t.size(), t.toString());
        assertEquals("success", t.get(0).path("outcome").asText());
    }

    @Test
    void aRefusalBrokenMidStreamIsNotResumedWithAnotherAnswer() {
        long before = gw.sim("digitalocean").stats("m").received();
        gw.sim("openrouter").enqueue("m", new Fault.Refuse(3));
        Response r = chat(gw, "r", "refuse and break", true, null);
        assertEquals(200, r.statusCode());
        String out = r.asString();
        assertEquals(gw.sim("openrouter").expectedText("refuse and break", 3), refusal(out), out);
        assertEquals("", Sse.content(out), "no other route's answer after the refusal's pieces");
        List<JsonNode> ev = Sse.events(out);
        assertEquals("stream_interrupted", ev.get(ev.size() - 1).path("error").path("code").asText(), out);
        assertEquals(before, gw.sim("digitalocean").stats("m").received(), "nothing asked of the other route");
    }

    @Test
    void aWholeRefusalIsTheAnswer() {
        gw.sim("openrouter").enqueue("m", new Fault.Refuse(-1));
        Response r = chat(gw, "r", "refuse me whole", false, null);
        assertEquals(200, r.statusCode(), r.asString());
        assertEquals(gw.sim("openrouter").expectedText("refuse me whole", TOKENS),
                r.jsonPath().getString("choices[0].message.refusal"));
        assertEquals(1, GroupKit.trail(r).size());
    }
}
