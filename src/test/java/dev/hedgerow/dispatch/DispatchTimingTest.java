package dev.hedgerow.dispatch;

import com.fasterxml.jackson.databind.JsonNode;
import dev.hedgerow.api.ChatRequest;
import dev.hedgerow.api.ProviderPrefs;
import dev.hedgerow.catalog.CatalogLoader;
import dev.hedgerow.catalog.GroupSettings;
import dev.hedgerow.catalog.HedgeBudget;
import dev.hedgerow.catalog.Org;
import dev.hedgerow.routing.Candidate;
import dev.hedgerow.routing.InterTokenStats;
import dev.hedgerow.routing.LearnedModels;
import dev.hedgerow.routing.RequestFacts;
import dev.hedgerow.routing.RoutePlan;
import dev.hedgerow.routing.ThinkingTime;
import dev.hedgerow.routing.TtftEstimate;
import dev.hedgerow.routing.TtftPredictor;
import dev.hedgerow.state.MemoryStateStore;
import dev.hedgerow.state.RouteSnapshot;
import dev.hedgerow.state.UsageSample;
import dev.hedgerow.testsupport.DispatchFixture;
import dev.hedgerow.testsupport.Sse;
import dev.hedgerow.time.FakeScheduler;
import dev.hedgerow.time.FakeTicker;
import dev.hedgerow.upstream.UpstreamClient;
import dev.hedgerow.upstream.UpstreamHandler;
import dev.hedgerow.upstream.UpstreamRequest;
import org.junit.jupiter.api.Test;

import java.io.ByteArrayOutputStream;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * The dispatcher's timing decisions with fake time and a scripted upstream fed byte arrays by hand: the hedge
 * window, the hedge budget, the stall watchdog and its reasoning allowances, abandoning a silent route, and the
 * final retryable error, and the head hold of a silent stream. Nothing here sleeps. The group holds the head until
 * the first content ({@code head_hold: off}) but in the head-hold tests, which judge the head alone.
 */
