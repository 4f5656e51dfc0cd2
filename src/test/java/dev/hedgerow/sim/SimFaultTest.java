package dev.hedgerow.sim;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static dev.hedgerow.testsupport.Eventually.eventually;

import com.fasterxml.jackson.databind.JsonNode;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.Socket;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

class SimFaultTest extends SimFixture {

    static final long SEED = 7;
    static final String PROMPT = "Write about the river stones";
    static final int LENGTH = 30;

    @Override
    SimConfig config() {
        return SimConfig.of(SEED).withModel("m",
                ModelScript.defaults().withLength(LENGTH).withLatency(ModelScript.Latency.of(5, 1000)));
    }

    private SimHttp.Raw stream() {
        return http.stream(SimHttp.chat("m", PROMPT, true));
    }

    private SimHttp.Raw stream(Duration timeout) {
        return http.stream(SimHttp.chat("m", PROMPT, true), timeout);
    }

    private String expected(int tokens) {
        return SimText.expected(SEED, PROMPT, tokens);
    }

    @Test
    void rateLimitedWithRetryAfter() {
        sim.enqueue("m", Fault.rateLimited(7));
        SimHttp.Raw r = stream();
        assertEquals(429, r.status());
        assertEquals("7", r.headers().firstValue("retry-after").orElseThrow());
        assertEquals("rate_limit_exceeded", SimHttp.tree(r.text()).path("error").path("code").asText());
    }

    @Test
    void rateLimitedWithoutRetryAfter() {
        sim.enqueue("m", Fault.rateLimited(null));
        SimHttp.Raw r = stream();
        assertEquals(429, r.status());
        assertTrue(r.headers().firstValue("retry-after").isEmpty());
    }

    @Test
    void rateLimitedUntilADateSendsRetryAfterAsAnImfFixdate() {
        sim.enqueue("m", Fault.rateLimitedUntil(Instant.parse("2030-03-05T07:08:09Z")));
        SimHttp.Raw r = stream();
        assertEquals(429, r.status());
        assertEquals("Tue, 05 Mar 2030 07:08:09 GMT", r.headers().firstValue("retry-after").orElseThrow());
    }

    @Test
    void rateLimitedInMillisecondsSendsRetryAfterMsAndRetryAfterWhenGiven() {
        sim.enqueue("m", Fault.rateLimitedMillis(1500, null), Fault.rateLimitedMillis(250, 20));
        SimHttp.Raw alone = stream();
        assertEquals(429, alone.status());
        assertEquals("1500", alone.headers().firstValue("retry-after-ms").orElseThrow());
        assertTrue(alone.headers().firstValue("retry-after").isEmpty());
        SimHttp.Raw both = stream();
        assertEquals("250", both.headers().firstValue("retry-after-ms").orElseThrow());
        assertEquals("20", both.headers().firstValue("retry-after").orElseThrow());
    }

    @Test
    void anErrorSendsItsExtraHeadersAsGiven() {
        sim.enqueue("m", Fault.rateLimitedWith(Map.of("retry-after-ms", "soon", "x-should-retry", "false")));
        SimHttp.Raw r = stream();
        assertEquals(429, r.status());
        assertEquals("soon", r.headers().firstValue("retry-after-ms").orElseThrow());
        assertEquals("false", r.headers().firstValue("x-should-retry").orElseThrow());
    }

    @ParameterizedTest
    @ValueSource(ints = {500, 502, 503, 504, 529})
    void serverErrorStatusesCarryTheErrorEnvelope(int status) {
        sim.enqueue("m", Fault.status(status));
        SimHttp.Raw r = stream();
        assertEquals(status, r.status());
        JsonNode err = SimHttp.tree(r.text()).path("error");
        assertTrue(err.has("message") && err.has("type") && err.has("code") && err.has("param"));
    }

    @Test
    void contextLengthExceededIs400() {
        sim.enqueue("m", Fault.contextLengthExceeded());
        HttpResponse<String> r = http.post("/v1/chat/completions", SimHttp.chat("m", PROMPT, false));
        assertEquals(400, r.statusCode());
        assertEquals("context_length_exceeded", SimHttp.tree(r.body()).path("error").path("code").asText());
    }

    @Test
    void contentFilterRefusalIs400() {
        sim.enqueue("m", Fault.contentFilter());
        SimHttp.Raw r = stream();
        assertEquals(400, r.status());
        assertEquals("content_filter", SimHttp.tree(r.text()).path("error").path("code").asText());
    }

