package dev.hedgerow.dispatch;

import dev.hedgerow.api.ChatRequest;
import dev.hedgerow.api.ProviderPrefs;
import dev.hedgerow.catalog.CatalogLoader;
import dev.hedgerow.catalog.GroupSettings;
import dev.hedgerow.catalog.Org;
import dev.hedgerow.dispatch.DispatchTimingTest.RecordingSink;
import dev.hedgerow.routing.Candidate;
import dev.hedgerow.routing.RequestFacts;
import dev.hedgerow.routing.RoutePlan;
import dev.hedgerow.routing.TtftEstimate;
import dev.hedgerow.state.MemoryStateStore;
import dev.hedgerow.state.RouteSnapshot;
import dev.hedgerow.testsupport.DispatchFixture;
import dev.hedgerow.time.FakeScheduler;
import dev.hedgerow.time.FakeTicker;
import dev.hedgerow.upstream.UpstreamClient;
import dev.hedgerow.upstream.UpstreamHandler;
import dev.hedgerow.upstream.UpstreamRequest;
import org.junit.jupiter.api.Test;

import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Set;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Kong's write_timeout and read_timeout in dispatch, and the breaker's success reporting, on fake time: an upstream
 * client the test answers by hand (it reports when the body is sent, as the Vert.x client does), a
 * {@link FakeScheduler} and a {@link MemoryStateStore} on the same {@link FakeTicker}.
 */
class KongTimeoutsDispatchTest {
    static final String YAML = """
            orgs:
              - id: acme
                keys: [{ name: app, key: "k" }]
                providers:
                  - { id: p, base_url: "http://127.0.0.1:9/v1" }
                routes:
                  - { id: a, alias: kt, provider: p, model: m-a }
                  - { id: b, alias: kt, provider: p, model: m-b }
                groups:
                  kt: { hedging: false, connect_timeout: 1s, write_timeout: 2s, read_timeout: 5s,
                        breaker: { max_fails: 3, fail_timeout: 10s } }
            """;
    static final String COMPLETION = "{\"id\":\"x\",\"object\":\"chat.completion\",\"choices\":[{\"index\":0,"
            + "\"message\":{\"role\":\"assistant\",\"content\":\"hi\"},\"finish_reason\":\"stop\"}],"
            + "\"usage\":{\"prompt_tokens\":1,\"completion_tokens\":1,\"total_tokens\":2}}";

    final FakeTicker ticker = new FakeTicker();
    final FakeScheduler scheduler = new FakeScheduler(ticker);
    final MemoryStateStore store = new MemoryStateStore(ticker);
    final HandUpstream upstream = new HandUpstream();
    final Org org = new CatalogLoader(n -> null).parse(YAML).orgs().get(0);
    final RecordingSink sink = new RecordingSink();

    /** An upstream whose exchanges the test drives: it records each request and its handler. */
    static final class HandUpstream implements UpstreamClient {
        final List<UpstreamRequest> requests = new ArrayList<>();
        final List<UpstreamHandler> handlers = new ArrayList<>();

        @Override
        public Exchange send(UpstreamRequest request, UpstreamHandler handler) {
            requests.add(request);
            handlers.add(handler);
            return new Exchange() {
                @Override
                public void cancel() {
                }

                @Override
                public boolean reportsSent() {
                    return true;
                }
            };
        }

        void answer(int i) {
            UpstreamHandler h = handlers.get(i);
            h.onHead(200, Map.of("content-type", "application/json"));
            h.onData(COMPLETION.getBytes(StandardCharsets.UTF_8));
            h.onEnd();
        }
    }

    private void start(RouteSnapshot aState) {
        start(aState, null);
    }

    private void start(RouteSnapshot aState, Integer maxTokens) {
        start(aState, maxTokens, false);
    }

    private void start(RouteSnapshot aState, Integer maxTokens, boolean stream) {
        start(aState, maxTokens, stream, org.group("kt"));
    }

