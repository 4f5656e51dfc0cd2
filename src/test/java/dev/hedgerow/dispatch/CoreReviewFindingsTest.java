package dev.hedgerow.dispatch;

import dev.hedgerow.api.ChatRequest;
import dev.hedgerow.api.ProviderPrefs;
import dev.hedgerow.catalog.CatalogLoader;
import dev.hedgerow.catalog.Org;
import dev.hedgerow.dispatch.DispatchTimingTest.Call;
import dev.hedgerow.dispatch.DispatchTimingTest.RecordingSink;
import dev.hedgerow.dispatch.DispatchTimingTest.ScriptedUpstream;
import dev.hedgerow.function.GatewayMetrics;
import dev.hedgerow.routing.Candidate;
import dev.hedgerow.routing.RequestFacts;
import dev.hedgerow.routing.RoutePlan;
import dev.hedgerow.routing.TtftEstimate;
import dev.hedgerow.state.MemoryStateStore;
import dev.hedgerow.state.RouteSnapshot;
import dev.hedgerow.state.StateStore;
import dev.hedgerow.state.UsageSample;
import dev.hedgerow.testsupport.DispatchFixture;
import dev.hedgerow.testsupport.Sse;
import dev.hedgerow.time.FakeScheduler;
import dev.hedgerow.time.FakeTicker;
import dev.hedgerow.upstream.UpstreamClient;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import io.smallrye.mutiny.Uni;
import org.junit.jupiter.api.Disabled;
import org.junit.jupiter.api.Test;

import java.lang.reflect.InvocationTargetException;
import java.lang.reflect.Proxy;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.function.Supplier;

import static org.junit.jupiter.api.Assertions.assertAll;
import static org.junit.jupiter.api.Assertions.assertDoesNotThrow;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Bugs found by a review of the request path, each shown on fake time with a scripted upstream and the memory store
 * (behind a proxy that can hold a store reply, the only way to order it exactly against an upstream event). Each
 * test states the behaviour the README promises, and each failed before its fix.
 */
class CoreReviewFindingsTest {
    static final String YAML = """
            orgs:
              - id: acme
                keys: [{ name: app, key: "k" }]
                providers:
                  - { id: a, base_url: "http://a.invalid/v1", dialect: vllm }
                  - { id: b, base_url: "http://b.invalid/v1", dialect: vllm }
                  - { id: c, base_url: "http://c.invalid/v1", dialect: vllm }
                routes:
                  - { alias: chat, provider: a, model: ma, capabilities: [prefill] }
                  - { alias: chat, provider: b, model: mb, capabilities: [prefill] }
                  - { alias: chat, provider: c, model: mc, capabilities: [prefill] }
                groups:
                  chat: { first_token_floor: 200ms, first_token_ceiling: 5s, stall_floor: 1s, head_hold: off,
                          breaker: { max_fails: 1, fail_timeout: 30s } }
            """;
    static final String B = "acme/chat-b";

    final FakeTicker ticker = new FakeTicker();
    final FakeScheduler scheduler = new FakeScheduler(ticker);
    final MemoryStateStore memory = new MemoryStateStore(ticker);
    final ScriptedUpstream upstream = new ScriptedUpstream();
    final RecordingSink sink = new RecordingSink();
    /** A write of a chunk that contains this text throws, once (null: none does). */
    String throwOnce;
    final ClientSink client = new ClientSink() {
        @Override
        public void head(int status, Map<String, String> headers) {
            sink.head(status, headers);
        }

        @Override
        public void write(byte[] bytes) {
            if (throwOnce != null && new String(bytes, StandardCharsets.UTF_8).contains(throwOnce)) {
                throwOnce = null;
                throw new IllegalStateException("a bug under the upstream callback");
            }
            sink.write(bytes);
        }

        @Override
        public void end() {
            sink.end();
        }
    };
    final HeldStore store = new HeldStore();
    final Org org = new CatalogLoader(k -> null).parse(YAML).orgs().get(0);
    final SimpleMeterRegistry meters = new SimpleMeterRegistry();
    final GatewayMetrics metrics = new GatewayMetrics(meters);
    /** What each finished request was billed (null: nothing). */
    final List<UsageSample> bills = new ArrayList<>();

    final DispatchObserver observer = new DispatchObserver() {
        @Override
        public void finished(DispatchRequest request, int status, List<AttemptRecord> trail, UsageSample billed,
                             Candidate served) {
            bills.add(billed);
            metrics.finished(request, status, trail, billed, served);
        }

        @Override
        public void hedge(DispatchRequest request, boolean fired) {
            metrics.hedge(request, fired);
        }

        @Override
        public void firstToken(Candidate route, int promptTokens, long ttftMs, boolean reasoningFirst) {
            firstTokens.add(route.route().id() + "@" + promptTokens);
            firstTokenMs.add(ttftMs);
        }
    };
    /** Each first token's time, as learnt. */
    final List<Long> firstTokenMs = new ArrayList<>();
    /** Each first token's route and the prompt size it was learnt at ("chat-a@10"). */
    final List<String> firstTokens = new ArrayList<>();

    double metric(String name, String... tags) {
        return meters.find(name).tags(tags).counters().stream().mapToDouble(c -> c.count()).sum();
    }

    Candidate healthy(String routeId) {
        return DispatchFixture.candidate(org, routeId, RouteSnapshot.empty("acme/" + routeId), false,
                new TtftEstimate(150, 300, true));
    }

    /** Route b, half-open: one failure at max_fails 1, its cooldown over. */
    Candidate halfOpenB() {
        memory.recordFailure(B, 1, Duration.ofSeconds(30)).await().indefinitely();
        ticker.advance(Duration.ofSeconds(30));
        return DispatchFixture.candidate(org, "chat-b",
                new RouteSnapshot(B, false, 0, 1, false, 0, 0, UsageSample.ZERO, Map.of()), true,
                new TtftEstimate(150, 300, true));
    }

    Dispatcher.Handle start(boolean stream, String extra, Candidate... cands) {
        Dispatcher d = new Dispatcher(DispatchFixture.deps(upstream, store.proxy, scheduler, ticker,
                s -> s.length() / 4, observer));
        return d.start(request(stream, extra, cands), client);
    }

    DispatchRequest request(boolean stream, String extra, Candidate... cands) {
        String body = "{\"model\":\"chat\",\"stream\":" + stream
                + ",\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}]" + extra + "}";
        ChatRequest chat = ChatRequest.parse(body.getBytes(StandardCharsets.UTF_8), null);
        RequestFacts facts = new RequestFacts(10, null, stream, false, Set.of(), Set.of(), ProviderPrefs.NONE,
                List.of(), Map.of(), "hi");
        return new DispatchRequest("chatcmpl-test", 1, org, "app", "chat", org.group("chat"), chat, facts,
                List.of(cands), RoutePlan.NEVER);
    }

    Dispatcher.Handle start(Candidate... cands) {
        return start(true, "", cands);
    }