    @Test
    void errorResponseWaitsItsScriptedDelay() {
        sim.enqueue("m", new Fault.HttpError(503, "service_unavailable", null, "busy", 1, 150));
        SimHttp.Raw r = stream();
        assertEquals(503, r.status());
        assertTrue(r.elapsedMs() >= 150, "elapsed " + r.elapsedMs());
    }

    @Test
    void connectionResetBeforeHeaders() {
        sim.enqueue("m", Fault.reset());
        SimHttp.Raw r = stream();
        assertEquals(-1, r.status());
        assertNotNull(r.error());
        eventually(() -> sim.stats("m").dropped() == 1, "dropped");
    }

    @Test
    void noResponseAtAllLeavesTheCallerWaitingUntilItGivesUp() {
        sim.enqueue("m", Fault.noResponse());
        SimHttp.Raw r = stream(Duration.ofMillis(300));
        assertEquals(-1, r.status());
        assertTrue(r.error() instanceof java.net.http.HttpTimeoutException, String.valueOf(r.error()));
        eventually(() -> sim.stats("m").cancelled() == 1, "cancelled");
        assertEquals(0, sim.stats("m").inFlight());
    }

    @Test
    void dropAfterNTokensResetsTheConnection() {
        sim.enqueue("m", Fault.dropAfter(5));
        SimHttp.Raw r = stream();
        assertEquals(200, r.status());
        assertNotNull(r.error(), "a reset must surface as an I/O error");
        assertEquals(expected(5), r.content());
        assertFalse(r.text().contains("finish_reason\":\"stop"));
        eventually(() -> sim.stats("m").dropped() == 1, "dropped");
        assertEquals(0, sim.stats("m").cancelled());
    }

    /**
     * A fault counts the content chunks of the whole stream, whatever their choice: a stream of two choices dropped
     * after five has three of the first choice's tokens and two of the second's, and neither finished.
     */
    @Test
    void aFaultActsOnAStreamOfSeveralChoicesAsOnOne() {
        sim.enqueue("m", Fault.dropAfter(5));
        SimHttp.Raw r = http.stream(SimHttp.chat("m", PROMPT, true).replace("\"stream\":true",
                "\"stream\":true,\"n\":2"));
        assertEquals(200, r.status());
        assertNotNull(r.error(), "a reset must surface as an I/O error");
        StringBuilder[] texts = {new StringBuilder(), new StringBuilder()};
        for (JsonNode c : r.chunks()) {
            for (JsonNode choice : c.path("choices")) {
                texts[choice.path("index").asInt()].append(choice.path("delta").path("content").asText(""));
                assertTrue(choice.path("finish_reason").isNull(), c.toString());
            }
        }
        assertEquals(expected(3), texts[0].toString());
        assertEquals(SimText.expected(SEED + 1, PROMPT, 2), texts[1].toString());
        eventually(() -> sim.stats("m").dropped() == 1, "dropped");
    }

    @Test
    void dropInTheMiddleOfAMultiByteCharacter() {
        sim.enqueue("m", Fault.dropMidCodePoint(3));
        List<String> tokens = SimText.tokens(SEED, PROMPT, LENGTH);
        int j = 3;
        while (tokens.get(j).chars().allMatch(c -> c < 128)) {
            j++;
        }
        SimHttp.Raw r = stream();
        assertNotNull(r.error());
        assertEquals(expected(j), r.content());
        byte[] bytes = r.bytes();
        String tail = r.text().substring(r.text().lastIndexOf("\n\n") + 2);
        assertTrue(tail.startsWith("data: {"), tail);
        // The last byte is a UTF-8 lead or continuation byte of a character left incomplete.
        int last = bytes[bytes.length - 1] & 0xff;
        assertTrue(last >= 0x80, "last byte " + Integer.toHexString(last));
        String token = tokens.get(j);
        int cp = token.codePoints().filter(c -> c >= 128).findFirst().orElseThrow();
        byte[] full = new String(Character.toChars(cp)).getBytes(StandardCharsets.UTF_8);
        byte[] got = java.util.Arrays.copyOfRange(bytes, bytes.length - full.length / 2, bytes.length);
        assertArrayEquals(java.util.Arrays.copyOf(full, full.length / 2), got);
    }

    @Test
    void emptyStreamWithRoleChunkOnly() {
        sim.enqueue("m", new Fault.EmptyStream(true));
        SimHttp.Raw r = stream();
        assertEquals(200, r.status());
        assertNull(r.error());
        assertEquals(1, r.chunks().size());
        assertEquals("", r.content());
        assertFalse(r.text().contains("[DONE]"));
    }

