package dev.hedgerow.dispatch;

import dev.hedgerow.api.ChatRequest;
import dev.hedgerow.api.ProviderPrefs;
import dev.hedgerow.catalog.CatalogLoader;
import dev.hedgerow.catalog.Org;
import dev.hedgerow.routing.Candidate;
import dev.hedgerow.routing.RequestFacts;
import dev.hedgerow.routing.RoutePlan;
import dev.hedgerow.routing.TtftEstimate;
import dev.hedgerow.state.RouteSnapshot;
import dev.hedgerow.testsupport.DispatchFixture;
import org.junit.jupiter.api.Test;

import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.Map;
import java.util.Set;

import static org.junit.jupiter.api.Assertions.assertEquals;

/**
 * The windows an attempt is timed by, computed for one request and route: the first-token (hedge) window of a
 * non-streamed answer allows the decode of at most 1 024 tokens, and the give-up wait is three windows once three
 * windows pass the ceiling. Both untested (found by hunt25's mutation testing). SLO decode 50 tokens/s, ceiling 30 s.
 */
class TimingWindowsTest {
    /** KongTimeoutsDispatchTest's catalog: group kt sets no first-token or SLO setting, so both are the defaults. */
    final Org org = new CatalogLoader(n -> null).parse(KongTimeoutsDispatchTest.YAML).orgs().get(0);

    TimingWindows windows(boolean stream, Integer maxTokens) {
        return windows(stream, maxTokens, false);
    }

    TimingWindows windows(boolean stream, Integer maxTokens, boolean reasoning) {
        ChatRequest chat = ChatRequest.parse(("{\"model\":\"kt\",\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}]"
                + (maxTokens == null ? "" : ",\"max_tokens\":" + maxTokens) + (stream ? ",\"stream\":true" : "")
                + "}").getBytes(StandardCharsets.UTF_8), null);
        RequestFacts facts = new RequestFacts(1, maxTokens, stream, reasoning, Set.of(), Set.of(),
                ProviderPrefs.NONE, List.of(), Map.of(), "hi");
        return new TimingWindows(new DispatchRequest("req-1", 0, org, "app", "kt", org.group("kt"), chat, facts,
                List.of(), RoutePlan.NEVER), stream);
    }

    Candidate route(double p90Ms) {
        return DispatchFixture.candidate(org, "a", RouteSnapshot.empty("acme/a"), false,
                new TtftEstimate(p90Ms / 2, p90Ms, true));
    }

    @Test
    void aNonStreamedAnswersHedgeWindowAllowsTheDecodeOfAtMost1024Tokens() {
        // 300 ms to the first token, then 1 024 tokens at 50 a second: 20.78 s, not 32 000 tokens' 640 s (never hedged)
        assertEquals(300 + 20_480, windows(false, 32_000).firstTokenWindow(route(300)).toMillis());
        assertEquals(300 + 2_000, windows(false, 100).firstTokenWindow(route(300)).toMillis());
        assertEquals(300 + 5_120, windows(false, null).firstTokenWindow(route(300)).toMillis(), "256 by default");
    }

    /**
     * An abandoned attempt teaches its route's line the window its give-up limit is made of: a third of it, a sixth
     * for a model that may think, whose limit is doubled (hunt26's review: a third still grew a thinker's waits).
     */
    @Test
    void anAbandonedWaitTeachesTheWindowItsLimitIsMadeOf() {
        assertEquals(10_000, windows(true, null, false).learnableWait(route(300), 30_000));
        assertEquals(10_000, windows(true, null, true).learnableWait(route(300), 60_000), "asking for reasoning");
    }

    @Test
    void aStreamIsGivenUpOnAfterThreeWindowsOnceTheyPassTheCeiling() {
        assertEquals(60_000, windows(true, null).abandonAfter(route(20_000), 0).toMillis(), "3 x 20 s");
        assertEquals(30_000, windows(true, null).abandonAfter(route(5_000), 0).toMillis(), "the ceiling");
    }
}
