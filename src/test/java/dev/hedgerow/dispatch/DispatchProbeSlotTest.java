package dev.hedgerow.dispatch;

import com.fasterxml.jackson.databind.JsonNode;
import dev.hedgerow.api.ChatRequest;
import dev.hedgerow.api.ProviderPrefs;
import dev.hedgerow.catalog.CatalogLoader;
import dev.hedgerow.catalog.Org;
import dev.hedgerow.dispatch.DispatchTimingTest.Call;
import dev.hedgerow.dispatch.DispatchTimingTest.RecordingSink;
import dev.hedgerow.dispatch.DispatchTimingTest.ScriptedUpstream;
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
import io.smallrye.mutiny.Uni;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

import java.io.IOException;
import java.lang.reflect.InvocationTargetException;
import java.lang.reflect.Proxy;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.CompletableFuture;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * The half-open probe slot in the dispatcher, with fake time, a scripted upstream and the memory store: a probe
 * that comes to no verdict on the route (client hang-up, a client error passed through, a lost race, a slot
 * granted after the request ended, an acquisition whose reply was lost) gives the slot back at once, and leaves the
 * breaker as it was; exactly one release per slot, none after a verdict (which frees the slot itself) and none for a
 * slot another instance holds. Route "b" is half-open in every test (one failure, {@code max_fails: 1}, cooldown
 * over). The store is the memory store behind a watching proxy ({@link ObservedStore}) that counts releases and can
 * hold an acquisition's reply, the only way to order it exactly against a hang-up.
 */
class DispatchProbeSlotTest {
    static final String YAML = """
            orgs:
              - id: acme
                keys: [{ name: app, key: "k" }]
                providers:
                  - { id: a, base_url: "http://a.invalid/v1", dialect: vllm }
                  - { id: b, base_url: "http://b.invalid/v1", dialect: vllm }
                routes:
                  - { alias: chat, provider: a, model: ma, capabilities: [prefill] }
                  - { alias: chat, provider: b, model: mb, capabilities: [prefill] }
                groups:
                  chat: { first_token_floor: 200ms, first_token_ceiling: 5s, stall_floor: 1s,
                          breaker: { max_fails: 1, fail_timeout: 30s } }
            """;
    static final String B = "acme/chat-b";

    final FakeTicker ticker = new FakeTicker();
    final FakeScheduler scheduler = new FakeScheduler(ticker);
    final MemoryStateStore memory = new MemoryStateStore(ticker);
    final ScriptedUpstream upstream = new ScriptedUpstream();
    final RecordingSink sink = new RecordingSink();
    final ObservedStore store = new ObservedStore();
    final Org org = new CatalogLoader(k -> null).parse(YAML).orgs().get(0);

    @BeforeEach
    void halfOpenB() {
        memory.recordFailure(B, 1, Duration.ofSeconds(30)).await().indefinitely();
        ticker.advance(Duration.ofSeconds(30));
        RouteSnapshot s = snapshot();
        assertTrue(!s.coolingDown() && s.fails() == 1 && !s.probeTaken(), "precondition: b is half-open " + s);
    }

    Candidate healthy(String routeId) {
        return candidate(routeId, RouteSnapshot.empty("acme/" + routeId), false);
    }

    Candidate halfOpen() {
        return candidate("chat-b", new RouteSnapshot(B, false, 0, 1, false, 0, 0, UsageSample.ZERO, Map.of()), true);
    }

    Candidate candidate(String routeId, RouteSnapshot s, boolean halfOpen) {
        return DispatchFixture.candidate(org, routeId, s, halfOpen, new TtftEstimate(150, 300, true));
    }

    Dispatcher.Handle start(Candidate... cands) {
        String body = "{\"model\":\"chat\",\"stream\":true,\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}]}";
        ChatRequest chat = ChatRequest.parse(body.getBytes(StandardCharsets.UTF_8), null);
        RequestFacts facts = new RequestFacts(10, null, true, false, Set.of(), Set.of(), ProviderPrefs.NONE,
                List.of(), Map.of(), "hi");
        DispatchRequest dr = new DispatchRequest("chatcmpl-test", 1, org, "app", "chat", org.group("chat"), chat, facts,
                List.of(cands), RoutePlan.NEVER);
        Dispatcher d = new Dispatcher(DispatchFixture.deps(upstream, store.proxy, scheduler, ticker,
                s -> s.length() / 4, DispatchObserver.NONE));
        return d.start(dr, sink);
    }