    @Test
    void emptyStreamWithHeadersOnly() {
        sim.enqueue("m", new Fault.EmptyStream(false));
        SimHttp.Raw r = stream();
        assertEquals(200, r.status());
        assertNull(r.error());
        assertEquals(0, r.bytes().length);
    }

    @Test
    void hangAfterFinishSendsTheWholeAnswerThenKeepsTheStreamOpen() {
        sim.enqueue("m", Fault.hangAfterFinish());
        SimHttp.Raw r = stream(Duration.ofMillis(400));
        assertNotNull(r.error(), "still open when the caller gave up");
        assertEquals(expected(LENGTH), r.content());
        assertFalse(r.text().contains("[DONE]"));
        List<JsonNode> chunks = r.chunks();
        assertEquals("stop", chunks.get(chunks.size() - 1).path("choices").path(0).path("finish_reason").asText());
        eventually(() -> sim.stats("m").cancelled() == 1, "cancelled");
    }

    @Test
    void streamEndsAfterFinishReasonWithoutDone() {
        sim.enqueue("m", new Fault.NoDone());
        SimHttp.Raw r = stream();
        assertNull(r.error());
        assertEquals(expected(LENGTH), r.content());
        assertFalse(r.text().contains("[DONE]"));
        List<JsonNode> chunks = r.chunks();
        assertEquals("stop", chunks.get(chunks.size() - 1).path("choices").path(0).path("finish_reason").asText());
    }

    @Test
    void streamEndsCleanlyBeforeAnyFinishReason() {
        sim.enqueue("m", new Fault.EofBeforeFinish(4));
        SimHttp.Raw r = stream();
        assertNull(r.error());
        assertEquals(expected(4), r.content());
        assertFalse(r.text().contains("[DONE]"));
        assertTrue(r.chunks().stream().allMatch(c -> c.path("choices").path(0).path("finish_reason").isNull()));
        eventually(() -> sim.stats("m").completed() == 1, "completed");
    }

    @Test
    void malformedDataFrameInTheMiddle() {
        sim.enqueue("m", new Fault.MalformedFrame(3));
        SimHttp.Raw r = stream();
        List<String> data = r.data();
        int bad = -1;
        StringBuilder content = new StringBuilder();
        for (int i = 0; i < data.size(); i++) {
            if (data.get(i).equals("[DONE]")) {
                continue;
            }
            try {
                JsonNode n = SimHttp.JSON.readTree(data.get(i));
                content.append(n.path("choices").path(0).path("delta").path("content").asText(""));
            } catch (java.io.IOException e) {
                bad = i;
                assertEquals(expected(3), content.toString());
            }
        }
        assertTrue(bad > 0);
        assertEquals(expected(LENGTH), content.toString());
        assertTrue(r.endsWithDone());
    }

    @Test
    void upstreamErrorEventMidStream() {
        sim.enqueue("m", new Fault.ErrorEvent(6, "overloaded", "server_overloaded"));
        SimHttp.Raw r = stream();
        assertEquals(200, r.status());
        List<JsonNode> chunks = r.chunks();
        JsonNode last = chunks.get(chunks.size() - 1);
        assertEquals("server_overloaded", last.path("error").path("code").asText());
        assertEquals("overloaded", last.path("error").path("message").asText());
        assertEquals(expected(6), r.content());
        assertFalse(r.endsWithDone());
    }

    @Test
    void stallStopsSendingForTheScriptedTime() {
        sim.script("m", ModelScript.defaults().withLength(LENGTH));
        sim.enqueue("m", Fault.stall(4, 250));
        SimHttp.Raw r = stream();
        assertNull(r.error());
        assertEquals(expected(LENGTH), r.content());
        assertTrue(r.elapsedMs() >= 250, "elapsed " + r.elapsedMs());
    }

    @Test
    void stallForeverAfterNTokensUntilTheCallerHangsUp() {
        sim.enqueue("m", Fault.stallForever(4));
        SimHttp.Raw r = stream(Duration.ofMillis(400));
        assertNotNull(r.error());
        assertEquals(expected(4), r.content());
        eventually(() -> sim.stats("m").cancelled() == 1, "cancelled");
    }