    /**
     * An operator's edit that lands between a request's plan and its start (the catalog no longer lets it take the
     * route it planned on) does not refuse it: the first attempt goes where the plan said, and only later choices ask
     * the catalog. It was refused "half-open probe in flight" with no attempt made (the first full run's
     * PartitionedEditTest, while an instance took another's edit).
     */
    @Test
    void anEditBetweenThePlanAndTheStartDoesNotRefuseTheRequest() {
        Dispatcher.Deps base = DispatchFixture.deps(upstream, store.proxy, scheduler, ticker, s -> s.length() / 4,
                observer);
        Dispatcher d = new Dispatcher(new Dispatcher.Deps(base.upstream(), base.store(), base.scheduler(),
                base.ticker(), base.tokens(), base.observer(), base.models(), base.clock(), (o, r) -> false));
        d.start(request(true, "", healthy("chat-a"), healthy("chat-b")), client);
        assertEquals(1, upstream.calls.size(), "the planned route was called");
        upstream.last().head().content("Hello").finish();
        assertEquals("Hello", Sse.content(sink.text()));
    }

    // ---- 1. a hedge whose half-open slot is granted after the race was decided ------------------------------

    /**
     * The primary streams its first content while the hedge's half-open probe slot is being taken (one Redis round
     * trip): the request is committed, so the hedge must not start. Today probeDecided launches it anyway (it checks
     * only {@code finished}); its first content then "wins" a race that was over, cancels the committed winner as
     * lost_race and splices a second answer into the client's stream.
     */
    @Test
    void aHedgeWhoseProbeSlotIsGrantedAfterTheCommitIsNotStarted() {
        Candidate b = halfOpenB();
        store.holdProbes = true;
        start(healthy("chat-a"), b);
        Call a = upstream.last().head();
        scheduler.advance(Duration.ofMillis(300));   // the first-token window: a hedge to b, its slot asked for
        assertEquals(1, store.held.size(), "precondition: the hedge's slot acquisition is in flight");
        a.content("Hello");                          // a commits while the acquisition is in flight
        store.grant(0);                              // the slot arrives after the commit
        if (upstream.calls.size() > 1) {
            upstream.last().head().content("Something else");
        }
        a.content(" world").finish();
        assertEquals(1, upstream.calls.size(), "no hedge may start after the commit");
        assertEquals("Hello world", Sse.content(sink.text()));
        assertFalse(memory.snapshot(List.of(B), Duration.ofMinutes(1)).await().indefinitely().get(B).probeTaken(),
                "the late slot is given back");
    }

    /**
     * The same race when the slot is refused (another instance probes b): probeDecided then falls through to the next
     * untried route and launches it as a hedge, with no check of the commit, so c also streams into a committed answer.
     */
    @Test
    void aHedgeWhoseProbeSlotIsRefusedAfterTheCommitDoesNotFallThroughToAnotherRoute() {
        Candidate b = halfOpenB();
        store.holdProbes = true;
        start(healthy("chat-a"), b, healthy("chat-c"));
        Call a = upstream.last().head();
        scheduler.advance(Duration.ofMillis(300));
        assertEquals(1, store.held.size(), "precondition: the hedge's slot acquisition is in flight");
        a.content("Hello");
        assertTrue(memory.tryAcquireProbe(B, 1, Duration.ofSeconds(30), "another-instance").await().indefinitely());
        store.grant(0);                              // refused: the other instance holds it
        if (upstream.calls.size() > 1) {
            upstream.last().head().content("Something else");
        }
        a.content(" world").finish();
        assertEquals(1, upstream.calls.size(), "no hedge may start after the commit");
        assertEquals("Hello world", Sse.content(sink.text()));
    }

    /**
     * The harm when the committed winner finishes first: complete() ends only the winner, so the late hedge stays live
     * after the request finished. Its upstream is never hung up on and its lease is never released (only its TTL ends
     * it, so least-connections counts it for 90 s); when its stream then ends without a finish the request's callbacks
     * still run (Attempt checks only {@code live}) and count a zero_content failure against b, re-cooling a half-open
     * route whose answer nobody read.
     */
    @Test
    void aHedgeStartedAfterTheCommitIsNotLeftRunningNorChargedWhenTheAnswerCompletes() {
        Candidate b = halfOpenB();
        store.holdProbes = true;
        start(healthy("chat-a"), b);
        Call a = upstream.last().head();
        scheduler.advance(Duration.ofMillis(300));
        a.content("Hello");
        store.grant(0);
        a.content(" world").finish();
        assertEquals("Hello world", Sse.content(sink.text()));
        int inflight = snapshotB().inflight();
        boolean allCancelled = true;
        for (Call c : upstream.calls) {
            if (c != a) {
                allCancelled &= c.cancelled;
                c.head().data("data: [DONE]\n\n");   // the late hedge's upstream ends without an answer
                c.handler.onEnd();
            }
        }
        RouteSnapshot s = snapshotB();
        boolean hungUp = allCancelled;
        assertAll(
                () -> assertTrue(hungUp, "every other upstream call is hung up on once the answer is whole"),
                () -> assertEquals(0, inflight, "b's lease is released once the answer is whole"),
                () -> assertEquals(1, s.fails(), "no verdict on b, whose answer nobody asked for"),
                () -> assertFalse(s.coolingDown(), "b is not cooled down for an answer nobody asked for"));
    }

    RouteSnapshot snapshotB() {
        return memory.snapshot(List.of(B), Duration.ofMinutes(1)).await().indefinitely().get(B);
    }

    // ---- 2. an error event after the finish ----------------------------------------------------------------

    /**
     * The winner sent its finish_reason, then an error event (instead of [DONE]). The answer is whole: a transport
     * error or a stall after the finish completes it (Dispatch.streamEnded, stallCheck), so an error event should too.
     * Today streamEvent treats it as a mid-stream failure: b is asked to continue a finished answer, a's route is
     * counted a failure, and the client gets extra text after the finish (or an error event).
     */
    @Test
    void anErrorEventAfterTheFinishCompletesTheAnswer() {
        start(healthy("chat-a"), healthy("chat-b"));
        Call a = upstream.last().head().content("Hello");
        a.data("data: {\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"stop\"}]}\n\n");
        a.data("data: {\"error\":{\"message\":\"internal error after finish\"}}\n\n");
        if (upstream.calls.size() > 1) {
            upstream.last().head().content(" and more").finish();
        }
        assertEquals(1, upstream.calls.size(), "a finished answer is not resumed");
        assertEquals("Hello", Sse.content(sink.text()));
        assertEquals("success", Sse.trail(sink.text()).get(0).path("outcome").asText());
    }

    // ---- 3. a hostile chunk throws out of the upstream callback ----------------------------------------------