    RouteSnapshot snapshot() {
        return memory.snapshot(List.of(B), Duration.ofMinutes(1)).await().indefinitely().get(B);
    }

    /** The slot is free and the breaker untouched: still one failure, not cooling down, so b may be probed again. */
    void assertSlotFreeAndBreakerUntouched() {
        RouteSnapshot s = snapshot();
        assertFalse(s.probeTaken(), "the slot was given back");
        assertEquals(1, s.fails(), "no verdict on the route");
        assertFalse(s.coolingDown());
        assertTrue(memory.tryAcquireProbe(B, 1, Duration.ofSeconds(30), "next-request").await().indefinitely(),
                "the next request may probe b at once");
    }

    static List<String> outcomes(JsonNode trail) {
        List<String> out = new ArrayList<>();
        trail.forEach(a -> out.add(a.path("route").asText() + ":" + a.path("outcome").asText()));
        return out;
    }

    /**
     * A request refused inside its start (its one route half-open, the probe slot held elsewhere) leaves no timer
     * behind: the lease renewal and head hold were armed after the refusal and kept the finished request for up to
     * 30 s (found by hunt25).
     */
    @Test
    void aRequestRefusedAtItsStartLeavesNoTimer() {
        assertTrue(memory.tryAcquireProbe(B, 1, Duration.ofSeconds(60), "another-instance").await().indefinitely());
        start(halfOpen());
        assertEquals(503, sink.status);
        assertEquals(0, scheduler.pending(), "no timer left");
    }

    @Test
    void aProbeStreamingPastItsSlotsTtlKeepsTheSlotUntilItsVerdict() {
        start(halfOpen(), healthy("chat-a"));
        Call probe = upstream.last().head().content("Hello");
        // the slot was taken for the probe's longest silence plus 5 s (5 s ceiling + 5 s); the stream runs 27 s
        for (int i = 0; i < 30; i++) {
            scheduler.advance(Duration.ofMillis(900));
            probe.content(" more");
        }
        assertTrue(snapshot().probeTaken(), "renewed while the probe runs");
        assertFalse(memory.tryAcquireProbe(B, 1, Duration.ofSeconds(30), "another-instance").await().indefinitely(),
                "no second probe of b while the first still streams");
        probe.finish();
        RouteSnapshot s = snapshot();
        assertFalse(s.probeTaken(), "the verdict freed the slot");
        assertEquals(0, s.fails(), "the probe's success closed the breaker");
        assertEquals(1, store.releases.size(), "the release under its token that follows every verdict (a no-op"
                + " here): a verdict the shared store did not take left the slot taken (hunt23)");
        assertEquals(0, scheduler.pending(), "the slot's renewal stopped with its verdict");
    }

    @Test
    void aHalfOpenProbeThatLosesTheHedgingRaceGivesTheSlotBack() {
        start(halfOpen(), healthy("chat-a"));
        Call probe = upstream.last().head();
        assertTrue(snapshot().probeTaken(), "precondition: the probe holds the slot");
        scheduler.advance(Duration.ofMillis(300));
        assertEquals(2, upstream.calls.size(), "the hedge went to a");
        upstream.last().head().content("Hello").finish();
        assertTrue(probe.cancelled);
        assertEquals(List.of("chat-b:lost_race", "chat-a:success"), outcomes(Sse.trail(sink.text())));
        assertEquals(1, store.releases.size());
        assertSlotFreeAndBreakerUntouched();
        assertEquals(0, scheduler.pending(), "the slot's renewal stopped with its release");
    }