    @Test
    void aStallKeptAliveSendsNoMoreTokensButAKeepAliveCommentOnItsBeat() {
        sim.enqueue("m", Fault.stallKeptAlive(4, 50));
        // some 30 beats before the caller gives up: 3 must come even on a loaded machine (400 ms once saw only 2)
        SimHttp.Raw r = stream(Duration.ofMillis(1500));
        assertNotNull(r.error(), "still open when the caller gave up");
        assertEquals(expected(4), r.content());
        assertTrue(r.text().split(": keep-alive", -1).length - 1 >= 3, r.text());
        assertFalse(r.text().contains("finish_reason\":\"stop"), r.text());
        eventually(() -> sim.stats("m").cancelled() == 1, "cancelled");
    }

    @Test
    void aStallKeptAliveByEmptyChunksSendsChunksWithoutText() {
        sim.enqueue("m", Fault.stallKeptAliveByEmptyChunks(4, 50));
        SimHttp.Raw r = stream(Duration.ofMillis(400));
        assertNotNull(r.error());
        assertEquals(expected(4), r.content());
        // the role chunk, 4 tokens, then at least 3 heartbeats, none with text or a finish
        assertTrue(r.chunks().size() >= 1 + 4 + 3, r.text());
        assertTrue(r.chunks().stream().allMatch(c -> c.path("choices").path(0).path("finish_reason").isNull()));
        eventually(() -> sim.stats("m").cancelled() == 1, "cancelled");
    }

    @Test
    void aStallKeptAliveReadsFromControlJson() {
        assertEquals(Fault.stallKeptAlive(3, 50), SimJson.read("{\"kind\":\"stall_kept_alive\",\"after_tokens\":3,"
                + "\"every_ms\":50}", Fault.class));
        assertEquals(Fault.stallKeptAliveByEmptyChunks(3, 50), SimJson.read("{\"kind\":\"stall_kept_alive\","
                + "\"after_tokens\":3,\"every_ms\":50,\"empty_chunks\":true}", Fault.class));
    }

    /**
     * A gate holds the stream after its tokens until the test opens it: while it waits, the client has exactly those
     * tokens (the stream is read on another thread, its bytes collected as they come), then the rest follows.
     */
    @Test
    void aGateHoldsTheStreamUntilItIsOpenedThenTheRestFollows() throws Exception {
        sim.enqueue("m", Fault.gate(4, "g"));
        java.util.concurrent.CompletableFuture<SimHttp.Raw> r = java.util.concurrent.CompletableFuture.supplyAsync(
                () -> stream(Duration.ofSeconds(30)));
        eventually(() -> sim.gate("g").waiting() == 1, "the stream waits at the gate");
        assertEquals(new Gates.State(1, 0, 0, false), sim.gate("g"));
        assertFalse(r.isDone());
        assertEquals(0, sim.stats("m").completed());
        sim.openGate("g");
        SimHttp.Raw out = r.get(30, java.util.concurrent.TimeUnit.SECONDS);
        assertNull(out.error());
        assertEquals(expected(LENGTH), out.content());
        assertTrue(out.endsWithDone());
        assertEquals(new Gates.State(0, 1, 0, true), sim.gate("g"));
    }

    /** A gate that is never opened: the stream has the tokens before it, and hanging up there leaves the gate. */
    @Test
    void aStreamWaitingAtAClosedGateHasOnlyTheTokensBeforeIt() {
        sim.enqueue("m", Fault.gate(4, "shut"));
        SimHttp.Raw r = stream(Duration.ofMillis(400));
        assertNotNull(r.error(), "still waiting when the caller gave up");
        assertEquals(expected(4), r.content());
        eventually(() -> sim.stats("m").cancelled() == 1, "cancelled");
        assertEquals(new Gates.State(0, 0, 0, false), sim.gate("shut"));
    }

    @Test
    void aGateWithATimeLimitLetsTheStreamGoOnByItself() {
        sim.enqueue("m", Fault.gate(4, "limited", 50));
        SimHttp.Raw r = stream();
        assertNull(r.error());
        assertEquals(expected(LENGTH), r.content());
        assertEquals(new Gates.State(0, 1, 1, false), sim.gate("limited"));
    }