    /**
     * A committed winner sends a chunk whose first choice is not an object ({@code "choices":[null]}, or a number).
     * Before the commit such a chunk is held and relayed harmlessly; after it ClientOutput.emitChunk casts the choice
     * to ObjectNode and throws ClassCastException out of Attempt.onData into Vert.x, which drops it: the rest of the
     * read (here " world") is never decoded, so the client silently loses text and the transcript a resume would
     * continue from has a hole.
     */
    @Test
    void aChunkWhoseChoiceIsNotAnObjectDoesNotThrowOrLoseTheRestOfTheRead() {
        start(healthy("chat-a"), healthy("chat-b"));
        Call a = upstream.last().head().content("Hello");
        assertDoesNotThrow(() -> a.data("data: {\"choices\":[null]}\n\n"
                + "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\" world\"}}]}\n\n"));
        a.finish();
        assertEquals("Hello world", Sse.content(sink.text()));
    }

    /**
     * Whatever throws under an upstream callback (here the client's sink, once, standing for any bug on that path)
     * fails the attempt as a broken stream instead of escaping into the HTTP client, which drops it: the committed
     * winner is hung up on and the stream resumes elsewhere, so the client is not left waiting on an attempt that
     * nothing drives any more. The exception is the gateway's, not the route's: the route is not charged.
     */
    @Test
    void anExceptionUnderAnUpstreamCallbackFailsTheAttemptInsteadOfVanishing() {
        throwOnce = "boom";
        start(healthy("chat-a"), healthy("chat-b"));
        Call a = upstream.last().head().content("Hello");
        assertDoesNotThrow(() -> a.content(" boom"));
        assertTrue(a.cancelled, "the attempt whose callback threw is hung up on");
        assertEquals(2, upstream.calls.size(), "the stream resumes on another route");
        upstream.last().head().content(" again").finish();
        String out = sink.text();
        assertTrue(Sse.endsWithDone(out), out);
        assertEquals("internal_error", Sse.trail(out).get(0).path("error").asText(), out);
        assertEquals(0, memory.snapshot(List.of("acme/chat-a"), Duration.ofMinutes(1)).await().indefinitely()
                .get("acme/chat-a").fails(), "a bug of the gateway's is not charged to the route");
    }

    /**
     * A callback that throws once its attempt has ended (here the client's sink, on the stream's last write, after
     * the winner's attempt was settled) has no attempt to fail, but the throw is a bug all the same: it is logged, not
     * dropped in silence (hunt25-b).
     */
    @Test
    void anExceptionAfterTheAttemptEndedIsLogged() {
        java.util.logging.Logger jul = java.util.logging.Logger.getLogger("dev.hedgerow.dispatch");
        List<java.util.logging.LogRecord> records = new java.util.concurrent.CopyOnWriteArrayList<>();
        java.util.logging.Handler handler = new java.util.logging.Handler() {
            @Override
            public void publish(java.util.logging.LogRecord r) {
                records.add(r);
            }

            @Override
            public void flush() {
            }

            @Override
            public void close() {
            }
        };
        jul.addHandler(handler);
        try {
            throwOnce = "[DONE]";
            start(healthy("chat-a"), healthy("chat-b"));
            Call a = upstream.last().head().content("Hello");
            assertDoesNotThrow(a::finish);
            assertEquals(1, upstream.calls.size(), "nothing is resumed after the answer ended");
            assertTrue(records.stream().anyMatch(r -> r.getThrown() instanceof IllegalStateException
                    && String.valueOf(r.getMessage()).contains("threw")), "the throw is logged: " + records);
        } finally {
            jul.removeHandler(handler);
        }
    }

    // ---- 4. billing a streamed tool call without the provider's usage ---------------------------------------

    /**
     * A stream that answers with a tool call and no usage chunk (a provider that ignores include_usage, or refused
     * stream_options; and every resumed stream, which is always counted by the gateway): Billing.usageOf counts only
     * the transcript's content and reasoning, so the call's arguments are billed 0 completion tokens. The non-streamed
     * path counts the tool_calls (Billing.java:217).
     */
    @Test
    void aStreamedToolCallWithoutUsageIsBilledItsTokens() {
        start(true, ",\"tools\":[{\"type\":\"function\",\"function\":{\"name\":\"get_weather\"}}]",
                healthy("chat-a"), healthy("chat-b"));
        Call a = upstream.last().head();
        a.data("data: {\"choices\":[{\"index\":0,\"delta\":{\"role\":\"assistant\",\"tool_calls\":[{\"index\":0,"
                + "\"id\":\"call_1\",\"type\":\"function\",\"function\":{\"name\":\"get_weather\",\"arguments\":\"\"}}]}}]}\n\n");
        a.data("data: {\"choices\":[{\"index\":0,\"delta\":{\"tool_calls\":[{\"index\":0,\"function\":{\"arguments\":"
                + "\"{\\\"city\\\": \\\"Paris, France\\\", \\\"unit\\\": \\\"celsius\\\"}\"}}]}}]}\n\n");
        a.data("data: {\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"tool_calls\"}]}\n\n");
        a.data("data: [DONE]\n\n");
        a.handler.onEnd();
        assertTrue(sink.text().contains("get_weather"), sink.text());
        assertEquals(1, bills.size());
        assertTrue(bills.get(0).completionTokens() > 0, "the tool call's tokens are billed: " + bills.get(0));
    }

    // ---- a stream's finish with nothing before it, held for its usage -----------------------------------------

    static final String STOP = "data: {\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"stop\"}]}\n\n";

    static String usage(int completion) {
        return "data: {\"choices\":[],\"usage\":{\"prompt_tokens\":10,\"completion_tokens\":" + completion
                + ",\"total_tokens\":" + (10 + completion) + "}}\n\n";
    }

    /**
     * A streamed refusal (OpenAI's structured outputs: {@code delta.refusal}, no content) counts its tokens in its
     * usage, as a lost answer's would: it is the answer, relayed, and its route is not charged.
     */
    @Test
    void aStreamedRefusalIsNotTakenForLostContent() {
        start(healthy("chat-a"), healthy("chat-b"));
        Call a = upstream.last().head();
        a.data("data: {\"choices\":[{\"index\":0,\"delta\":{\"role\":\"assistant\",\"refusal\":\"\"}}]}\n\n");
        a.data("data: {\"choices\":[{\"index\":0,\"delta\":{\"refusal\":\"I can't help with that.\"}}]}\n\n");
        a.data(STOP).data(usage(7)).data("data: [DONE]\n\n");
        a.handler.onEnd();
        assertEquals(1, upstream.calls.size(), "no failover");
        assertTrue(sink.text().contains("I can't help with that."), sink.text());
        assertTrue(sink.text().contains("\"finish_reason\":\"stop\""), sink.text());
        assertTrue(sink.ended);
        assertEquals(0, memory.snapshot(List.of("acme/chat-a"), Duration.ofMinutes(1)).await().indefinitely()
                .get("acme/chat-a").fails(), "a is not charged");
    }