    private void start(RouteSnapshot aState, Integer maxTokens, boolean stream, GroupSettings settings) {
        Dispatcher dispatcher = new Dispatcher(DispatchFixture.deps(upstream, store, scheduler, ticker,
                String::length, new DispatchObserver() { }));
        ChatRequest chat = ChatRequest.parse(("{\"model\":\"kt\",\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}]"
                + (maxTokens == null ? "" : ",\"max_tokens\":" + maxTokens) + (stream ? ",\"stream\":true" : "")
                + "}").getBytes(StandardCharsets.UTF_8), null);
        RequestFacts facts = new RequestFacts(1, maxTokens, stream, false, Set.of(), Set.of(), ProviderPrefs.NONE,
                List.of(), Map.of(), "hi");
        List<Candidate> cands = List.of(candidate("a", aState), candidate("b", RouteSnapshot.empty("acme/b")));
        dispatcher.start(new DispatchRequest("req-1", 0, org, "app", "kt", settings, chat, facts, cands,
                RoutePlan.NEVER), sink);
    }

    /**
     * The first attempt's head, then one byte of the completion every 4 s, {@code reads} times (within
     * read_timeout each); with {@code finish} the rest of the body and its end.
     */
    private void trickle(int reads, boolean finish) {
        UpstreamHandler h = upstream.handlers.get(0);
        h.onSent();
        h.onHead(200, Map.of("content-type", "application/json"));
        byte[] body = COMPLETION.getBytes(StandardCharsets.UTF_8);
        for (int i = 0; i < reads; i++) {
            scheduler.advance(Duration.ofSeconds(4));
            h.onData(java.util.Arrays.copyOfRange(body, i, i + 1));
        }
        if (finish) {
            h.onData(java.util.Arrays.copyOfRange(body, reads, body.length));
            h.onEnd();
        }
    }

    private Candidate candidate(String id, RouteSnapshot state) {
        return DispatchFixture.candidate(org, id, state, false, TtftEstimate.UNKNOWN);
    }

    @Test
    void writeTimeoutFailsOverWhenTheBodyIsNotSentWithinConnectPlusWrite() {
        start(RouteSnapshot.empty("acme/a"));
        scheduler.advance(Duration.ofMillis(2_900));
        assertEquals(1, upstream.requests.size(), "still within connect_timeout + write_timeout");
        scheduler.advance(Duration.ofMillis(200));
        assertEquals(2, upstream.requests.size(), "failed over after 3 s");
        upstream.handlers.get(1).onSent();
        upstream.answer(1);
        assertEquals(200, sink.status);
        assertTrue(sink.headers.get("x-hedgerow-attempts").contains("\"error\":\"timeout_write\""),
                sink.headers.toString());
    }

    /**
     * Kong's write_timeout counts from the connection: a send that stalls right after it fails write_timeout later,
     * not connect_timeout + write_timeout after the attempt's start (found by hunt22).
     */
    @Test
    void writeTimeoutCountsFromTheConnection() {
        start(RouteSnapshot.empty("acme/a"));
        scheduler.advance(Duration.ofMillis(100));
        upstream.handlers.get(0).onConnected();
        scheduler.advance(Duration.ofMillis(1_900));
        assertEquals(1, upstream.requests.size(), "connected 1.9 s ago: within write_timeout");
        scheduler.advance(Duration.ofMillis(200));
        assertEquals(2, upstream.requests.size(), "failed over 2 s after the connection, not at 3 s");
        upstream.handlers.get(1).onSent();
        upstream.answer(1);
        assertEquals(200, sink.status);
        String trail = sink.headers.get("x-hedgerow-attempts");
        assertTrue(trail.contains("\"error\":\"timeout_write\"") && trail.contains("\"duration_ms\":2100"), trail);
    }

