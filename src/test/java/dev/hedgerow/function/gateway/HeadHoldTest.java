package dev.hedgerow.function.gateway;

import com.fasterxml.jackson.databind.JsonNode;
import dev.hedgerow.sim.Fault;
import dev.hedgerow.sim.ModelScript;
import dev.hedgerow.sim.SimText;
import dev.hedgerow.testsupport.GatewayHarness;
import dev.hedgerow.testsupport.Sse;
import io.restassured.response.Response;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import java.util.List;

import static dev.hedgerow.function.gateway.GroupKit.SEED;
import static dev.hedgerow.function.gateway.GroupKit.chat;
import static dev.hedgerow.function.gateway.GroupKit.received;
import static dev.hedgerow.testsupport.Eventually.eventually;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * A group's {@code head_hold} over real HTTP, scaled down (100 ms): a stream whose upstream thinks in silence (no
 * upstream keep-alives either) for a second gets its 200 head and keep-alive comments before the content, and
 * everything before the first content (failover, the final error, a passed-through client error) still happens
 * unseen or as the stream's error event. With {@code head_hold: off} the head waits for the content, as before.
 */
class HeadHoldTest {
    static final int TOKENS = 8;
    /** The silent thinking pause of every route: ten head holds. */
    static final long PAUSE_MS = 1000;
    static final String CALM = "strategy: priority, hedging: false";

    static GatewayHarness gw;

    @BeforeAll
    static void start() {
        ModelScript thinker = GroupKit.quick(TOKENS).withReasoning(new ModelScript.Reasoning(0, PAUSE_MS, 0));
        String yaml = GroupKit.yaml("""
                      - { alias: think, provider: openrouter, model: m-think, priority: 1 }
                      - { alias: think, provider: digitalocean, model: m-think, priority: 2 }
                      - { alias: slowresume, provider: openrouter, model: m-think, priority: 1 }
                      - { alias: slowresume, provider: digitalocean, model: m-slowstart, priority: 2 }
                      - { alias: held, provider: openrouter, model: m-think, priority: 1 }
                      - { alias: held, provider: digitalocean, model: m-think, priority: 2 }
                """, """
                      think: { %1$s, head_hold: 100ms }
                      slowresume: { %1$s, head_hold: 100ms }
                      held: { %1$s, head_hold: off }
                """.formatted(CALM));
        gw = GatewayHarness.start(yaml, GroupKit.sims(thinker, "m-think"));
        // a second before the first token of anything it is asked, a resume included (a long prompt's prefill)
        gw.sim("digitalocean").script("m-slowstart", GroupKit.quick(TOKENS)
                .withLatency(ModelScript.Latency.of(PAUSE_MS, 0)));
    }

    @AfterAll
    static void stop() {
        gw.close();
    }

    @BeforeEach
    void reset() {
        GroupKit.reset(gw);
    }

    static String expected(String prompt) {
        return SimText.expected(SEED, prompt, TOKENS);
    }

    /** The body up to its first {@code data:} event: what the client heard before any chunk. */
    static String beforeFirstChunk(String body) {
        int at = body.indexOf("data:");
        return at < 0 ? body : body.substring(0, at);
    }

    /** A 200 stream of a keep-alive comment, one event and [DONE]: the event. */
    static JsonNode theOnlyEventAfterAnEarlyHead(Response r) {
        assertEquals(200, r.statusCode());
        String out = r.asString();
        assertTrue(out.startsWith(": keep-alive\n\n"), out);
        assertTrue(Sse.endsWithDone(out), out);
        List<JsonNode> events = Sse.events(out);
        assertEquals(1, events.size(), out);
        return events.get(0);
    }

    @Test
    void aStreamSilentLongerThanTheHeadHoldGetsItsHeadAndKeepAlivesBeforeTheContent() {
        double early = gw.metric("hedgerow_early_heads", "alias", "think");
        Response r = chat(gw, "think", "think quietly", true, null);
        assertEquals(200, r.statusCode());
        assertTrue(r.contentType().startsWith("text/event-stream"), r.contentType());
        String out = r.asString();
        assertTrue(beforeFirstChunk(out).startsWith(": keep-alive\n\n"), out);
        assertEquals(expected("think quietly"), Sse.content(out), out);
        assertTrue(Sse.endsWithDone(out), out);
        assertTrue(Sse.events(out).stream().noneMatch(e -> e.has("error")), out);
        JsonNode trail = Sse.trail(out);
        assertEquals(1, trail.size(), trail.toString());
        assertEquals("success", trail.get(0).path("outcome").asText());
        // the head went out before any route won: it names none, the chunks name the one that served
        assertNull(r.header("x-hedgerow-route"));
        assertTrue(r.header("x-hedgerow-request-id").startsWith("chatcmpl-hr"));
        assertEquals("openrouter", Sse.events(out).get(0).path("provider").asText(), out);
        assertEquals(early + 1, gw.metric("hedgerow_early_heads", "alias", "think"));
    }