    /**
     * A refusal after text has begun (a model that starts to answer, then refuses) reaches the client: a delta whose
     * only field was the refusal was dropped as content-less once text had begun (found by hunt6).
     */
    @Test
    void aRefusalAfterTextReachesTheClient() {
        start(healthy("chat-a"), healthy("chat-b"));
        Call a = upstream.last().head();
        a.content("Sure");
        a.data("data: {\"choices\":[{\"index\":0,\"delta\":{\"refusal\":\"Actually, I can't.\"}}]}\n\n");
        a.finish();
        assertTrue(sink.text().contains("\"refusal\":\"Actually, I can't.\""), sink.text());
        assertEquals("Sure", Sse.content(sink.text()));
    }

    /**
     * A refusal that never ends is cut by the output guard as text is: each piece counts as a token against
     * {@code max_tokens} (it was relayed without bound, and kept whole for billing; found by review7).
     */
    @Test
    void anEndlessRefusalIsCutByTheOutputGuard() {
        start(true, ",\"max_tokens\":5", healthy("chat-a"), healthy("chat-b"));
        Call a = upstream.last().head();
        int sent = 0;
        while (!a.cancelled && sent < 2000) {
            a.data("data: {\"choices\":[{\"index\":0,\"delta\":{\"refusal\":\"no no no no \"}}]}\n\n");
            sent++;
        }
        assertTrue(a.cancelled, "cut after " + sent + " pieces");
        assertTrue(sent < 100, "cut near max_tokens: " + sent);
        assertTrue(sink.text().contains("output_limit_exceeded"), sink.text());
    }

    /**
     * An empty finish whose upstream then sends neither usage nor [DONE] and stays open is settled after
     * {@code stall_floor} with what it has: no usage, so an empty answer, relayed and ended (it was, before the hold,
     * by the stall watchdog's finished-but-open rule); no hedge and no failover meanwhile.
     */
    @Test
    void anEmptyFinishOnAStreamThatStaysOpenIsSettledAfterTheStallFloor() {
        start(healthy("chat-a"), healthy("chat-b"));
        Call a = upstream.last().head();
        a.data("data: {\"choices\":[{\"index\":0,\"delta\":{\"role\":\"assistant\"}}]}\n\n").data(STOP);
        scheduler.advance(Duration.ofMillis(900));
        assertFalse(sink.ended, "held for the usage");
        assertEquals(1, upstream.calls.size(), "the route answered: no hedge while its finish is held");
        scheduler.advance(Duration.ofMillis(200));
        assertTrue(sink.ended, sink.text());
        assertTrue(sink.text().contains("\"finish_reason\":\"stop\""), sink.text());
        assertEquals("", Sse.content(sink.text()));
        assertTrue(a.cancelled, "the open upstream is hung up on");
        assertEquals(List.of(0L), firstTokenMs, "the route answered at once: the hold is not its first-token time");
    }

    /**
     * An error event in place of the close after an empty finish settles the finish as the close would: an empty
     * answer, relayed with its head. It was taken for a break of a committed stream: a resume wrote to a client that
     * had no head (a 200 without its content type), and the resume's own write then threw (found by review7).
     */
    @Test
    void anErrorEventAfterAnEmptyFinishSettlesItAsItsEndWould() {
        start(healthy("chat-a"), healthy("chat-b"));
        Call a = upstream.last().head();
        a.data("data: {\"choices\":[{\"index\":0,\"delta\":{\"role\":\"assistant\",\"content\":\"\"}}]}\n\n")
                .data(STOP).data("data: {\"error\":{\"message\":\"boom\"}}\n\n");
        assertEquals(1, upstream.calls.size(), "no resume of a stream that never began");
        assertEquals(1, sink.heads);
        assertEquals("text/event-stream", sink.headers.get("content-type"));
        assertTrue(sink.ended, sink.text());
        assertTrue(sink.text().contains("\"finish_reason\":\"stop\""), sink.text());
        assertTrue(Sse.endsWithDone(sink.text()), sink.text());
    }

    /**
     * A usage that came before the finish (vLLM's continuous usage stats: every chunk carries the count so far) does
     * not settle it: the usage after the finish does, and this one counts a lost answer.
     */
    @Test
    void aUsageFromBeforeTheFinishDoesNotSettleIt() {
        start(healthy("chat-a"), healthy("chat-b"));
        Call a = upstream.last().head();
        a.data("data: {\"choices\":[{\"index\":0,\"delta\":{\"role\":\"assistant\"}}],\"usage\":"
                + "{\"prompt_tokens\":10,\"completion_tokens\":0,\"total_tokens\":10}}\n\n").data(STOP);
        assertFalse(a.cancelled, "held for the usage after the finish");
        a.data(usage(30));
        assertTrue(a.cancelled, "lost content: the attempt ends");
        assertEquals(2, upstream.calls.size(), "and the request fails over");
    }

    /**
     * A resume that only finishes (the text it continues was whole already) is the end of the answer, whatever few
     * tokens its server counts for ending it: not lost content, which would fail a finished answer over.
     */
    @Test
    void aResumeThatOnlyFinishesEndsTheAnswer() {
        start(healthy("chat-a"), healthy("chat-b"));
        Call a = upstream.last().head().content("Hello world");
        a.handler.onError(new dev.hedgerow.upstream.TransportFailure(
                dev.hedgerow.upstream.TransportFailure.Kind.RESET, "reset"));
        assertEquals(2, upstream.calls.size(), "resumed on b");
        upstream.last().head().data(STOP).data(usage(3)).data("data: [DONE]\n\n").handler.onEnd();
        assertEquals(2, upstream.calls.size(), "no third attempt");
        assertEquals("Hello world", Sse.content(sink.text()));
        assertTrue(sink.text().contains("\"finish_reason\":\"stop\""), sink.text());
        assertTrue(sink.ended);
    }

    /** The usage in the finish chunk itself settles at once: a lost answer fails over without waiting for [DONE]. */
    @Test
    void aUsageInTheFinishChunkSettlesAtOnce() {
        start(healthy("chat-a"), healthy("chat-b"));
        Call a = upstream.last().head();
        a.data("data: {\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"stop\"}],\"usage\":"
                + "{\"prompt_tokens\":10,\"completion_tokens\":30,\"total_tokens\":40}}\n\n");
        assertTrue(a.cancelled, "lost content: the attempt ends");
        assertEquals(2, upstream.calls.size(), "and the request fails over");
        upstream.last().head().content("Hello").finish();
        assertEquals("Hello", Sse.content(sink.text()));
    }

    // ---- review4: what a whole (non-streamed) answer bills --------------------------------------------------

    /** A whole answer from route a: its JSON body as the provider sent it. */
    void answerWhole(String body) {
        Call a = upstream.last();
        a.handler.onHead(200, Map.of("content-type", "application/json"));
        a.data(body);
        a.handler.onEnd();
    }