    @Test
    void aGateOpenedOverTheControlApiLetsEveryLaterStreamPass() {
        HttpResponse<String> opened = http.post("/sim/gates/open%20early", "");
        assertEquals(200, opened.statusCode());
        assertTrue(SimHttp.tree(opened.body()).path("opened").asBoolean(), opened.body());
        assertEquals(200, http.post("/sim/models/m/faults", "{\"kind\":\"gate\",\"after_tokens\":3,"
                + "\"name\":\"open early\",\"timeout_ms\":-1}").statusCode());
        SimHttp.Raw r = stream();
        assertEquals(expected(LENGTH), r.content());
        JsonNode state = SimHttp.tree(http.get("/sim/gates/open%20early").body());
        assertEquals(1, state.path("passed").asInt(), state.toString());
        assertEquals(0, state.path("waiting").asInt(), state.toString());
        assertEquals(Fault.gate(3, "g"), SimJson.read("{\"kind\":\"gate\",\"after_tokens\":3,\"name\":\"g\","
                + "\"timeout_ms\":-1}", Fault.class));
    }

    /** A non-streamed answer waits at the gate whole. */
    @Test
    void aNonStreamedAnswerWaitsAtTheGate() throws Exception {
        sim.enqueue("m", Fault.gate(4, "whole"));
        java.util.concurrent.CompletableFuture<HttpResponse<String>> r = java.util.concurrent.CompletableFuture
                .supplyAsync(() -> http.post("/v1/chat/completions", SimHttp.chat("m", PROMPT, false)));
        eventually(() -> sim.gate("whole").waiting() == 1, "the answer waits at the gate");
        assertFalse(r.isDone());
        sim.openGate("whole");
        HttpResponse<String> out = r.get(30, java.util.concurrent.TimeUnit.SECONDS);
        assertEquals(200, out.statusCode());
        assertEquals(expected(LENGTH), SimHttp.tree(out.body()).path("choices").path(0).path("message")
                .path("content").asText());
    }