    @Test
    void aResumeSilentBeforeItsFirstContentIsKeptAliveToo() {
        // the first route streams 3 tokens and drops; the resume on the second is silent for a second
        gw.sim("openrouter").enqueue("m-think", Fault.dropAfter(3));
        String prompt = "resume quietly";
        Response r = chat(gw, "slowresume", prompt, true, null);
        assertEquals(200, r.statusCode());
        String out = r.asString();
        assertEquals(expected(prompt), Sse.content(out), out);
        assertEquals("resume", Sse.trail(out).get(1).path("kind").asText(), out);
        String afterFirstChunk = out.substring(out.indexOf("data:"));
        int comments = afterFirstChunk.split(": keep-alive", -1).length - 1;
        assertTrue(comments >= 3, "a comment every head_hold (100 ms) while the resume is silent for 1 s: " + out);
    }

    @Test
    void withTheHeadHoldOffTheHeadWaitsForTheContent() {
        Response r = chat(gw, "held", "think quietly", true, null);
        assertEquals(200, r.statusCode());
        String out = r.asString();
        assertFalse(out.contains(": keep-alive"), out);
        assertTrue(out.startsWith("data:"), out);
        assertEquals(expected("think quietly"), Sse.content(out), out);
        assertEquals("held-openrouter", r.header("x-hedgerow-route"));
    }

    @Test
    void aFailoverBeforeTheFirstContentAfterAnEarlyHeadIsOneCleanStream() {
        // the first route fails after the head went out: silent, then a 500, or thinking, then a dropped connection
        List<Fault> faults = List.of(new Fault.HttpError(500, "server_error", null, "boom", null, 600),
                Fault.dropAfter(0));
        for (Fault fault : faults) {
            GroupKit.reset(gw);
            gw.sim("openrouter").enqueue("m-think", fault);
            String prompt = "fail over quietly " + fault.getClass().getSimpleName();
            Response r = chat(gw, "think", prompt, true, null);
            assertEquals(200, r.statusCode());
            String out = r.asString();
            assertTrue(beforeFirstChunk(out).startsWith(": keep-alive\n\n"), out);
            assertEquals(expected(prompt), Sse.content(out), out);
            assertTrue(Sse.endsWithDone(out), out);
            assertTrue(Sse.events(out).stream().noneMatch(e -> e.has("error")), out);
            long ids = Sse.events(out).stream().map(e -> e.path("id").asText()).distinct().count();
            assertEquals(1, ids, "one stream, one id: " + out);
            // no chunk of the failed attempt reached the client (the role chunk included)
            assertEquals(1, Sse.events(out).stream().filter(e -> e.path("choices").path(0).path("delta")
                    .has("role")).count(), out);
            assertTrue(Sse.events(out).stream().allMatch(e -> "digitalocean".equals(e.path("provider").asText())),
                    out);
            JsonNode trail = Sse.trail(out);
            assertEquals(2, trail.size(), trail.toString());
            assertEquals("failed", trail.get(0).path("outcome").asText());
            assertEquals("success", trail.get(1).path("outcome").asText());
        }
    }

    @Test
    void whenEveryRouteFailsAfterAnEarlyHeadTheClientGetsTheErrorEventWithTheTrailThenDone() {
        for (String p : List.of("openrouter", "digitalocean")) {
            gw.sim(p).enqueue("m-think", new Fault.HttpError(500, "server_error", null, "boom", null, 600));
        }
        Response r = chat(gw, "think", "nobody answers", true, null);
        JsonNode err = theOnlyEventAfterAnEarlyHead(r);
        String out = r.asString();
        assertEquals("upstream_error", err.path("error").path("code").asText(), out);
        assertEquals("server_error", err.path("error").path("type").asText(), out);
        assertTrue(err.path("error").path("message").asText().startsWith("No provider of 'think' could serve"), out);
        assertEquals(r.header("x-hedgerow-request-id"), err.path("id").asText());
        JsonNode trail = err.path("attempt_trail");
        assertEquals(2, trail.size(), trail.toString());
        assertEquals("http_500", trail.get(0).path("error").asText());
        assertEquals("http_500", trail.get(1).path("error").asText());
    }

    @Test
    void aClientErrorAfterAnEarlyHeadIsTheStreamsErrorEvent() {
        gw.sim("openrouter").enqueue("m-think", new Fault.HttpError(400, "invalid_request_error", "content_filter",
                "filtered", null, 600));
        Response r = chat(gw, "think", "filtered late", true, null);
        JsonNode err = theOnlyEventAfterAnEarlyHead(r);
        assertEquals("content_filter", err.path("error").path("code").asText(), r.asString());
        assertEquals("filtered", err.path("error").path("message").asText(), r.asString());
        assertEquals(1, err.path("attempt_trail").size(), r.asString());
        assertEquals(0, received(gw, "digitalocean", "m-think"), "a client error does not fail over");
    }

    @Test
    void aClientHangingUpAfterAnEarlyHeadStopsTheUpstream() throws Exception {
        try (Socket client = GroupKit.sendAndHold(gw, GroupKit.body("think", "hang up while it thinks", true, null))) {
            BufferedReader in = new BufferedReader(new InputStreamReader(client.getInputStream(),
                    StandardCharsets.UTF_8));
            assertEquals("HTTP/1.1 200 OK", in.readLine());
            String line;
            while ((line = in.readLine()) != null && !line.startsWith(": keep-alive")) {
                assertFalse(line.startsWith("data:"), "content before the keep-alive: " + line);
            }
            assertEquals(": keep-alive", line);
        }
        eventually(() -> gw.sim("openrouter").stats("m-think").cancelled() == 1, "the upstream call is closed");
        assertEquals(0, received(gw, "digitalocean", "m-think"), "no failover after the hang-up");
    }
}