    /**
     * Reasoning a provider writes as {@code message.reasoning} (OpenRouter, NanoGPT) is billed as the streamed path
     * bills it; a whole answer read only {@code reasoning_content}, so 400 characters of thinking billed nothing.
     */
    @Test
    void aWholeAnswersReasoningUnderEitherNameIsBilled() {
        String thought = "x".repeat(400);
        start(false, "", healthy("chat-a"));
        answerWhole("{\"choices\":[{\"index\":0,\"message\":{\"role\":\"assistant\",\"content\":\"Hi\","
                + "\"reasoning\":\"" + thought + "\"},\"finish_reason\":\"stop\"}]}");
        assertEquals(List.of(new UsageSample(10, ("Hi" + thought).length() / 4, 0)), bills);
    }

    /**
     * A whole answer's tool calls bill their names and arguments, as a streamed one's do; the whole JSON of the calls
     * (ids, types, punctuation) was counted, so the same call billed more unstreamed.
     */
    @Test
    void aWholeAnswersToolCallsBillTheirNamesAndArgumentsAsAStreamsDo() {
        String args = "{\\\"city\\\": \\\"Paris\\\"}";
        start(false, "", healthy("chat-a"));
        answerWhole("{\"choices\":[{\"index\":0,\"message\":{\"role\":\"assistant\",\"content\":null,"
                + "\"tool_calls\":[{\"id\":\"call_0123456789\",\"type\":\"function\",\"function\":{\"name\":"
                + "\"get_weather\",\"arguments\":\"" + args + "\"}}]},\"finish_reason\":\"tool_calls\"}]}");
        assertEquals(List.of(new UsageSample(10, ("get_weather" + "{\"city\": \"Paris\"}").length() / 4, 0)), bills);
    }

    /**
     * A provider's usage that is not a count (negative, fractional, beyond 10^9) is not believed: the request is
     * counted as one that reported none, and the client is shown that count; -10^9 prompt tokens were billed as is,
     * a negative cost in the ledger (found by review4).
     */
    @Test
    void aProvidersUsageThatIsNotACountIsNeitherBilledNorShown() {
        for (String given : new String[]{"-1000000000", "2.5", "1e30"}) {
            bills.clear();
            sink.body.reset();
            start(false, "", healthy("chat-a"));
            answerWhole("{\"choices\":[{\"index\":0,\"message\":{\"role\":\"assistant\",\"content\":"
                    + "\"Hello world!\"},\"finish_reason\":\"stop\"}],\"usage\":{\"prompt_tokens\":" + given
                    + ",\"completion_tokens\":5,\"total_tokens\":5}}");
            assertEquals(List.of(new UsageSample(10, 3, 0)), bills, given);
            assertTrue(sink.text().contains("\"usage\":{\"prompt_tokens\":10,\"completion_tokens\":3,"
                    + "\"total_tokens\":13}"), given + ": " + sink.text());
        }
        bills.clear();
        start(false, "", healthy("chat-a"));
        answerWhole("{\"choices\":[{\"index\":0,\"message\":{\"role\":\"assistant\",\"content\":\"Hello\"},"
                + "\"finish_reason\":\"stop\"}],\"usage\":{\"prompt_tokens\":12,\"completion_tokens\":2}}");
        assertEquals(List.of(new UsageSample(12, 2, 0)), bills, "a count is billed as the provider gave it");
        // a usage without its completion count would bill the answer 0 completion tokens: it is counted instead
        bills.clear();
        start(false, "", healthy("chat-a"));
        answerWhole("{\"choices\":[{\"index\":0,\"message\":{\"role\":\"assistant\",\"content\":"
                + "\"Hello world!\"},\"finish_reason\":\"stop\"}],\"usage\":{\"prompt_tokens\":12}}");
        assertEquals(List.of(new UsageSample(10, 3, 0)), bills, "no completion count (suspected by review5)");
    }

    // ---- 6. an exhausted resume answers an old pre-commit client error --------------------------------------

    /**
     * A stream committed on b after a (small context window) refused the prompt as too long; b stalls, and the resume's
     * only other route, c, is half-open with its probe slot held by another instance. probeDecided finds nothing else
     * and calls exhausted(), which (written for the pre-commit case) passes a's old 400 context_length_exceeded through:
     * the client's stream, which already has b's "Hello", ends with that stale error instead of the stall's
     * stream_interrupted, the request is logged as a 400, and the delivered text is billed nothing.
     */
    @Test
    void aResumeWithNoRouteLeftEndsWithItsOwnCauseNotAnOldClientErrorAndBillsWhatWasDelivered() {
        Org o = new CatalogLoader(k -> null).parse(YAML.replace("model: ma, capabilities: [prefill]",
                "model: ma, context_window: 4000, capabilities: [prefill]")).orgs().get(0);
        String c = "acme/chat-c";
        memory.recordFailure(c, 1, Duration.ofSeconds(30)).await().indefinitely();
        ticker.advance(Duration.ofSeconds(30));
        assertTrue(memory.tryAcquireProbe(c, 1, Duration.ofMinutes(5), "another-instance").await().indefinitely());
        Candidate halfOpenC = DispatchFixture.candidate(o, "chat-c",
                new RouteSnapshot(c, false, 0, 1, false, 0, 0, UsageSample.ZERO, Map.of()), true,
                new TtftEstimate(150, 300, true));
        Candidate a = DispatchFixture.candidate(o, "chat-a", RouteSnapshot.empty("acme/chat-a"), false,
                new TtftEstimate(150, 300, true));
        Candidate b = DispatchFixture.candidate(o, "chat-b", RouteSnapshot.empty("acme/chat-b"), false,
                new TtftEstimate(150, 300, true));
        start(halfOpenC, a, b);
        assertEquals(1, upstream.calls.size(), "precondition: c's slot is taken elsewhere, a is tried");
        Call ca = upstream.last();
        refuseAsTooLong(ca);
        assertEquals(2, upstream.calls.size(), "precondition: b (a larger window) is tried next");
        upstream.last().head().content("Hello");
        scheduler.advance(Duration.ofSeconds(2));   // b stalls past the 1 s stall floor
        // c is probed elsewhere and a's window is too small: b, the route that broke, is each resume's last resort,
        // and it fails every time until max_resumes is spent
        for (int i = 0; i < 5 && !Sse.endsWithDone(sink.text()); i++) {
            assertTrue(upstream.last().body().contains("\"model\":\"mb\""), "the resume goes to b");
            fail500(upstream.last());
        }
        String out = sink.text();
        assertTrue(Sse.endsWithDone(out), out);
        com.fasterxml.jackson.databind.JsonNode last = Sse.events(out).get(Sse.events(out).size() - 1);
        assertEquals("Hello", Sse.content(out));
        assertFalse("context_length_exceeded".equals(last.path("error").path("code").asText()),
                "the stream ends with its own failure, not a's old refusal: " + last);
        assertEquals(1, bills.size());
        assertTrue(bills.get(0) != null && bills.get(0).completionTokens() > 0,
                "the text the client received is billed: " + bills.get(0));
    }

