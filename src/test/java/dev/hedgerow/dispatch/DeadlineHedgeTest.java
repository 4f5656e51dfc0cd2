package dev.hedgerow.dispatch;

import dev.hedgerow.api.ChatRequest;
import dev.hedgerow.api.ProviderPrefs;
import dev.hedgerow.catalog.CatalogLoader;
import dev.hedgerow.catalog.Org;
import dev.hedgerow.dispatch.DispatchTimingTest.RecordingSink;
import dev.hedgerow.dispatch.KongTimeoutsDispatchTest.HandUpstream;
import dev.hedgerow.routing.Candidate;
import dev.hedgerow.routing.RequestFacts;
import dev.hedgerow.routing.RoutePlan;
import dev.hedgerow.routing.TtftEstimate;
import dev.hedgerow.state.MemoryStateStore;
import dev.hedgerow.state.RouteSnapshot;
import dev.hedgerow.testsupport.DispatchFixture;
import dev.hedgerow.time.FakeScheduler;
import dev.hedgerow.time.FakeTicker;
import dev.hedgerow.upstream.UpstreamHandler;
import org.junit.jupiter.api.Test;

import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.Set;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * The request_timeout deadline and the attempts it stops: one stopped before its own first-token window had passed
 * was given no fair chance, and is not counted against its route. A hedge started 50 ms before the deadline was
 * charged a timeout, and with the default breaker (max_fails 1) its healthy route cooled down for 30 s (found by
 * hunt21). The primary, silent past its window, still is.
 */
class DeadlineHedgeTest {
    static final String YAML = """
            orgs:
              - id: acme
                keys: [{ name: app, key: "k" }]
                providers:
                  - { id: p, base_url: "http://127.0.0.1:9/v1" }
                routes:
                  - { id: c, alias: late, provider: p, model: m-c }
                  - { id: d, alias: late, provider: p, model: m-d }
                groups:
                  late: { first_token_floor: 1950ms, read_timeout: 10s, request_timeout: 2s }
            """;

    final FakeTicker ticker = new FakeTicker();
    final FakeScheduler scheduler = new FakeScheduler(ticker);
    final MemoryStateStore store = new MemoryStateStore(ticker);
    final HandUpstream upstream = new HandUpstream();
    final Org org = new CatalogLoader(n -> null).parse(YAML).orgs().get(0);
    final RecordingSink sink = new RecordingSink();

    @Test
    void aHedgeTheDeadlineStoppedBeforeItsOwnWindowIsNotChargedAgainstItsRoute() {
        Dispatcher dispatcher = new Dispatcher(DispatchFixture.deps(upstream, store, scheduler, ticker,
                String::length, new DispatchObserver() { }));
        ChatRequest chat = ChatRequest.parse(("{\"model\":\"late\",\"stream\":true,\"messages\":[{\"role\":\"user\","
                + "\"content\":\"hi\"}]}").getBytes(StandardCharsets.UTF_8), null);
        RequestFacts facts = new RequestFacts(1, null, true, false, Set.of(), Set.of(), ProviderPrefs.NONE,
                List.of(), Map.of(), "hi");
        // a measured, fast route: its P90 is under the 1950 ms floor, so the window is the floor
        TtftEstimate est = new TtftEstimate(100, 150, true);
        List<Candidate> cands = List.of("c", "d").stream().map(id -> DispatchFixture.candidate(org, id,
                RouteSnapshot.empty("acme/" + id), false, est)).toList();
        dispatcher.start(new DispatchRequest("req-1", 0, org, "app", "late", org.group("late"), chat, facts, cands,
                RoutePlan.NEVER), sink);
        UpstreamHandler c = upstream.handlers.get(0);
        c.onSent();
        c.onHead(200, Map.of("content-type", "text/event-stream"));
        scheduler.advance(Duration.ofMillis(1_950));
        assertEquals(2, upstream.requests.size(), "hedge to d at 1950 ms, 50 ms before the 2 s deadline");
        UpstreamHandler d = upstream.handlers.get(1);
        d.onSent();
        d.onHead(200, Map.of("content-type", "text/event-stream"));
        scheduler.advance(Duration.ofMillis(50));
        assertEquals(504, sink.status);
        RouteSnapshot dState = store.snapshot(List.of("acme/d"), Duration.ofMinutes(1)).await().indefinitely()
                .get("acme/d");
        assertFalse(dState.coolingDown(), "route d served 50 ms of a hedge and was cooled down for it");
        assertEquals(0, dState.fails());
        assertTrue(sink.headers.get("x-hedgerow-attempts").contains("timeout_request"), "the trail still says why");
        RouteSnapshot cState = store.snapshot(List.of("acme/c"), Duration.ofMinutes(1)).await().indefinitely()
                .get("acme/c");
        assertTrue(cState.coolingDown(), "the primary, silent past its own window, is charged");
    }
}