    @Test
    void clientHangUpMidStreamIsCountedAsCancelledAndStopsGeneration() throws Exception {
        sim.script("m", ModelScript.defaults().withLength(200).withLatency(ModelScript.Latency.of(0, 100)));
        String body = SimHttp.chat("m", PROMPT, true);
        try (Socket s = new Socket("127.0.0.1", sim.port())) {
            OutputStream out = s.getOutputStream();
            out.write(("POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                    + "Content-Length: " + body.getBytes(StandardCharsets.UTF_8).length + "\r\n\r\n" + body)
                    .getBytes(StandardCharsets.UTF_8));
            out.flush();
            InputStream in = s.getInputStream();
            byte[] buf = new byte[4096];
            int n = 0;
            while (n < 600) {
                int k = in.read(buf);
                assertTrue(k > 0);
                n += k;
            }
            eventually(() -> sim.stats("m").running() == 1, "running");
        }
        eventually(() -> sim.stats("m").cancelled() == 1, "cancelled");
        SimStats st = sim.stats("m");
        assertEquals(0, st.inFlight());
        assertEquals(0, st.completed());
        assertEquals(0, st.dropped());
    }

    @Test
    void oneShotFaultsAreServedInFifoOrderThenNormalService() {
        sim.enqueue("m", Fault.status(503), Fault.rateLimited(1));
        assertEquals(503, stream().status());
        assertEquals(429, stream().status());
        SimHttp.Raw ok = stream();
        assertEquals(200, ok.status());
        assertEquals(expected(LENGTH), ok.content());
        assertEquals(2, sim.stats("m").faulted());
    }

    @Test
    void faultsForOneModelDoNotTouchAnother() {
        sim.script("other", ModelScript.defaults());
        sim.enqueue("m", Fault.status(500));
        assertEquals(200, http.stream(SimHttp.chat("other", PROMPT, true)).status());
        assertEquals(500, stream().status());
    }

    @Test
    void probabilisticFaultsAreSeededAndRepeatable() {
        ModelScript flaky = ModelScript.defaults().withLength(3).withSeed(1234)
                .withFaults(List.of(new ModelScript.FaultChance(0.5, Fault.status(503))));
        List<Integer> first = statuses(flaky);
        List<Integer> second = statuses(flaky);
        assertEquals(first, second);
        assertTrue(first.contains(503) && first.contains(200), first.toString());
    }

    private List<Integer> statuses(ModelScript script) {
        sim.script("flaky", script);
        List<Integer> out = new ArrayList<>();
        for (int i = 0; i < 12; i++) {
            out.add(http.post("/v1/chat/completions", SimHttp.chat("flaky", PROMPT, false)).statusCode());
        }
        return out;
    }

    @Test
    void nonStreamingDropResetsTheConnection() {
        sim.enqueue("m", Fault.dropAfter(3));
        assertThrowsIo(() -> http.post("/v1/chat/completions", SimHttp.chat("m", PROMPT, false)));
    }

    @Test
    void nonStreamingErrorEventBecomes500() {
        sim.enqueue("m", new Fault.ErrorEvent(3, null, null));
        assertEquals(500, http.post("/v1/chat/completions", SimHttp.chat("m", PROMPT, false)).statusCode());
    }

    @Test
    void faultsCanBeQueuedThroughTheControlEndpoint() {
        HttpResponse<String> r = http.post("/sim/models/m/faults",
                "[{\"kind\":\"http_error\",\"status\":429,\"retry_after_seconds\":3,"
                        + "\"headers\":{\"retry-after-ms\":\"2500\"}},{\"kind\":\"drop\",\"after_tokens\":2}]");
        assertEquals(200, r.statusCode());
        assertEquals(2, SimHttp.tree(r.body()).path("queued").asInt());
        SimHttp.Raw limited = stream();
        assertEquals(429, limited.status());
        assertEquals("3", limited.headers().firstValue("retry-after").orElseThrow());
        assertEquals("2500", limited.headers().firstValue("retry-after-ms").orElseThrow());
        SimHttp.Raw dropped = stream();
        assertEquals(expected(2), dropped.content());
        assertNotNull(dropped.error());
        http.post("/sim/models/m/faults", "{\"kind\":\"reset\"}");
        assertEquals(204, http.delete("/sim/faults").statusCode());
        assertEquals(200, stream().status());
    }

    private static void assertThrowsIo(Runnable r) {
        try {
            r.run();
        } catch (java.io.UncheckedIOException e) {
            return;
        }
        throw new AssertionError("expected an I/O error");
    }

    // ---- embeddings: the same one-shot faults, played as on a whole answer ----

    private SimHttp.Raw embeddings(Duration timeout) {
        return http.raw("/embeddings", "{\"model\":\"m\",\"input\":[\"a\",\"b\"]}", timeout);
    }

    @Test
    void anEmbeddingsRequestGetsAnErrorStatusWithItsRetryAfter() {
        sim.enqueue("m", Fault.rateLimited(7), Fault.status(500));
        SimHttp.Raw limited = embeddings(Duration.ofSeconds(10));
        assertEquals(429, limited.status());
        assertEquals("7", limited.headers().firstValue("retry-after").orElseThrow());
        assertEquals("rate_limit_exceeded", SimHttp.tree(limited.text()).path("error").path("code").asText());
        assertEquals(500, embeddings(Duration.ofSeconds(10)).status());
        SimHttp.Raw served = embeddings(Duration.ofSeconds(10));
        assertEquals(200, served.status());
        assertEquals(2, SimHttp.tree(served.text()).path("data").size());
    }

    @Test
    void anEmbeddingsRequestIsResetBeforeTheHead() {
        sim.enqueue("m", Fault.reset());
        SimHttp.Raw r = embeddings(Duration.ofSeconds(10));
        assertEquals(-1, r.status());
        assertNotNull(r.error());
        eventually(() -> sim.stats("m").dropped() == 1, "dropped");
    }

    @Test
    void anEmbeddingsRequestWithNoResponseIsNeverAnswered() {
        sim.enqueue("m", Fault.noResponse());
        SimHttp.Raw r = embeddings(Duration.ofMillis(300));
        assertEquals(-1, r.status());
        assertTrue(r.error() instanceof java.net.http.HttpTimeoutException, String.valueOf(r.error()));
        eventually(() -> sim.stats("m").cancelled() == 1, "cancelled");
    }

    @Test
    void anEmbeddingsRequestStalledIsAnsweredAfterTheDelay() {
        sim.enqueue("m", Fault.stall(0, 200));
        SimHttp.Raw r = embeddings(Duration.ofSeconds(10));
        assertEquals(200, r.status());
        assertTrue(r.elapsedMs() >= 200, "elapsed " + r.elapsedMs());
    }

    @Test
    void anEmbeddingsRequestMayGetMalformedJsonBehindA200() {
        sim.enqueue("m", new Fault.MalformedFrame(0));
        SimHttp.Raw r = embeddings(Duration.ofSeconds(10));
        assertEquals(200, r.status());
        assertThrowsOnParse(r.text());
    }

    private static void assertThrowsOnParse(String text) {
        try {
            SimHttp.JSON.readTree(text);
        } catch (java.io.IOException e) {
            return;
        }
        throw new AssertionError("parsed: " + text);
    }
}