    /**
     * a stalled after "Hello"; the resume goes to the untried b, half-open, whose probe another instance holds. The
     * stream then resumes on a, the route that broke, its last resort, as it would have with b never in the group: it
     * ended with an error, "no other route can resume it" (found by hunt23's review of hunt22's resume fix).
     */
    @Test
    void aResumeWhoseHalfOpenTargetIsProbedElsewhereFallsBackToTheRouteThatBroke() {
        String b = "acme/chat-b";
        memory.recordFailure(b, 1, Duration.ofSeconds(30)).await().indefinitely();
        ticker.advance(Duration.ofSeconds(30));
        assertTrue(memory.tryAcquireProbe(b, 1, Duration.ofMinutes(5), "another-instance").await().indefinitely());
        Candidate a = DispatchFixture.candidate(org, "chat-a", RouteSnapshot.empty("acme/chat-a"), false,
                new TtftEstimate(150, 300, true));
        Candidate halfOpenB = DispatchFixture.candidate(org, "chat-b",
                new RouteSnapshot(b, false, 0, 1, false, 0, 0, UsageSample.ZERO, Map.of()), true,
                new TtftEstimate(150, 300, true));
        start(a, halfOpenB);
        upstream.last().head().content("Hello");
        scheduler.advance(Duration.ofMillis(1500));   // a stalls past the 1 s stall floor
        assertEquals(2, upstream.calls.size(), sink.text());
        assertTrue(upstream.last().body().contains("\"model\":\"ma\""), "the resume goes back to a");
        assertFalse(Sse.endsWithDone(sink.text()), sink.text());
    }

    /**
     * a (a 4000-token window) refused the prompt as too long, b took it and stalled after "Hello". No untried route is
     * left, and the resume fallback took the first tried route other than b: a, which is sent the same prompt plus the
     * text so far and can only refuse it again. It now skips a route under the refused size and continues on b.
     */
    @Test
    void aResumeIsNotSentToARouteThatRefusedThePromptAsTooLong() {
        Org o = new CatalogLoader(k -> null).parse(YAML.replace("model: ma, capabilities: [prefill]",
                "model: ma, context_window: 4000, capabilities: [prefill]")).orgs().get(0);
        Candidate a = DispatchFixture.candidate(o, "chat-a", RouteSnapshot.empty("acme/chat-a"), false,
                new TtftEstimate(150, 300, true));
        Candidate b = DispatchFixture.candidate(o, "chat-b", RouteSnapshot.empty("acme/chat-b"), false,
                new TtftEstimate(150, 300, true));
        start(a, b);
        Call ca = upstream.last();
        refuseAsTooLong(ca);
        assertEquals(2, upstream.calls.size(), "precondition: b (a larger window) is tried next");
        upstream.last().head().content("Hello");
        scheduler.advance(Duration.ofMillis(1200));   // b stalls past the 1 s stall floor: a resume
        assertEquals(3, upstream.calls.size(), "precondition: the stream is resumed");
        assertTrue(upstream.last().request.url().startsWith("http://b.invalid/"),
                "the resume goes to b, not to a, which refused the prompt: " + upstream.last().request.url());
        upstream.last().head().content(" world").finish();
        assertEquals("Hello world", Sse.content(sink.text()));
    }

    /**
     * The primary fails while its hedge's half-open probe slot is still on its way from the store. Nothing was live
     * to wait for, so the request answered 502 at once, and the granted slot then found the request finished: a
     * route that may well have served it (its probe was granted) was never tried. The request now waits for it.
     */
    @Test
    void aPrimaryThatFailsWhileItsHedgesProbeSlotIsOnItsWayWaitsForTheHedge() {
        Candidate b = halfOpenB();
        store.holdProbes = true;
        start(healthy("chat-a"), b);
        Call a = upstream.last();
        scheduler.advance(Duration.ofMillis(300));   // the first-token window: a hedge to b, its slot asked for
        assertEquals(1, store.held.size(), "precondition: the hedge's slot acquisition is in flight");
        fail500(a);
        assertEquals(0, sink.status, "no answer while a route is about to start: " + sink.text());
        store.grant(0);
        assertEquals(2, upstream.calls.size(), "the hedge starts once its slot is granted");
        upstream.last().head().content("Hello").finish();
        assertEquals(200, sink.status);
        assertEquals("Hello", Sse.content(sink.text()));
    }

    /** The upstream refuses the prompt as longer than its 4000-token window (400 context_length_exceeded). */
    static void refuseAsTooLong(Call c) {
        c.handler.onHead(400, Map.of("content-type", "application/json"));
        c.data("{\"error\":{\"message\":\"This model's maximum context length is 4000 tokens\","
                + "\"type\":\"invalid_request_error\",\"code\":\"context_length_exceeded\"}}");
        c.handler.onEnd();
    }

    /** The upstream answers 500 with an error body. */
    static void fail500(Call c) {
        c.handler.onHead(500, Map.of("content-type", "application/json"));
        c.data("{\"error\":{\"message\":\"boom\",\"type\":\"server_error\"}}");
        c.handler.onEnd();
    }

    /** The same race when the slot is refused: the request then ends with the primary's failure, without hanging. */
    @Test
    void aPrimaryThatFailsWhileItsHedgesProbeSlotIsOnItsWayEndsWhenTheSlotIsRefused() {
        Candidate b = halfOpenB();
        store.holdProbes = true;
        start(healthy("chat-a"), b);
        Call a = upstream.last();
        scheduler.advance(Duration.ofMillis(300));
        fail500(a);
        assertTrue(memory.tryAcquireProbe(B, 1, Duration.ofSeconds(30), "another-instance").await().indefinitely());
        store.grant(0);                              // refused: another instance probes b
        assertEquals(1, upstream.calls.size());
        assertEquals(502, sink.status, sink.text());
        assertTrue(sink.ended);
    }

    /**
     * A resume sends the prompt and the text delivered so far, so its first token comes at that larger prompt's
     * speed; it was learnt (and reported) at the original prompt's size, teaching the resuming route a slower first
     * token than it has for prompts of that size.
     */
    @Test
    void aResumesFirstTokenIsLearntAtThePromptItSentWithTheDeliveredText() {
        start(healthy("chat-a"), healthy("chat-b"));
        Call a = upstream.last().head();
        for (String piece : List.of("One", " two", " three", " four", " five")) {
            a.content(piece);
        }
        scheduler.advance(Duration.ofMillis(1200));   // a stalls: resumed on b
        assertEquals(2, upstream.calls.size(), "precondition: the stream is resumed");
        upstream.last().head().content(" six").finish();
        assertEquals("One two three four five six", Sse.content(sink.text()));
        assertEquals(List.of("chat-a@10", "chat-b@15"), firstTokens,
                "the resume's first token is learnt at the 10-token prompt plus the 5 tokens delivered");
    }