    @Test
    void readTimeoutCountsFromTheSentBodyToAStreamsResponseHead() {
        start(RouteSnapshot.empty("acme/a"), null, true);
        scheduler.advance(Duration.ofMillis(2_500));
        upstream.handlers.get(0).onSent();
        scheduler.advance(Duration.ofMillis(4_900));
        assertEquals(1, upstream.requests.size(), "sent 4.9 s ago: within read_timeout");
        scheduler.advance(Duration.ofMillis(200));
        assertEquals(2, upstream.requests.size());
        UpstreamHandler b = upstream.handlers.get(1);
        b.onSent();
        b.onHead(200, Map.of("content-type", "text/event-stream"));
        b.onData(("data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"hi\"},\"finish_reason\":\"stop\"}]}"
                + "\n\ndata: [DONE]\n\n").getBytes(StandardCharsets.UTF_8));
        b.onEnd();
        assertEquals(200, sink.status);
        assertTrue(sink.text().contains("\"error\":\"timeout_read\""), sink.text());
    }

    /**
     * Most providers send a non-streamed answer's head only with the whole answer: its head is waited for as long
     * as the answer is (with max_tokens 100, the 30 s first-token ceiling), not read_timeout (5 s), and a silent
     * upstream is then abandoned for the next route.
     */
    @Test
    void aNonStreamedResponseHeadIsWaitedForAsLongAsTheAnswerNotReadTimeout() {
        start(RouteSnapshot.empty("acme/a"), 100);
        scheduler.advance(Duration.ofMillis(2_500));
        upstream.handlers.get(0).onSent();
        scheduler.advance(Duration.ofMillis(27_400));
        assertEquals(1, upstream.requests.size(), "29.9 s: within the answer's wait, far past read_timeout");
        scheduler.advance(Duration.ofMillis(200));
        assertEquals(2, upstream.requests.size(), "abandoned after 30 s");
        upstream.handlers.get(1).onSent();
        upstream.answer(1);
        assertEquals(200, sink.status);
        assertTrue(sink.headers.get("x-hedgerow-attempts").contains("\"error\":\"timeout_no_response\""),
                sink.headers.toString());
    }

    /**
     * Without max_tokens a non-streamed answer's wait covers 32 k tokens (half an hour at the SLO speed); its head is
     * waited for 10 minutes at most, so a provider that took the request and went silent is left after that.
     */
    @Test
    void aNonStreamedResponseHeadIsWaitedForTenMinutesAtMost() {
        start(RouteSnapshot.empty("acme/a"));
        upstream.handlers.get(0).onSent();
        scheduler.advance(Duration.ofMinutes(10).minusMillis(1));
        assertEquals(1, upstream.requests.size(), "within 10 min");
        scheduler.advance(Duration.ofMillis(1));
        assertEquals(2, upstream.requests.size(), "left after 10 min");
        upstream.handlers.get(1).onSent();
        upstream.answer(1);
        assertEquals(200, sink.status);
        assertTrue(sink.headers.get("x-hedgerow-attempts").contains("\"error\":\"timeout_read\""),
                sink.headers.toString());
    }

    @Test
    void aResponseHeadStopsTheReadTimerOnTheHeadAndStartsItBetweenReadsOfTheBody() {
        start(RouteSnapshot.empty("acme/a"));
        upstream.handlers.get(0).onSent();
        upstream.handlers.get(0).onHead(200, Map.of("content-type", "application/json"));
        scheduler.advance(Duration.ofMillis(4_900));
        byte[] body = COMPLETION.getBytes(StandardCharsets.UTF_8);
        upstream.handlers.get(0).onData(java.util.Arrays.copyOf(body, 10));
        scheduler.advance(Duration.ofMillis(4_900));
        assertEquals(1, upstream.requests.size(), "each read came within read_timeout of the one before");
        upstream.handlers.get(0).onData(java.util.Arrays.copyOfRange(body, 10, body.length));
        upstream.handlers.get(0).onEnd();
        assertEquals(200, sink.status);
    }