class DispatchTimingTest {
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
                  chat: { first_token_floor: 200ms, first_token_ceiling: 5s, stall_floor: 1s, head_hold: off }
            """;
    static final String SSE = "text/event-stream";

    final FakeTicker ticker = new FakeTicker();
    final FakeScheduler scheduler = new FakeScheduler(ticker);
    final MemoryStateStore store = new MemoryStateStore(ticker);
    final ScriptedUpstream upstream = new ScriptedUpstream();
    final io.micrometer.core.instrument.simple.SimpleMeterRegistry meters =
            new io.micrometer.core.instrument.simple.SimpleMeterRegistry();
    final dev.hedgerow.function.GatewayMetrics counters = new dev.hedgerow.function.GatewayMetrics(meters);

    double metric(String name, String... tags) {
        return meters.find(name).tags(tags).counters().stream().mapToDouble(c -> c.count()).sum();
    }
    final Org org = new CatalogLoader(k -> null).parse(YAML).orgs().get(0);
    final RecordingSink sink = new RecordingSink();
    /** The settings the request is dispatched with: the group's, unless a test replaces them first. */
    GroupSettings settings = org.group("chat");

    // ---- scripted parts --------------------------------------------------------------------------------------

    /** One upstream exchange the test answers by hand. */
    static final class Call {
        final UpstreamRequest request;
        final UpstreamHandler handler;
        boolean cancelled;

        Call(UpstreamRequest request, UpstreamHandler handler) {
            this.request = request;
            this.handler = handler;
        }

        String body() {
            return new String(request.body(), StandardCharsets.UTF_8);
        }

        Call head() {
            handler.onHead(200, Map.of("content-type", SSE));
            return this;
        }

        Call data(String sse) {
            handler.onData(sse.getBytes(StandardCharsets.UTF_8));
            return this;
        }

        Call content(String text) {
            return data("data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":" + quote(text) + "}}]}\n\n");
        }

        Call reasoning(String text) {
            return data("data: {\"choices\":[{\"index\":0,\"delta\":{\"reasoning_content\":" + quote(text)
                    + "}}]}\n\n");
        }

        Call finish() {
            data("data: {\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"stop\"}]}\n\n");
            data("data: [DONE]\n\n");
            handler.onEnd();
            return this;
        }

        static String quote(String s) {
            return dev.hedgerow.api.Json.MAPPER.getNodeFactory().textNode(s).toString();
        }
    }

    static final class ScriptedUpstream implements UpstreamClient {
        final List<Call> calls = new ArrayList<>();
        /** Thrown by every send while set (a bug in sending), nothing sent. */
        RuntimeException throwing;

        @Override
        public Exchange send(UpstreamRequest request, UpstreamHandler handler) {
            if (throwing != null) {
                throw throwing;
            }
            Call c = new Call(request, handler);
            calls.add(c);
            return () -> c.cancelled = true;
        }

        Call last() {
            return calls.get(calls.size() - 1);
        }
    }

    static final class RecordingSink implements ClientSink {
        int status;
        int heads;
        Map<String, String> headers;
        final ByteArrayOutputStream body = new ByteArrayOutputStream();
        boolean ended;

        @Override
        public void head(int status, Map<String, String> headers) {
            this.status = status;
            this.headers = headers;
            heads++;
        }

        @Override
        public void write(byte[] bytes) {
            body.writeBytes(bytes);
        }

        @Override
        public void end() {
            ended = true;
        }

        String text() {
            return body.toString(StandardCharsets.UTF_8);
        }
    }

    // ---- building a request ----------------------------------------------------------------------------------

    /** A candidate whose snapshot holds {@code blobs}, as the store does (a learned model is stepped from it there). */
    Candidate candidate(String routeId, double p90Ms, Map<String, String> blobs) {
        blobs.forEach((name, value) -> store.putRouteBlob("acme/" + routeId, name, value, null).await().indefinitely());
        RouteSnapshot s = new RouteSnapshot("acme/" + routeId, false, 0, 0, false, 0, 0, UsageSample.ZERO, blobs);
        return DispatchFixture.candidate(org, routeId, s, false, new TtftEstimate(p90Ms / 2, p90Ms, true));
    }

    Dispatcher.Handle start(boolean reasoning, HedgeBudget budget, Candidate... cands) {
        Org o = new Org(org.id(), org.keys(), org.adminKeys(), org.providers(), org.routes(), org.groups(),
                org.routing(), budget);
        String body = "{\"model\":\"chat\",\"stream\":true,\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}]"
                + (reasoning ? ",\"reasoning_effort\":\"high\"" : "") + "}";
        ChatRequest chat = ChatRequest.parse(body.getBytes(StandardCharsets.UTF_8), null);
        RequestFacts facts = new RequestFacts(10, null, true, reasoning, Set.of(), Set.of(), ProviderPrefs.NONE,
                List.of(), Map.of(), "hi");
        DispatchRequest dr = new DispatchRequest("chatcmpl-test", 1, o, "app", "chat", settings, chat, facts,
                List.of(cands), RoutePlan.NEVER);
        Dispatcher d = new Dispatcher(DispatchFixture.deps(upstream, store, scheduler, ticker, s -> s.length() / 4,
                counters));
        return d.start(dr, sink);
    }

    Dispatcher.Handle start(boolean reasoning, Candidate... cands) {
        return start(reasoning, HedgeBudget.defaults(), cands);
    }

    void advance(long ms) {
        scheduler.advance(Duration.ofMillis(ms));
    }

    static Map<String, String> blobs(String... kv) {
        Map<String, String> m = new HashMap<>();
        for (int i = 0; i < kv.length; i += 2) {
            m.put(kv[i], kv[i + 1]);
        }
        return m;
    }

    /**
     * A failover whose launch throws (a bug in building or sending the next attempt) fails that attempt and ends the
     * request with an error, its lease and timers gone: it was left live with no exchange nor timer, the client
     * waiting with nothing to drive it and its lease renewed (found by hunt25).
     */
    @Test
    void aFailoverWhoseLaunchThrowsEndsTheRequestInsteadOfLeavingItWaiting() {
        start(false, candidate("chat-a", 800, Map.of()), candidate("chat-b", 800, Map.of()));
        Call a = upstream.last();
        upstream.throwing = new IllegalStateException("a bug in sending the next attempt");
        a.handler.onHead(500, Map.of("content-type", "application/json"));
        a.data("{}");
        a.handler.onEnd();
        assertTrue(sink.ended, "the request ended");
        assertEquals(502, sink.status);
        assertEquals(0, scheduler.pending(), "no timer left");
        long leases = store.snapshot(List.of("acme/chat-b", "acme/chat-c"), Duration.ofMinutes(1)).await()
                .indefinitely().values().stream().mapToLong(RouteSnapshot::inflight).sum();
        assertEquals(0, leases, "no lease left");
    }

    // ---- hedging ---------------------------------------------------------------------------------------------

    @Test
    void hedgeStartsTheNextRouteExactlyWhenThePredictedP90WindowPasses() {
        start(false, candidate("chat-a", 800, Map.of()), candidate("chat-b", 800, Map.of()));
        upstream.last().head();
        advance(799);
        assertEquals(1, upstream.calls.size());
        advance(1);
        assertEquals(2, upstream.calls.size());
        assertTrue(upstream.calls.get(1).body().contains("\"model\":\"mb\""));
        assertEquals(1, metric("hedgerow_hedges", "result", "fired"));
    }

    @Test
    void windowNeverFallsBelowTheFloor() {
        start(false, candidate("chat-a", 20, Map.of()), candidate("chat-b", 20, Map.of()));
        advance(199);
        assertEquals(1, upstream.calls.size());
        advance(1);
        assertEquals(2, upstream.calls.size());
    }

    @Test
    void firstToStreamWinsAndTheOtherIsCancelledAndCountedAsWaste() {
        start(false, candidate("chat-a", 300, Map.of()), candidate("chat-b", 300, Map.of()));
        Call a = upstream.last().head();
        advance(300);
        Call b = upstream.last().head();
        b.content("Hello").content(" world").finish();
        assertTrue(a.cancelled);
        assertFalse(b.cancelled);
        assertEquals("Hello world", Sse.content(sink.text()));
        assertEquals(10, metric("hedgerow_hedge_wasted_tokens"));
        JsonNode trail = Sse.trail(sink.text());
        assertEquals("lost_race", trail.get(0).path("outcome").asText());
        assertEquals("hedge", trail.get(1).path("kind").asText());
        assertEquals("success", trail.get(1).path("outcome").asText());
    }

    /** The trail lists attempts as they were started: a hedge beaten by its primary ends first but comes second. */
    @Test
    void theTrailListsAttemptsInTheOrderTheyStartedWhenThePrimaryWins() {
        start(false, candidate("chat-a", 300, Map.of()), candidate("chat-b", 300, Map.of()));
        Call a = upstream.last().head();
        advance(300);
        Call b = upstream.last().head();
        a.content("Hello").finish();
        assertTrue(b.cancelled);
        JsonNode trail = Sse.trail(sink.text());
        assertEquals(2, trail.size(), trail.toString());
        assertEquals(1, trail.get(0).path("attempt").asInt());
        assertEquals("success", trail.get(0).path("outcome").asText());
        assertEquals(2, trail.get(1).path("attempt").asInt());
        assertEquals("hedge", trail.get(1).path("kind").asText());
        assertEquals("lost_race", trail.get(1).path("outcome").asText());
    }

    /** A route's learnt TTFT line: 40 first tokens of about {@code ms} at 10 prompt tokens. */
    static String learntTtft(double ms) {
        TtftPredictor p = TtftPredictor.fresh(TtftPredictor.Prior.defaults());
        for (int i = 0; i < 40; i++) {
            p = p.update(10, ms + i % 3);
        }
        return p.encode();
    }

    /** The TTFT line the store holds for the route as stored, or null. */
    String ttftBlob(String routeId) {
        return store.snapshot(List.of("acme/" + routeId), Duration.ofMinutes(1)).await().indefinitely()
                .get("acme/" + routeId).blob(LearnedModels.TTFT).orElse(null);
    }

    /** The TTFT line the store holds for the route, or null when nothing was learnt. */
    TtftPredictor ttftInStore(String routeId) {
        return store.snapshot(List.of("acme/" + routeId), Duration.ofMinutes(1)).await().indefinitely()
                .get("acme/" + routeId).blob(LearnedModels.TTFT)
                .map(e -> TtftPredictor.decode(e, TtftPredictor.Prior.defaults())).orElse(null);
    }

    @Test
    void aHedgeRacesLoserTeachesItsRouteItsWaitAsALowerBound() {
        String learnt = learntTtft(100);
        start(false, candidate("chat-a", 300, blobs(LearnedModels.TTFT, learnt)), candidate("chat-b", 300, Map.of()));
        Call a = upstream.last().head();
        advance(300);
        Call b = upstream.last().head();
        advance(200);
        b.content("Hello").finish();
        assertTrue(a.cancelled);
        // chat-a waited 500 ms for a first token that never came: at least 500 ms, learnt as a censored sample
        TtftPredictor expected = TtftPredictor.decode(learnt, TtftPredictor.Prior.defaults()).updateAtLeast(10, 500);
        TtftPredictor got = ttftInStore("chat-a");
        assertNotNull(got, "the loser's route learnt nothing");
        assertEquals(41, got.samples());
        assertEquals(expected.predict(10).meanMs(), got.predict(10).meanMs(), 1e-6);
        assertEquals(expected.predict(10).p90Ms(), got.predict(10).p90Ms(), 1e-6);
        assertTrue(got.predict(10).meanMs() > 100, got.toString());
    }

    @Test
    void aHedgeThatLosesBeforeItsRoutesPredictionTeachesNothing() {
        String learnt = learntTtft(100);
        start(false, candidate("chat-a", 300, Map.of()), candidate("chat-b", 300, blobs(LearnedModels.TTFT, learnt)));
        Call a = upstream.last().head();
        advance(300);
        Call b = upstream.last().head();
        advance(50);
        a.content("Hello").finish();
        assertTrue(b.cancelled);
        // chat-b waited 50 ms, under the 100 ms its line predicts: nothing new, nothing written
        assertEquals(learnt, ttftBlob("chat-b"));
    }

    @Test
    void anAbandonedAttemptTeachesItsRouteItsWait() {
        String learnt = learntTtft(100);
        start(false, new HedgeBudget(0, 0, Duration.ofSeconds(60)),
                candidate("chat-a", 300, blobs(LearnedModels.TTFT, learnt)), candidate("chat-b", 300, Map.of()));
        Call a = upstream.last().head();
        advance(5_000);   // first_token_ceiling: abandoned, and the request fails over
        assertTrue(a.cancelled);
        upstream.last().head().content("Hello").finish();
        TtftPredictor got = ttftInStore("chat-a");
        assertNotNull(got, "the abandoned route learnt nothing");
        assertEquals(TtftPredictor.decode(learnt, TtftPredictor.Prior.defaults()).updateAtLeast(10, 5_000)
                .predict(10).meanMs(), got.predict(10).meanMs(), 1e-6);
    }

    @Test
    void aClientHangUpTeachesTheRoutesNothing() {
        String learnt = learntTtft(100);
        Dispatcher.Handle h = start(false, candidate("chat-a", 300, blobs(LearnedModels.TTFT, learnt)),
                candidate("chat-b", 300, blobs(LearnedModels.TTFT, learnt)));
        upstream.last().head();
        advance(300);
        upstream.last().head();
        advance(700);
        h.clientGone();
        assertEquals(learnt, ttftBlob("chat-a"), "the client left; the route was not slow");
        assertEquals(learnt, ttftBlob("chat-b"));
    }

    @Test
    void exhaustedHedgeBudgetStopsTheHedgeButNotTheRequest() {
        HedgeBudget tight = new HedgeBudget(0.05, 1, Duration.ofSeconds(60));
        start(false, tight, candidate("chat-a", 300, Map.of()), candidate("chat-b", 300, Map.of()));
        advance(300);
        assertEquals(2, upstream.calls.size());
        upstream.calls.get(1).head().content("x").finish();

        start(false, tight, candidate("chat-a", 300, Map.of()), candidate("chat-b", 300, Map.of()));
        Call second = upstream.last().head();
        advance(300);
        assertEquals(3, upstream.calls.size(), "the second request may not hedge: 1 hedge per 2 requests used");
        assertEquals(1, metric("hedgerow_hedges", "result", "budget_refused"));
        second.content("late but served").finish();
        assertTrue(Sse.content(sink.text()).endsWith("late but served"));
    }

    @Test
    void aRefusedHedgeAsksAgainEachTimeTheWaitDoublesAndFiresWhenTheBudgetAllows() {
        HedgeBudget tight = new HedgeBudget(0.05, 1, Duration.ofSeconds(60));
        start(false, tight, candidate("chat-a", 300, Map.of()), candidate("chat-b", 300, Map.of()));
        advance(300);
        upstream.calls.get(1).head().content("x").finish();

        start(false, tight, candidate("chat-a", 300, Map.of()), candidate("chat-b", 300, Map.of()));
        Call slow = upstream.last().head();
        advance(300);
        assertEquals(1, metric("hedgerow_hedges", "result", "budget_refused"), "refused at the window");
        advance(299);
        assertEquals(1, metric("hedgerow_hedges", "result", "budget_refused"));
        advance(1);
        assertEquals(2, metric("hedgerow_hedges", "result", "budget_refused"), "asked again at 2 windows");
        assertEquals(3, upstream.calls.size());
        // other requests arrive: 1 hedge for 22 requests leaves room for a fresh request's hedge (5 % of 22 is
        // 1.1), but not for one asking again, which may use 80 % of the budget (0.88)
        store.countRequests("acme", 20, tight.window()).await().indefinitely();
        advance(599);
        assertEquals(3, upstream.calls.size());
        advance(1);
        assertEquals(3, metric("hedgerow_hedges", "result", "budget_refused"), "asked again at 4 windows");
        assertEquals(3, upstream.calls.size());
        // 1 hedge for 32 requests: 80 % of 5 % of 32 is 1.28
        store.countRequests("acme", 10, tight.window()).await().indefinitely();
        advance(1199);
        assertEquals(3, upstream.calls.size(), "the next ask is at 8 windows (2400 ms)");
        advance(1);
        assertEquals(4, upstream.calls.size());
        assertEquals(2, metric("hedgerow_hedges", "result", "fired"));
        upstream.last().head().content("rescued").finish();
        assertTrue(slow.cancelled);
        assertTrue(Sse.content(sink.text()).endsWith("rescued"));
    }

    @Test
    void aRefusedHedgeStopsAskingOnceContentArrives() {
        HedgeBudget none = new HedgeBudget(0, 0, Duration.ofSeconds(60));
        start(false, none, candidate("chat-a", 300, Map.of()), candidate("chat-b", 300, Map.of()));
        Call a = upstream.last().head();
        advance(600);
        assertEquals(2, metric("hedgerow_hedges", "result", "budget_refused"));
        a.content("on its own").finish();
        advance(10_000);
        assertEquals(2, metric("hedgerow_hedges", "result", "budget_refused"), "no ask after the answer");
        assertEquals(1, upstream.calls.size());
    }

    // ---- stall watchdog --------------------------------------------------------------------------------------

    @Test
    void silentStreamIsCutAtTheStallFloorAndResumedElsewhereWithThePrefill() {
        start(false, candidate("chat-a", 300, Map.of()), candidate("chat-b", 300, Map.of()));
        Call a = upstream.last().head().content("Hello");
        advance(999);
        assertFalse(a.cancelled);
        advance(1);
        assertTrue(a.cancelled);
        Call b = upstream.last();
        assertTrue(b.body().contains("\"continue_final_message\":true"), b.body());
        assertTrue(b.body().contains("\"content\":\"Hello\""), b.body());
        b.head().content(" world").finish();
        assertEquals("Hello world", Sse.content(sink.text()));
        assertEquals("stall", Sse.trail(sink.text()).get(0).path("error").asText());
    }

    @Test
    void aResumeSilentBeforeItsFirstContentKeepsTheClientHearingAComment10sApart() {
        start(false, candidate("chat-a", 300, Map.of()), candidate("chat-b", 300, Map.of()));
        Call a = upstream.last().head().content("Hello");
        advance(1000);
        assertTrue(a.cancelled, "stalled: resumed on chat-b");
        Call b = upstream.last().head();
        int heard = keepAlives();
        assertTrue(heard >= 1, "a comment as the resume starts: " + sink.text());
        // the resume's prefill is silent (and a hedge of it too): the client hears a comment at least every 10 s
        for (int i = 0; i < 3; i++) {
            advance(10_000);
            assertTrue(keepAlives() > heard, "10 s more of silence, no comment: " + sink.text());
            heard = keepAlives();
        }
        Call live = upstream.calls.stream().filter(c -> !c.cancelled).reduce((x, y) -> y).orElseThrow();
        (live == b ? live : live.head()).content(" world").finish();
        assertEquals("Hello world", Sse.content(sink.text()));
        advance(60_000);
        assertEquals(heard, keepAlives(), "none once the resume streams");
    }

    /**
     * With {@code resume_mid_stream: false} a stream is committed at its first content: nothing could resume it, so a
     * pause is not cut at the stall floor. It is waited for until the upstream has been silent for read_timeout (60 s),
     * the client hearing a comment every 10 s meanwhile, and only then ended.
     */
    @Test
    void aStreamCommittedWithoutResumeIsCutOnlyAfterReadTimeoutOfSilenceWithACommentEvery10s() {
        settings = new CatalogLoader(k -> null).parse(YAML.replace("head_hold: off", "head_hold: off, "
                + "resume_mid_stream: false")).orgs().get(0).group("chat");
        assertEquals(Duration.ofSeconds(60), settings.timeouts().read());
        start(false, candidate("chat-a", 300, Map.of()), candidate("chat-b", 300, Map.of()));
        Call a = upstream.last().head().content("Hello");
        advance(59_999);
        assertFalse(a.cancelled, "a pause of a stream nothing could resume is not cut at the 1 s stall floor");
        assertEquals(5, keepAlives(), "a comment every 10 s of silence: " + sink.text());
        advance(1);
        assertTrue(a.cancelled, "silent for read_timeout: taken for dead");
        assertEquals(1, upstream.calls.size(), "never retried after content");
        assertEquals("Hello", Sse.content(sink.text()));
        assertTrue(sink.text().contains("\"code\":\"stream_interrupted\""), sink.text());
        assertEquals("stall", Sse.trail(sink.text()).get(0).path("error").asText());
    }

    private int keepAlives() {
        return sink.text().split(": keep-alive", -1).length - 1;
    }

    @Test
    void stallGapAdaptsToTheRoutesLearnedInterTokenTime() {
        InterTokenStats slow = InterTokenStats.FRESH.observe(2000).observe(2000).observe(2000);
        long allowed = slow.stallGapMillis(1000);
        start(false, candidate("chat-a", 300, blobs(LearnedModels.GAP, slow.encode())),
                candidate("chat-b", 300, Map.of()));
        Call a = upstream.last().head().content("Hello");
        advance(allowed - 1);
        assertFalse(a.cancelled, "a gap the route usually has is not a stall");
        advance(1);
        assertTrue(a.cancelled);
    }

    @Test
    void sixtySecondReasoningPauseWithKeepAlivesIsNotCut() {
        start(true, candidate("chat-a", 300, Map.of()), candidate("chat-b", 300, Map.of()));
        Call a = upstream.last().head().reasoning("Let me think.");
        // 60 s of silence but for a keep-alive comment every 500 ms (the stall floor is 1 s)
        for (int i = 0; i < 120; i++) {
            advance(500);
            a.data(": keep-alive\n\n");
        }
        a.content("Answer.").finish();
        assertFalse(a.cancelled);
        assertEquals(1, upstream.calls.size());
        assertEquals("Let me think.", Sse.reasoning(sink.text()));
        assertEquals("Answer.", Sse.content(sink.text()));
    }

    @Test
    void silentSixtySecondPauseIsNotCutOnARouteThatUsuallyThinksThatLong() {
        ThinkingTime learned = ThinkingTime.FRESH.observe(55_000).observe(58_000).observe(62_000);
        start(true, candidate("chat-a", 300, blobs(LearnedModels.THINK, learned.encode())),
                candidate("chat-b", 300, Map.of()));
        Call a = upstream.last().head().reasoning("Let me think.");
        advance(60_000);
        a.content("Answer.").finish();
        assertFalse(a.cancelled);
        assertEquals(1, upstream.calls.size());
        assertEquals("Answer.", Sse.content(sink.text()));
    }

    @Test
    void silentPauseWhileReasoningOnAnUnmeasuredRouteIsWaitedForLikeASilentFirstTokenThenResumedInReasoning() {
        start(true, candidate("chat-a", 300, Map.of()), candidate("chat-b", 300, Map.of()));
        Call a = upstream.last().head().reasoning("Let me");
        // not the 1 s stall floor: a reasoning request's silent first token may last 2 × the 5 s ceiling
        advance(9_999);
        assertFalse(a.cancelled, "an unmeasured route's thinking pause is not cut at the stall floor");
        advance(1);
        assertTrue(a.cancelled);
        Call b = upstream.last();
        assertTrue(b.body().contains("\"reasoning_content\":\"Let me\""), b.body());
        b.head().reasoning(" think.").content("Answer.").finish();
        assertEquals("Let me think.", Sse.reasoning(sink.text()));
        assertEquals("Answer.", Sse.content(sink.text()));
    }

    @Test
    void thinkingTimeIsLearnedFromTheFirstReasoningToTheFirstVisibleChunk() {
        start(true, candidate("chat-a", 300, Map.of()));
        Call a = upstream.last().head().reasoning("hmm");
        advance(400);
        a.reasoning(" yes");
        advance(500);
        a.content("Answer.").finish();
        String enc = store.snapshot(List.of("acme/chat-a"), Duration.ofMinutes(1)).await().indefinitely()
                .get("acme/chat-a").blob(LearnedModels.THINK).orElseThrow();
        assertEquals(900, ThinkingTime.decode(enc).meanMs(), 0.001);
    }

    @Test
    void gapsAreFoldedLocallyAndWrittenToTheRouteOnceAtTheEnd() {
        start(false, candidate("chat-a", 300, Map.of()));
        Call a = upstream.last().head().content("a");
        for (int i = 0; i < 5; i++) {
            advance(100);
            a.content("b");
        }
        assertTrue(store.snapshot(List.of("acme/chat-a"), Duration.ofMinutes(1)).await().indefinitely()
                .get("acme/chat-a").blob(LearnedModels.GAP).isEmpty(), "nothing written while streaming");
        a.finish();
        String enc = store.snapshot(List.of("acme/chat-a"), Duration.ofMinutes(1)).await().indefinitely()
                .get("acme/chat-a").blob(LearnedModels.GAP).orElseThrow();
        InterTokenStats s = InterTokenStats.decode(enc);
        assertEquals(5, s.count());
        assertEquals(100, s.meanMs(), 0.001);
    }

    // ---- no give-up timer ------------------------------------------------------------------------------------

    @Test
    void aSlowButStreamingAnswerIsNeverTimedOut() {
        start(false, candidate("chat-a", 300, Map.of()));
        Call a = upstream.last().head();
        a.content("t");
        for (int i = 0; i < 600; i++) {
            advance(900);
            a.content("t");
        }
        a.finish();
        assertFalse(a.cancelled);
        assertEquals(601, Sse.content(sink.text()).length());
        assertEquals(200, sink.status);
    }

    /**
     * A tool call's deltas are held until the answer finishes; over a long call the client still hears from the
     * stream (a keep-alive comment at least every 10 s) instead of 25 s of silence a proxy would cut.
     */
    @Test
    void aLongHeldToolCallKeepsTheClientConnectionAlive() {
        start(false, candidate("chat-a", 300, Map.of()));
        Call a = upstream.last().head();
        a.data(toolDelta("{\"id\":\"call_1\",\"type\":\"function\","
                + "\"function\":{\"name\":\"write\",\"arguments\":\"\"}}"));
        for (int i = 0; i < 50; i++) {     // 25 s of arguments, a piece every 500 ms
            advance(500);
            a.data(toolDelta("{\"function\":{\"arguments\":\"x\"}}"));
        }
        String beforeEnd = sink.text();
        assertFalse(beforeEnd.contains("\"tool_calls\":["), "the call is held: " + beforeEnd);
        assertEquals(2, beforeEnd.split(": keep-alive", -1).length - 1, "one comment per 10 s held: " + beforeEnd);
        a.data("data: {\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"tool_calls\"}]}\n\n")
                .data("data: [DONE]\n\n");
        a.handler.onEnd();
        assertFalse(a.cancelled);
        assertEquals(51, sink.text().split("\"tool_calls\":\\[", -1).length - 1, "every delta, then: " + sink.text());
        assertEquals(2, sink.text().split(": keep-alive", -1).length - 1);
    }

    /** How many chunks the client got that carry a tool call. */
    private int toolChunks() {
        return sink.text().split("\"tool_calls\":\\[", -1).length - 1;
    }

    private GroupSettings chatWith(String settingsYaml) {
        return new CatalogLoader(k -> null).parse(YAML.replace("head_hold: off", "head_hold: off, " + settingsYaml))
                .orgs().get(0).group("chat");
    }

    /**
     * With {@code resume_mid_stream: false} nothing could resume a stream broken mid-call, so a tool call's deltas
     * go out as they come: the first one commits its attempt as a content frame does, and the hedge racing it is
     * cancelled.
     */
    @Test
    void withResumeOffAToolCallsDeltasReachTheClientAsTheyComeAndCommitTheirAttempt() {
        settings = chatWith("resume_mid_stream: false");
        start(false, candidate("chat-a", 300, Map.of()), candidate("chat-b", 300, Map.of()));
        Call a = upstream.last().head();
        advance(300);
        assertEquals(2, upstream.calls.size(), "a hedge races the silent route");
        Call b = upstream.last().head();
        b.data(toolDelta("{\"id\":\"call_1\",\"type\":\"function\","
                + "\"function\":{\"name\":\"write\",\"arguments\":\"\"}}"));
        assertTrue(a.cancelled, "the first tool-call delta commits the hedge: its rival is cancelled");
        assertEquals(200, sink.status);
        assertEquals(1, toolChunks(), "the call's head at once: " + sink.text());
        advance(500);
        b.data(toolDelta("{\"function\":{\"arguments\":\"{\\\"path\"}}"));
        assertEquals(2, toolChunks(), "its first argument piece at once: " + sink.text());
        assertTrue(sink.text().contains("\"arguments\":\"{\\\"path\""), sink.text());
        b.data("data: {\"choices\":[{\"index\":0,\"delta\":{\"tool_calls\":[{\"index\":0,\"function\":"
                + "{\"arguments\":\"\\\":\\\"a\\\"}\"}}]},\"finish_reason\":\"tool_calls\"}]}\n\n")
                .data("data: [DONE]\n\n");
        b.handler.onEnd();
        assertEquals(3, toolChunks(), sink.text());
        assertTrue(sink.ended);
        assertEquals("tool_calls", Sse.events(sink.text()).get(Sse.events(sink.text()).size() - 1)
                .path("choices").path(0).path("finish_reason").asText(), sink.text());
        assertEquals(0, keepAlives(), "nothing was held: " + sink.text());
    }

    /**
     * Once the last resume the group allows is streaming, nothing could resume it again: a tool call it begins goes
     * out as it comes, where the first attempt's call would have been held.
     */
    @Test
    void aToolCallOfTheLastResumeAllowedIsSentAsItComes() {
        settings = chatWith("max_resumes: 1");
        start(false, candidate("chat-a", 300, Map.of()), candidate("chat-b", 300, Map.of()));
        Call a = upstream.last().head().content("Let me look. ");
        a.handler.onError(new dev.hedgerow.upstream.TransportFailure(
                dev.hedgerow.upstream.TransportFailure.Kind.RESET, "reset"));
        assertEquals(2, upstream.calls.size(), "resumed on chat-b");
        Call b = upstream.last().head();
        b.data(toolDelta("{\"id\":\"call_1\",\"type\":\"function\","
                + "\"function\":{\"name\":\"write\",\"arguments\":\"\"}}"));
        assertEquals(1, toolChunks(), "the call's head at once: " + sink.text());
        b.data(toolDelta("{\"function\":{\"arguments\":\"{}\"}}"));
        assertEquals(2, toolChunks(), sink.text());
        assertEquals("Let me look. ", Sse.content(sink.text()));
    }

    /** With resumes left, the same call is held: a break inside it would still be resumed from the text before it. */
    @Test
    void aToolCallIsHeldWhileAResumeIsStillAllowed() {
        settings = chatWith("max_resumes: 2");
        start(false, candidate("chat-a", 300, Map.of()), candidate("chat-b", 300, Map.of()));
        Call a = upstream.last().head().content("Let me look. ");
        a.handler.onError(new dev.hedgerow.upstream.TransportFailure(
                dev.hedgerow.upstream.TransportFailure.Kind.RESET, "reset"));
        Call b = upstream.last().head();
        b.data(toolDelta("{\"id\":\"call_1\",\"type\":\"function\","
                + "\"function\":{\"name\":\"write\",\"arguments\":\"\"}}"));
        b.data(toolDelta("{\"function\":{\"arguments\":\"{}\"}}"));
        assertEquals(0, toolChunks(), "held: " + sink.text());
        b.data("data: {\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"tool_calls\"}]}\n\n");
        assertEquals(2, toolChunks(), "released at the finish: " + sink.text());
    }

    /**
     * Once a call went out (text followed it), a break would end the stream whatever is held, so a second call's
     * deltas go out as they come.
     */
    @Test
    void aToolCallAfterOneThatWentOutIsSentAsItComes() {
        start(false, candidate("chat-a", 300, Map.of()));
        Call a = upstream.last().head();
        a.data(toolDelta("{\"id\":\"call_1\",\"type\":\"function\","
                + "\"function\":{\"name\":\"write\",\"arguments\":\"{}\"}}"));
        assertEquals(0, toolChunks(), "the first call is held: " + sink.text());
        a.content("Now the second. ");
        assertEquals(1, toolChunks(), "text after it sends it: " + sink.text());
        a.data("data: {\"choices\":[{\"index\":0,\"delta\":{\"tool_calls\":[{\"index\":1,\"id\":\"call_2\","
                + "\"type\":\"function\",\"function\":{\"name\":\"read\",\"arguments\":\"\"}}]}}]}\n\n");
        assertEquals(2, toolChunks(), "the second call's head at once: " + sink.text());
    }

    static String toolDelta(String call) {
        return "data: {\"choices\":[{\"index\":0,\"delta\":{\"tool_calls\":["
                + call.replaceFirst("\\{", "{\"index\":0,") + "]}}]}\n\n";
    }

    @Test
    void silentRoutesAreAbandonedForTheNextAndOnlyAfterEveryRouteWasTriedARetryable502() {
        start(false, candidate("chat-a", 300, Map.of()), candidate("chat-b", 300, Map.of()),
                candidate("chat-c", 300, Map.of()));
        // the last one is not abandoned (nothing would follow it): with no head, read_timeout (60 s) ends it
        for (int i = 0; i < 150 && !sink.ended; i++) {
            advance(1000);
        }
        assertEquals(3, upstream.calls.size());
        assertTrue(sink.headers.get("x-hedgerow-attempts").contains("\"error\":\"timeout_read\""),
                sink.headers.toString());
        assertTrue(upstream.calls.stream().allMatch(c -> c.cancelled));
        assertEquals(502, sink.status);
        assertEquals("application/json", sink.headers.get("content-type"));
        assertNull(sink.headers.get("x-hedgerow-route"));
        assertTrue(Integer.parseInt(sink.headers.get("retry-after")) >= 1);
        assertTrue(sink.text().contains("(3 attempts failed;"), sink.text());
    }

    @Test
    void theLastRouteLeftIsNotAbandonedWhileItIsStillBeingServed() {
        start(false, candidate("chat-a", 300, Map.of()), candidate("chat-b", 300, Map.of()));
        Call a = upstream.last().head();
        for (int i = 0; i < 120 && !a.cancelled; i++) {
            advance(1000);
        }
        assertTrue(a.cancelled, "a silent route is abandoned while another can be tried");
        assertEquals(2, upstream.calls.size());
        Call b = upstream.last().head();
        for (int i = 0; i < 600; i++) {
            advance(1000);   // ten minutes without a token after its head, a keep-alive comment every 30 s
            if (i % 30 == 29) {
                b.data(": keep-alive\n\n");
            }
        }
        assertFalse(b.cancelled, "abandoning the last route would answer an error while it is still serving");
        b.content("late").finish();
        assertEquals(200, sink.status);
        assertEquals("late", Sse.content(sink.text()));
    }

    /** The last route is waited for while it shows life; one silent for longer than read_timeout (60 s) is dead. */
    @Test
    void theLastRouteLeftIsEndedWhenItIsSilentForLongerThanReadTimeout() {
        start(false, candidate("chat-a", 300, Map.of()));
        Call a = upstream.last().head();
        advance(59_000);
        assertFalse(a.cancelled, "still within read_timeout of silence");
        advance(1_000);
        assertTrue(a.cancelled, "silent for read_timeout: taken for dead");
        assertEquals(502, sink.status);
        assertTrue(sink.headers.get("x-hedgerow-attempts").contains("\"error\":\"timeout_first_token\""),
                sink.headers.toString());
    }

    // ---- head hold -------------------------------------------------------------------------------------------

    /** The group as the file would give it with {@code head_hold} unset: 30 s. */
    void defaultHeadHold() {
        settings = new CatalogLoader(k -> null).parse(YAML.replace(", head_hold: off", "")).orgs().get(0)
                .group("chat");
        assertEquals(Duration.ofSeconds(30), settings.headHold());
    }

    @Test
    void aStreamSilentForItsHeadHoldGetsItsHeadThenAKeepAliveEvery10sUntilTheContent() {
        defaultHeadHold();
        start(false, candidate("chat-a", 300, Map.of()));
        Call a = upstream.last().head();
        a.data("data: {\"choices\":[{\"index\":0,\"delta\":{\"role\":\"assistant\"}}]}\n\n");
        advance(29_999);
        assertEquals(0, sink.heads, "silent for less than the head hold: nothing sent");
        advance(1);
        assertEquals(200, sink.status);
        assertEquals(SSE, sink.headers.get("content-type"));
        assertNull(sink.headers.get("x-hedgerow-route"), "no route has won yet: " + sink.headers);
        assertEquals(": keep-alive\n\n", sink.text());
        assertEquals(1.0, metric("hedgerow_early_heads", "alias", "chat"));
        advance(9_999);
        assertEquals(1, sink.text().split(": keep-alive", -1).length - 1);
        advance(1);
        assertEquals(2, sink.text().split(": keep-alive", -1).length - 1, "one comment per 10 s: " + sink.text());
        a.content("late").finish();
        assertEquals(1, sink.heads, "the head went out once");
        assertEquals("late", Sse.content(sink.text()));
        assertTrue(sink.text().indexOf("\"role\":\"assistant\"") > sink.text().lastIndexOf(": keep-alive"),
                "the held role chunk comes with the content: " + sink.text());
        assertTrue(sink.text().endsWith("data: [DONE]\n\n"), sink.text());
        advance(60_000);
        assertEquals(2, sink.text().split(": keep-alive", -1).length - 1, "no comment after the end");
    }

    /** Past the head hold the last route's death (silent for read_timeout) can only be the stream's error event. */
    @Test
    void theLastRouteEndingAfterAnEarlyHeadEndsTheStreamWithTheErrorEventAndTheTrail() {
        defaultHeadHold();
        start(false, candidate("chat-a", 300, Map.of()));
        Call a = upstream.last().head();
        advance(60_000);
        assertTrue(a.cancelled, "silent for read_timeout: taken for dead");
        assertEquals(1, sink.heads);
        assertEquals(200, sink.status);
        assertTrue(sink.ended);
        List<JsonNode> events = Sse.events(sink.text());
        assertEquals(1, events.size(), sink.text());
        assertEquals("upstream_error", events.get(0).path("error").path("code").asText(), sink.text());
        assertEquals("timeout_first_token", events.get(0).path("attempt_trail").path(0).path("error").asText(),
                sink.text());
        assertTrue(sink.text().endsWith("data: [DONE]\n\n"), sink.text());
    }

    /**
     * A request that lets a route think, on a route that streams its reasoning: its first reasoning chunk ends the
     * first-token window, and comes before the thinking, so the window is the route's first-chunk P90 (about 100 ms
     * here, so the 200 ms floor), not that plus its usual 20 s of thinking, which left a silent route unraced for 20 s
     * (found by hunt21). The estimate is the one the router builds (LearnedModels.ttft).
     */
    @Test
    void aReasoningRequestIsHedgedAtTheFirstChunkWindowNotAfterTheThinkingTime() {
        TtftPredictor p = TtftPredictor.fresh(TtftPredictor.Prior.defaults());
        for (int i = 0; i < 40; i++) {
            p = p.update(10, 100 + i % 3);
        }
        ThinkingTime think = ThinkingTime.FRESH;
        for (int i = 0; i < 10; i++) {
            think = think.observe(20_000);
        }
        Map<String, String> learned = blobs(LearnedModels.TTFT, p.encode(), LearnedModels.THINK, think.encode());
        learned.forEach((n, v) -> store.putRouteBlob("acme/chat-a", n, v, null).await().indefinitely());
        RouteSnapshot s = new RouteSnapshot("acme/chat-a", false, 0, 0, false, 0, 0, UsageSample.ZERO, learned);
        RequestFacts reasoning = new RequestFacts(10, null, true, true, Set.of(), Set.of(), ProviderPrefs.NONE,
                List.of(), Map.of(), "hi");
        TtftEstimate est = DispatchFixture.models(store, ticker).ttft(s, reasoning);
        assertTrue(est.p90Ms() > 20_000, "ranked by what the client waits for: " + est);
        start(true, DispatchFixture.candidate(org, "chat-a", s, false, est), candidate("chat-b", 300, Map.of()));
        upstream.last().head();   // the head, then silence: no reasoning chunk, no token
        advance(1_000);
        assertEquals(2, upstream.calls.size(), "hedged at the first-chunk window");
    }

    /**
     * A hedge that fails at once (503) while the primary, past its window, is still silent is failed over as any
     * attempt is: the third route races the primary at once. Nothing else was tried until the primary was abandoned
     * at first_token_ceiling (found by hunt21).
     */
    @Test
    void aHedgeThatFailsFastIsFailedOverWhileThePrimaryIsSilent() {
        start(false, candidate("chat-a", 300, Map.of()), candidate("chat-b", 300, Map.of()),
                candidate("chat-c", 300, Map.of()));
        Call a = upstream.last().head();
        advance(300);
        assertEquals(2, upstream.calls.size(), "hedge to chat-b at the 300 ms window");
        advance(10);
        Call hedge = upstream.last();
        hedge.handler.onHead(503, Map.of("content-type", "application/json"));
        hedge.data("{\"error\":{\"message\":\"overloaded\",\"type\":\"server_error\"}}");
        hedge.handler.onEnd();
        assertEquals(3, upstream.calls.size(), "chat-c races the silent primary");
        upstream.last().head().content("Hi").finish();
        assertTrue(a.cancelled, "the primary lost the race");
        assertTrue(sink.text().contains("Hi"), sink.text());
    }

    /**
     * A hedge whose route refuses the gateway's stream_options is sent again without them: one hedge, counted once in
     * hedgerow_hedges_total{result="fired"} (it was counted at each send; found by hunt20).
     */
    @Test
    void aHedgeSentAgainWithoutStreamOptionsIsCountedOnce() {
        start(false, candidate("chat-a", 300, Map.of()), candidate("chat-b", 300, Map.of()));
        upstream.last().head();
        advance(400);
        Call hedge = upstream.last();
        assertEquals(2, upstream.calls.size());
        hedge.handler.onHead(400, Map.of("content-type", "application/json"));
        hedge.data("{\"error\":{\"message\":\"Unrecognized request argument supplied: stream_options\","
                + "\"param\":\"stream_options\"}}");
        hedge.handler.onEnd();
        assertEquals(3, upstream.calls.size(), "sent again without the field");
        assertFalse(upstream.last().body().contains("stream_options"), upstream.last().body());
        upstream.last().head().content("Hi").finish();
        assertEquals(1, metric("hedgerow_hedges", "result", "fired"));
    }
}