    /**
     * Starting a request threw (a bug, here in the upstream client's send): the dispatch stayed among the live
     * requests, so every shutdown of the instance waited its whole grace period for it, and its attempt kept its lease
     * (least-connections counted it until the lease's TTL). The attempt whose send throws now fails as any attempt
     * does (hunt25), so the request ends with an error answer.
     */
    @Test
    void aBugWhileARequestStartsLeavesNothingOfItBehind() {
        UpstreamClient throwing = (r, h) -> {
            throw new IllegalStateException("a bug in send");
        };
        Dispatcher d = new Dispatcher(DispatchFixture.deps(throwing, store.proxy, scheduler, ticker,
                s -> s.length() / 4, observer));
        d.start(request(true, "", healthy("chat-a")), client);
        assertEquals(502, sink.status, "answered with an error");
        RouteSnapshot a = memory.snapshot(List.of("acme/chat-a"), Duration.ofMinutes(1)).await().indefinitely()
                .get("acme/chat-a");
        assertAll(
                () -> assertEquals(0, d.live(), "the request is not left live"),
                () -> assertEquals(0, a.inflight(), "its attempt's lease is released"),
                () -> assertEquals(1, bills.size(), "it is logged once"),
                () -> assertEquals(0, d.shutDown(dev.hedgerow.api.ApiError.internal()), "a shutdown has nothing to end"));
    }

    // ---- 5. a hedge counted as fired when none was ---------------------------------------------------------

    /**
     * The hedge budget's answer comes after the primary's first content: no hedge starts, yet the budget token is spent
     * and hedgerow_hedges_total{result="fired"} counts one (hedgeDecided reports before it checks the race is still on).
     * The token taken goes back to the org's budget.
     */
    @Test
    void aHedgeBudgetAnswerAfterTheCommitFiresAndCountsNothing() {
        store.holdHedgeBudget = true;
        start(healthy("chat-a"), healthy("chat-b"));
        Call a = upstream.last().head();
        scheduler.advance(Duration.ofMillis(300));
        assertEquals(1, store.heldBudget.size(), "precondition: the budget is being asked");
        a.content("Hello");
        store.grantBudget(0);
        a.finish();
        assertEquals(1, upstream.calls.size());
        assertEquals(0, metric("hedgerow_hedges", "result", "fired"), "no hedge fired");
        assertEquals(0, hedgesSpent(), "the token is given back");
    }

    /** The hedges the org spent in its budget's window: 0 or at least 1 (asks the memory store, spending nothing). */
    int hedgesSpent() {
        boolean none = memory.hedgeBudget("acme", false, 0, 1, org.hedgeBudget().window()).await().indefinitely();
        return none ? 0 : 1;
    }

    /**
     * A hedge to a half-open route whose probe slot another instance holds, with no other route left: the budget paid
     * for a hedge that never starts, so its token goes back.
     */
    @Test
    void aHedgeThatCannotStartBecauseItsRouteIsProbedElsewhereGivesItsTokenBack() {
        Candidate b = halfOpenB();
        assertTrue(memory.tryAcquireProbe(B, 1, Duration.ofSeconds(30), "another-instance").await().indefinitely());
        start(healthy("chat-a"), b);
        Call a = upstream.last().head();
        scheduler.advance(Duration.ofMillis(300));   // the first-token window: the budget pays for a hedge to b
        assertEquals(1, upstream.calls.size(), "precondition: b is probed elsewhere, so no hedge starts");
        assertEquals(0, hedgesSpent(), "the token is given back");
        assertEquals(0, metric("hedgerow_hedges", "result", "fired"), "no hedge fired");
        a.content("Hello").finish();
        assertEquals("Hello", Sse.content(sink.text()));
    }

    // ---- 7. onSent after onHead cancels the body's read timer ----------------------------------------------

    /**
     * A provider may answer before the request body is fully written (an early 200 head of a long prompt, or an early
     * error), so the Vert.x client's "sent" can come after the head. Attempt.onSent then calls armIoTimer, whose first
     * step cancels {@code ioTimer}, which by then is the body's read_timeout timer armed by onHead; armIoTimer returns
     * (status > 0) without re-arming it. A body that then stops arriving is no longer failed over at read_timeout
     * (5 s here), only at the whole answer's wait, up to 10 minutes for a non-streamed answer.
     */
    @Test
    void aBodyThatStopsAfterAnEarlyHeadFailsOverAtReadTimeoutEvenWhenSentIsReportedLate() {
        KongTimeoutsDispatchTest.HandUpstream hand = new KongTimeoutsDispatchTest.HandUpstream();
        Org kt = new CatalogLoader(n -> null).parse(KongTimeoutsDispatchTest.YAML).orgs().get(0);
        Dispatcher dispatcher = new Dispatcher(DispatchFixture.deps(hand, memory, scheduler, ticker, String::length,
                new DispatchObserver() { }));
        ChatRequest chat = ChatRequest.parse("{\"model\":\"kt\",\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}]}"
                .getBytes(StandardCharsets.UTF_8), null);
        RequestFacts facts = new RequestFacts(1, null, false, false, Set.of(), Set.of(), ProviderPrefs.NONE,
                List.of(), Map.of(), "hi");
        List<Candidate> cands = List.of(
                DispatchFixture.candidate(kt, "a", RouteSnapshot.empty("acme/a"), false, TtftEstimate.UNKNOWN),
                DispatchFixture.candidate(kt, "b", RouteSnapshot.empty("acme/b"), false, TtftEstimate.UNKNOWN));
        dispatcher.start(new DispatchRequest("req-1", 0, kt, "app", "kt", kt.group("kt"), chat, facts, cands,
                RoutePlan.NEVER), sink);
        var h = hand.handlers.get(0);
        h.onHead(200, Map.of("content-type", "application/json"));   // the head before the body was all written
        h.onData("{\"id\":\"x\",".getBytes(StandardCharsets.UTF_8));
        h.onSent();                                                  // the write completes after the first read
        scheduler.advance(Duration.ofSeconds(6));                    // read_timeout is 5 s
        assertEquals(2, hand.requests.size(), "the silent body failed over at read_timeout");
    }

    // ---- 8. signs of life before the first content do not put off the first-token limit -----------------------