    /** As nginx's proxy_read_timeout: a body that stops arriving for read_timeout is a dead upstream. */
    /**
     * With request_timeout set, read_timeout bounds every silence of an attempt, as Kong's does: a stream whose head
     * came and then only keep-alive comments is given up on at read_timeout (5 s), not at first_token_ceiling (30 s).
     * Nothing tested it (found by hunt25's mutation testing).
     */
    @Test
    void withARequestTimeoutAStreamSilentBehindKeepAlivesIsGivenUpOnAtReadTimeout() {
        GroupSettings bounded = new CatalogLoader(n -> null).parse(YAML.replace("read_timeout: 5s,",
                "read_timeout: 5s, request_timeout: 60s, first_token_ceiling: 30s,")).orgs().get(0).group("kt");
        start(RouteSnapshot.empty("acme/a"), null, true, bounded);
        UpstreamHandler h = upstream.handlers.get(0);
        h.onSent();
        h.onHead(200, Map.of("content-type", "text/event-stream"));
        for (int i = 0; i < 4; i++) {
            scheduler.advance(Duration.ofSeconds(1));
            h.onData(": keep-alive\n\n".getBytes(StandardCharsets.UTF_8));
        }
        scheduler.advance(Duration.ofMillis(900));
        assertEquals(1, upstream.requests.size(), "still waited for within read_timeout");
        scheduler.advance(Duration.ofMillis(200));
        assertEquals(2, upstream.requests.size(), "given up on at read_timeout for the other route");
    }

    @Test
    void aBodySilentForReadTimeoutAfterItsHeadFailsOver() {
        start(RouteSnapshot.empty("acme/a"));
        upstream.handlers.get(0).onSent();
        upstream.handlers.get(0).onHead(200, Map.of("content-type", "application/json"));
        upstream.handlers.get(0).onData("{\"id\":".getBytes(StandardCharsets.UTF_8));
        scheduler.advance(Duration.ofMillis(5_000));
        assertEquals(2, upstream.requests.size());
        upstream.handlers.get(1).onSent();
        upstream.answer(1);
        assertEquals(200, sink.status);
        assertTrue(sink.headers.get("x-hedgerow-attempts").contains("\"error\":\"timeout_read\""),
                sink.headers.toString());
    }

    /**
     * A non-streamed answer is silent until whole: without max_tokens it may take as long as the longest answer
     * takes to write, far past first_token_ceiling (30 s), and is not abandoned while its body keeps arriving.
     */
    @Test
    void aLongNonStreamedAnswerIsNotAbandonedAtTheFirstTokenCeiling() {
        start(RouteSnapshot.empty("acme/a"));
        trickle(30, true);   // 120 s in all
        assertEquals(1, upstream.requests.size());
        assertEquals(200, sink.status);
    }

    /** With max_tokens the wait is what writing that many tokens takes (here under the 30 s ceiling, so 30 s). */
    @Test
    void aShortNonStreamedAnswerIsStillAbandonedAtItsOwnWait() {
        start(RouteSnapshot.empty("acme/a"), 100);
        trickle(8, false);   // 32 s
        assertEquals(2, upstream.requests.size());
        upstream.handlers.get(1).onSent();
        upstream.answer(1);
        assertTrue(sink.headers.get("x-hedgerow-attempts").contains("\"error\":\"timeout_first_token\""),
                sink.headers.toString());
    }

    @Test
    void aSuccessOutlastingFailTimeoutIsReportedSoKongsResetHappens() {
        // the snapshot showed no failures; another instance records one just after it, then this request runs
        // for longer than fail_timeout: Kong resets the counter on this success, so dispatch must report it
        start(RouteSnapshot.empty("acme/a"));
        store.recordFailure("acme/a", 3, Duration.ofSeconds(10)).await().indefinitely();
        trickle(3, true);   // 12 s
        assertEquals(200, sink.status);
        RouteSnapshot after = store.snapshot(List.of("acme/a"), Duration.ofMinutes(1)).await().indefinitely()
                .get("acme/a");
        assertEquals(0, after.fails());
    }

    @Test
    void aQuickSuccessInsideFailTimeoutLeavesTheCounterAlone() {
        start(RouteSnapshot.empty("acme/a"));
        store.recordFailure("acme/a", 3, Duration.ofSeconds(10)).await().indefinitely();
        upstream.handlers.get(0).onSent();
        scheduler.advance(Duration.ofSeconds(1));
        upstream.answer(0);
        RouteSnapshot after = store.snapshot(List.of("acme/a"), Duration.ofMinutes(1)).await().indefinitely()
                .get("acme/a");
        assertEquals(1, after.fails());
    }
}