    @Test
    void aClientErrorFromTheHalfOpenRouteIsPassedThroughAndGivesTheSlotBack() {
        start(halfOpen(), healthy("chat-a"));
        Call probe = upstream.last();
        probe.handler.onHead(400, Map.of("content-type", "application/json"));
        probe.data("{\"error\":{\"message\":\"bad temperature\",\"type\":\"invalid_request_error\"}}");
        probe.handler.onEnd();
        assertEquals(400, sink.status);
        assertTrue(sink.text().contains("bad temperature"), sink.text());
        assertEquals(1, upstream.calls.size());
        assertEquals(1, store.releases.size());
        assertSlotFreeAndBreakerUntouched();
    }

    @Test
    void aClientHangUpDuringTheHalfOpenProbeGivesTheSlotBack() {
        Dispatcher.Handle h = start(halfOpen(), healthy("chat-a"));
        Call probe = upstream.last().head();
        assertTrue(snapshot().probeTaken(), "precondition: the probe holds the slot");
        h.clientGone();
        assertTrue(probe.cancelled);
        assertEquals(1, store.releases.size());
        assertSlotFreeAndBreakerUntouched();
    }

    @Test
    void aSuccessfulProbeClosesTheBreakerThroughItsVerdict() {
        start(halfOpen());
        upstream.last().head().content("Hello").finish();
        RouteSnapshot s = snapshot();
        assertFalse(s.probeTaken());
        assertEquals(0, s.fails(), "the verdict closed the breaker");
        assertEquals(1, store.releases.size(), "the verdict freed the slot; the release that follows it is a no-op");
    }

    @Test
    void aFailedProbeCoolsTheRouteThroughItsVerdict() {
        start(halfOpen(), healthy("chat-a"));
        Call probe = upstream.last();
        probe.handler.onHead(503, Map.of("content-type", "application/json"));
        probe.handler.onEnd();
        upstream.last().head().content("Hello").finish();
        RouteSnapshot s = snapshot();
        assertFalse(s.probeTaken());
        assertTrue(s.coolingDown(), "the verdict re-armed the cooldown");
        assertEquals(2, s.fails());
        assertEquals(1, store.releases.size(), "the verdict freed the slot; the release that follows it is a no-op");
    }

    @Test
    void aRefusedPrefillOnTheHalfOpenRouteRetakesTheSlotForItsNextMethod() {
        start(healthy("chat-a"), halfOpen());
        upstream.last().head().content("Hello");
        scheduler.advance(Duration.ofSeconds(1)); // the stall floor: a is cut, the stream resumes on b
        Call prefill = upstream.last();
        assertEquals(2, upstream.calls.size());
        assertTrue(prefill.body().contains("\"continue_final_message\":true"), prefill.body());
        prefill.handler.onHead(400, Map.of("content-type", "application/json"));
        prefill.data("{\"error\":{\"message\":\"continue_final_message is not supported\"}}");
        prefill.handler.onEnd();
        assertEquals(3, upstream.calls.size());
        Call instruction = upstream.last();
        assertTrue(instruction.body().contains("\"model\":\"mb\""),
                "the next method went to b under a new slot, not skipped as taken: " + instruction.body());
        assertTrue(instruction.body().contains(ContinuationMethod.INSTRUCTION_TEXT), instruction.body());
        assertTrue(snapshot().probeTaken());
        instruction.head().content("Hello world").finish();
        assertEquals("Hello world", Sse.content(sink.text()));
        assertEquals(0, snapshot().fails(), "the resumed probe's success closed the breaker");
        assertEquals(2, store.releases.size(), "the refused prefill's slot, and the no-op release after the verdict");
    }

    // ---- acquisitions answered late, or not at all -----------------------------------------------------------

    @Test
    void aSlotGrantedAfterTheClientHungUpIsGivenBack() {
        store.holdAcquisitions = true;
        Dispatcher.Handle h = start(halfOpen(), healthy("chat-a"));
        assertEquals(1, store.held.size());
        h.clientGone();
        store.grant(0);
        assertEquals(0, upstream.calls.size(), "nothing was sent for a request that is gone");
        assertEquals(1, store.releases.size());
        assertSlotFreeAndBreakerUntouched();
    }