    /**
     * A route that answers its head and then only keep-alive comments (or empty chunks) is abandoned at
     * first_token_ceiling (5 s here) when another route can take the request: each sign of life re-armed the abandon
     * timer, so an upstream that heartbeats and never answers held the request for ever while b stood idle (found
     * by hunt4). The request's last hope is still waited for while it shows life (DispatchTimingTest's
     * theLastRouteLeftIsNotAbandonedWhileItIsStillBeingServed).
     */
    @Test
    void signsOfLifeBeforeTheFirstContentDoNotPutOffTheFirstTokenLimit() {
        for (boolean comments : new boolean[] {true, false}) {
            upstream.calls.clear();
            Org o = new CatalogLoader(k -> null).parse(YAML.replace("head_hold: off,", "head_hold: off, hedging: false,"))
                    .orgs().get(0);
            ChatRequest chat = ChatRequest.parse("{\"model\":\"chat\",\"stream\":true,\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}]}"
                    .getBytes(StandardCharsets.UTF_8), null);
            RequestFacts facts = new RequestFacts(10, null, true, false, Set.of(), Set.of(), ProviderPrefs.NONE,
                    List.of(), Map.of(), "hi");
            List<Candidate> cands = List.of(
                    DispatchFixture.candidate(o, "chat-a", RouteSnapshot.empty("acme/chat-a"), false, new TtftEstimate(150, 300, true)),
                    DispatchFixture.candidate(o, "chat-b", RouteSnapshot.empty("acme/chat-b"), false, new TtftEstimate(150, 300, true)));
            Dispatcher.Handle h = new Dispatcher(DispatchFixture.deps(upstream, memory, scheduler, ticker,
                    t -> t.length() / 4, observer)).start(new DispatchRequest("chatcmpl-" + comments, 1, o, "app", "chat", o.group("chat"), chat, facts,
                            cands, RoutePlan.NEVER), new RecordingSink());
            Call a = upstream.last().head();
            for (int i = 0; i < 4; i++) {
                scheduler.advance(Duration.ofSeconds(1));
                a.data(comments ? ": keep-alive\n\n" : "data: {\"choices\":[{\"index\":0,\"delta\":{}}]}\n\n");
            }
            assertFalse(a.cancelled, "within first_token_ceiling");
            for (int i = 0; i < 4; i++) {
                scheduler.advance(Duration.ofSeconds(1));
                a.data(comments ? ": keep-alive\n\n" : "data: {\"choices\":[{\"index\":0,\"delta\":{}}]}\n\n");
            }
            String what = comments ? "comments" : "empty chunks";
            assertTrue(a.cancelled, what + " every second do not keep a at the ceiling while b is free");
            assertEquals(2, upstream.calls.size(), what);
            assertTrue(upstream.last().request.url().startsWith("http://b.invalid/"), what);
            h.clientGone();   // this request ends here: its timers must not act on the next one's count
        }
    }

    /**
     * A resume whose route answers its head and then only keep-alive comments is given up at the group's stall_floor
     * (1 s here; three first-token windows, 900 ms, are less) on a measured route, and the answer resumed on another:
     * it waited first_token_ceiling (5 s here, 30 s by default) with the client's answer frozen mid-sentence, and,
     * while its keep-alives re-armed the limit, for ever (found by hunt4).
     */
    @Test
    void aResumeHungBehindKeepAlivesIsGivenUpAtTheStallFloor() {
        start(healthy("chat-a"), healthy("chat-b"), healthy("chat-c"));
        upstream.last().head().content("Hello");
        scheduler.advance(Duration.ofMillis(1100));   // a stalls past the 1 s stall floor: a resume
        assertEquals(2, upstream.calls.size(), "precondition: the stream is resumed");
        Call resume = upstream.last().head();
        for (int i = 0; i < 4; i++) {
            scheduler.advance(Duration.ofMillis(200));
            resume.data(": keep-alive\n\n");
        }
        assertFalse(resume.cancelled, "within the stall floor");
        for (int i = 0; i < 2; i++) {
            scheduler.advance(Duration.ofMillis(200));
            resume.data(": keep-alive\n\n");
        }
        assertTrue(resume.cancelled, "given up at the stall floor despite its keep-alives");
        assertEquals(3, upstream.calls.size(), "resumed again");
        upstream.last().head().content(" world").finish();
        assertEquals("Hello world", Sse.content(sink.text()));
        assertEquals("timeout_first_token", Sse.trail(sink.text()).get(1).path("error").asText(), sink.text());
    }

    /**
     * A resume sends the prompt and every token delivered so far: its wait is scaled up to that prompt, as the
     * first-token window is predicted for the request's own (10 tokens here). After 200 delivered tokens it is 21
     * times the prompt, so the resume waits first_token_ceiling (5 s here), not the stall floor: a healthy route
     * reading a long transcript is not given up and charged (suspected by review5).
     */
    @Test
    void aResumeOfALongAnswerWaitsAsLongAsItsPromptNeeds() {
        start(healthy("chat-a"), healthy("chat-b"), healthy("chat-c"));
        Call a = upstream.last().head();
        for (int i = 0; i < 200; i++) {
            a.content(" w" + i);
        }
        scheduler.advance(Duration.ofMillis(1100));   // a stalls past the 1 s stall floor: a resume
        assertEquals(2, upstream.calls.size(), "precondition: the stream is resumed");
        Call resume = upstream.last().head();
        scheduler.advance(Duration.ofMillis(4800));
        assertFalse(resume.cancelled, "within first_token_ceiling: the resume's prompt is 21 times the request's");
        scheduler.advance(Duration.ofMillis(400));
        assertTrue(resume.cancelled, "given up at first_token_ceiling");
        assertEquals(3, upstream.calls.size(), "resumed again");
    }

    /**
     * The memory store behind a proxy: with {@link #holdProbes} a probe-slot acquisition, and with
     * {@link #holdHedgeBudget} a hedge-budget call, waits until the test answers it from the memory store.
     */
    final class HeldStore {
        final List<Supplier<Object>> held = new ArrayList<>();
        final List<CompletableFuture<Object>> replies = new ArrayList<>();
        final List<Supplier<Object>> heldBudget = new ArrayList<>();
        final List<CompletableFuture<Object>> budgetReplies = new ArrayList<>();
        boolean holdProbes;
        boolean holdHedgeBudget;
        final StateStore proxy = (StateStore) Proxy.newProxyInstance(StateStore.class.getClassLoader(),
                new Class<?>[] {StateStore.class}, (p, method, a) -> {
                    boolean probe = method.getName().equals("tryAcquireProbe") && holdProbes;
                    boolean budget = method.getName().equals("hedgeBudget") && holdHedgeBudget;
                    if (probe || budget) {
                        CompletableFuture<Object> reply = new CompletableFuture<>();
                        Supplier<Object> later = () -> {
                            try {
                                return ((Uni<?>) method.invoke(memory, a)).await().indefinitely();
                            } catch (ReflectiveOperationException e) {
                                throw new IllegalStateException(e);
                            }
                        };
                        (probe ? held : heldBudget).add(later);
                        (probe ? replies : budgetReplies).add(reply);
                        return Uni.createFrom().completionStage(reply);
                    }
                    try {
                        return method.invoke(memory, a);
                    } catch (InvocationTargetException e) {
                        throw e.getCause();
                    }
                });

        void grant(int i) {
            replies.get(i).complete(held.get(i).get());
        }

        void grantBudget(int i) {
            budgetReplies.get(i).complete(heldBudget.get(i).get());
        }
    }
}