    @Test
    void anAcquisitionWhoseReplyWasLostIsGivenBackAndTheRequestServedElsewhere() {
        store.holdAcquisitions = true;
        start(halfOpen(), healthy("chat-a"));
        store.loseReply(0);
        assertEquals(1, upstream.calls.size());
        upstream.last().head().content("Hello").finish();
        assertEquals("Hello", Sse.content(sink.text()));
        assertEquals(List.of("chat-b:skipped", "chat-a:success"), outcomes(Sse.trail(sink.text())));
        assertEquals(1, store.releases.size());
        assertSlotFreeAndBreakerUntouched();
    }

    @Test
    void aSlotTakenByAnotherInstanceIsNeitherUsedNorReleased() {
        assertTrue(memory.tryAcquireProbe(B, 1, Duration.ofSeconds(30), "another-instance").await().indefinitely());
        start(halfOpen(), healthy("chat-a"));
        assertEquals(1, upstream.calls.size());
        assertTrue(upstream.last().body().contains("\"model\":\"ma\""));
        upstream.last().head().content("Hello").finish();
        assertEquals(List.of("chat-b:skipped", "chat-a:success"), outcomes(Sse.trail(sink.text())));
        // the skip takes its own number: no two records of a trail share one
        assertEquals(1, Sse.trail(sink.text()).get(0).path("attempt").asInt());
        assertEquals(2, Sse.trail(sink.text()).get(1).path("attempt").asInt());
        assertEquals(List.of(), store.releases);
        assertTrue(snapshot().probeTaken(), "the other instance's probe keeps its slot");
    }

    @Test
    void aRequestWhoseOnlyRouteIsProbedByAnotherIsRefusedAsNoHealthyProviderNotAnUpstreamFailure() {
        assertTrue(memory.tryAcquireProbe(B, 1, Duration.ofSeconds(30), "another-instance").await().indefinitely());
        start(halfOpen());
        assertEquals(0, upstream.calls.size(), "nothing was sent");
        assertEquals(503, sink.status, sink.text());
        assertEquals("1", sink.headers.get("retry-after"), "the probe is in flight");
        assertEquals("1000", sink.headers.get("retry-after-ms"));
        assertTrue(sink.text().contains("\"code\":\"no_healthy_provider\""), sink.text());
        assertEquals(List.of(), store.releases);
        assertTrue(snapshot().probeTaken(), "the other instance's probe keeps its slot");
    }

    /**
     * The memory store, watched: it records every probe release, and with {@link #holdAcquisitions} every probe
     * acquisition waits until the test answers it: {@link #grant} forwards it to the store as it arrives late,
     * {@link #loseReply} lets the store take the slot but fails the reply (a connection dropped after the script ran).
     */
    final class ObservedStore {
        final List<String> releases = new ArrayList<>();
        final List<Object[]> held = new ArrayList<>();
        final List<CompletableFuture<Boolean>> replies = new ArrayList<>();
        boolean holdAcquisitions;
        final StateStore proxy = (StateStore) Proxy.newProxyInstance(StateStore.class.getClassLoader(),
                new Class<?>[] {StateStore.class}, (p, method, a) -> {
                    if (method.getName().equals("tryAcquireProbe") && holdAcquisitions) {
                        CompletableFuture<Boolean> reply = new CompletableFuture<>();
                        held.add(a);
                        replies.add(reply);
                        return Uni.createFrom().completionStage(reply);
                    }
                    if (method.getName().equals("releaseProbe")) {
                        releases.add((String) a[1]);
                    }
                    try {
                        return method.invoke(memory, a);
                    } catch (InvocationTargetException e) {
                        throw e.getCause();
                    }
                });

        boolean acquireOnMemory(int i) {
            Object[] a = held.get(i);
            return memory.tryAcquireProbe((String) a[0], (Integer) a[1], (Duration) a[2], (String) a[3]).await()
                    .indefinitely();
        }

        void grant(int i) {
            replies.get(i).complete(acquireOnMemory(i));
        }

        void loseReply(int i) {
            assertTrue(acquireOnMemory(i), "the store took the slot");
            replies.get(i).completeExceptionally(new IOException("connection reset"));
        }
    }
}
