package dev.hedgerow.routing;

import dev.hedgerow.api.ProviderPrefs;
import dev.hedgerow.catalog.GroupSettings;
import dev.hedgerow.state.MemoryStateStore;
import dev.hedgerow.state.RouteSnapshot;
import dev.hedgerow.time.FakeTicker;
import dev.hedgerow.testsupport.AtOnce;
import org.junit.jupiter.api.Test;

import java.time.Duration;
import java.time.Instant;
import java.time.InstantSource;
import java.util.List;
import java.util.Map;
import java.util.Set;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

class LearnedModelsTest {
    static final String KEY = "acme/r1";
    static final GroupSettings.Slo SLO = GroupSettings.Slo.defaults();
    final FakeTicker ticker = new FakeTicker();
    final InstantSource clock = () -> Instant.ofEpochMilli(ticker.millis());
    final MemoryStateStore store = new MemoryStateStore(ticker);
    final LearnedModels models = new LearnedModels(store, clock, TtftPredictor.Prior.defaults());

    RouteSnapshot snap() {
        return store.snapshot(List.of(KEY), Duration.ofMinutes(10)).await().indefinitely().get(KEY);
    }

    static RequestFacts prompt(int tokens) {
        return new RequestFacts(tokens, null, true, false, Set.of(), Set.of(), ProviderPrefs.NONE, List.of(),
                Map.of(), "x");
    }

    /** Time passes beyond the local-copy window, so reads come from the shared store only. */
    void later() {
        ticker.advance(Duration.ofMillis(LearnedModels.LOCAL_CHAIN_MS + 1));
    }

    @Test
    void aHugePromptAndAShortOneGetDifferentPredictionsOnTheSameRoute() {
        for (int i = 0; i < 30; i++) {
            int tokens = i % 2 == 0 ? 500 : 100_000 + i * 3000;
            models.learnFirstToken(snap(), tokens, Math.round(200 + 0.02 * tokens), SLO);
        }
        double at500 = models.ttft(snap(), prompt(500)).meanMs();
        double at200k = models.ttft(snap(), prompt(200_000)).meanMs();
        assertEquals(210, at500, 30);
        assertEquals(4200, at200k, 300);
    }

    @Test
    void anotherInstancePredictsFromTheSharedModel() {
        for (int i = 0; i < 10; i++) {
            models.learnFirstToken(snap(), 1000, 80, SLO);
        }
        LearnedModels other = new LearnedModels(store, clock, TtftPredictor.Prior.defaults());
        TtftEstimate e = other.ttft(snap(), prompt(1000));
        assertTrue(e.measured());
        assertEquals(80, e.meanMs(), 10);
    }

    @Test
    void aNeverMeasuredRoutePredictsThePrior() {
        TtftEstimate e = models.ttft(snap(), prompt(1000));
        assertFalse(e.measured());
        assertEquals(1005, e.meanMs(), 1e-6);
    }

    /**
     * Kong's time per output token is an answer's latency over its completion tokens (the first token's wait counted),
     * decode speed the gaps after the first token; a resume's part counts its own latency over its own tokens in the
     * former and nothing end to end, an unfinished answer nothing in either peak EWMA.
     */
    @Test
    void timePerOutputTokenIsLatencyOverTokensAndDecodeSpeedTheGapsOnly() {
        models.learnDecode(snap(), Generation.whole(8, 14, 614), SLO);   // 600 ms to the first token, then 2 ms gaps
        assertEquals(614 / 8.0, models.peakEwma(snap(), false), 1e-9);
        assertEquals(614, models.peakEwma(snap(), true), 1e-9);
        assertEquals(7 * 1000.0 / 14, models.decodeSpeed(snap()), 1e-9);

        LearnedModels other = new LearnedModels(store, clock, TtftPredictor.Prior.defaults());
        RouteSnapshot fresh = store.snapshot(List.of("acme/r2"), Duration.ofMinutes(10)).await().indefinitely()
                .get("acme/r2");
        other.learnDecode(fresh, Generation.part(20, 760, 1260), SLO);    // its own latency over its own tokens
        assertEquals(63, other.peakEwma(fresh, false), 1e-9);
        assertTrue(Double.isNaN(other.peakEwma(fresh, true)), "a resume's part is no whole answer");
        other.learnDecode(fresh, Generation.whole(1, 0, 300), SLO);       // one token: its whole latency (the peak)
        assertEquals(300, other.peakEwma(fresh, false), 1e-9);
        assertEquals(300, other.peakEwma(fresh, true), 1e-9);
        other.learnDecode(fresh, Generation.unfinished(20, 5000), SLO);
        assertEquals(300, other.peakEwma(fresh, false), 1e-9);
        assertEquals(300, other.peakEwma(fresh, true), 1e-9);
    }

    @Test
    void slowSustainedDecodePutsTheRouteBelowTheSlo() {
        assertEquals(SloTracker.Status.UNKNOWN, models.sloStatus(snap(), SLO));
        models.learnDecode(snap(), Generation.whole(41, 2000, 2100), SLO);   // 20 tokens/s
        assertEquals(SloTracker.Status.BELOW, models.sloStatus(snap(), SLO));
        assertFalse(models.meetsSlo(snap(), SLO));
    }

    @Test
    void aShortCompletionIsNotJudgedAgainstTheSustainedTarget() {
        models.learnDecode(snap(), Generation.whole(4, 1000, 1100), SLO);   // 3 tokens/s, but only 4 tokens
        assertEquals(SloTracker.Status.UNKNOWN, models.sloStatus(snap(), SLO));
    }

    @Test
    void aRouteBelowTheSloReturnsAfterThreeHealthyMeasurementsInARow() {
        models.learnDecode(snap(), Generation.whole(41, 2000, 2100), SLO);
        models.learnDecode(snap(), Generation.whole(41, 400, 500), SLO);   // 100 tokens/s
        models.learnDecode(snap(), Generation.whole(41, 400, 500), SLO);
        assertEquals(SloTracker.Status.BELOW, models.sloStatus(snap(), SLO), "hysteresis: not yet");
        models.learnDecode(snap(), Generation.whole(41, 400, 500), SLO);
        assertEquals(SloTracker.Status.MEETS, models.sloStatus(snap(), SLO));
    }

    @Test
    void aSlowFirstTokenOnAStandardPromptIsBelowButAHugePromptIsNotJudged() {
        models.learnFirstToken(snap(), 200_000, 20_000, SLO);
        assertEquals(SloTracker.Status.UNKNOWN, models.sloStatus(snap(), SLO));
        models.learnFirstToken(snap(), 2_000, 6_000, SLO);
        assertEquals(SloTracker.Status.BELOW, models.sloStatus(snap(), SLO));
    }

    @Test
    void anUnrefreshedVerdictExpiresAndTheRouteIsJudgedAfresh() {
        models.learnDecode(snap(), Generation.whole(41, 2000, 2100), SLO);
        later();
        assertEquals(SloTracker.Status.BELOW, models.sloStatus(snap(), SLO));
        ticker.advance(LearnedModels.SLO_TTL);
        assertEquals(SloTracker.Status.UNKNOWN, models.sloStatus(snap(), SLO));
    }

    @Test
    void anOperatorReportedSpeedBelowTargetCountsUntilLiveTrafficMeasures() {
        CapacityIntake.put(store, KEY, new CapacityReport(0, 8, 0.1, 20), Duration.ofSeconds(30))
                .await().indefinitely();
        assertEquals(SloTracker.Status.BELOW, models.sloStatus(snap(), SLO));
        models.learnDecode(snap(), Generation.whole(41, 400, 500), SLO);   // live: 100 tokens/s
        assertEquals(SloTracker.Status.MEETS, models.sloStatus(snap(), SLO));
    }

    @Test
    void anExpiredCapacityReportLeavesTheRouteWithHeadroom() {
        CapacityIntake.put(store, KEY, new CapacityReport(16, 16, 0.1, 0), Duration.ofSeconds(30))
                .await().indefinitely();
        assertFalse(models.hasHeadroom(snap()));
        ticker.advance(Duration.ofSeconds(31));
        assertTrue(models.hasHeadroom(snap()));
        assertTrue(models.capacity(snap()).isEmpty());
    }

    @Test
    void aFirstTokenAlsoRecordsTheConsolesSamplePoint() {
        models.learnFirstToken(snap(), 300, 30, SLO);
        models.learnFirstToken(snap(), 400, 40, SLO);

        assertEquals(List.of(new TtftSampleLog.Sample(300, 30), new TtftSampleLog.Sample(400, 40)),
                TtftSampleLog.decode(snap().blob(LearnedModels.TTFT_SAMPLES).orElse(null)));
    }

    @Test
    void concurrentStreamsPlannedFromOneSnapshotChainTheirGaps() {
        RouteSnapshot planned = snap();
        models.learnGaps(planned, new long[] {10, 10}, 2);
        models.learnGaps(planned, new long[] {30}, 1);   // its snapshot predates the first stream's write

        InterTokenStats learned = InterTokenStats.decode(snap().blob(LearnedModels.GAP).orElse(null));
        assertEquals(3, learned.count());
        assertEquals(InterTokenStats.FRESH.observe(10).observe(10).observe(30), learned);
    }

    @Test
    void aLongStreamReplaysItsRecentGapsAndCountsThemAll() {
        long[] ring = new long[LearnedModels.GAP_REPLAY];
        InterTokenStats all = InterTokenStats.FRESH;
        int observed = 150;
        for (int i = 0; i < observed; i++) {
            long gap = i < 100 ? 20 : 40;
            ring[i % ring.length] = gap;
            all = all.observe(gap);
        }
        models.learnGaps(snap(), ring, observed);

        InterTokenStats learned = InterTokenStats.decode(snap().blob(LearnedModels.GAP).orElse(null));
        assertEquals(observed, learned.count());
        assertEquals(all.meanMs(), learned.meanMs(), 0.01);
    }

    @Test
    void thinkingTimesChainOnOneInstance() {
        RouteSnapshot planned = snap();
        models.learnThinking(planned, 1000);
        models.learnThinking(planned, 3000);

        assertEquals(2, ThinkingTime.decode(snap().blob(LearnedModels.THINK).orElse(null)).count());
    }

    @Test
    void aFinishedStreamLearnsItsDecodeAndItsGapsTogether() {
        models.learnDecode(snap(), Generation.whole(41, 400, 500), SLO, new long[] {10, 12, 0}, 2);

        RouteSnapshot s = snap();
        assertEquals(100, models.decodeSpeed(s), 0.001);
        assertEquals(InterTokenStats.FRESH.observe(10).observe(12),
                InterTokenStats.decode(s.blob(LearnedModels.GAP).orElse(null)));
    }

    @Test
    void concurrentLearnersLoseNoObservation() throws Exception {
        // both event loops step the same route's models at once (no locks): each observation counts exactly once
        RouteSnapshot planned = snap();
        int threads = 4;
        int each = 2_000;
        assertEquals(0, AtOnce.failures(threads, each, n -> {
            models.learnDecode(planned, Generation.whole(16, 200, 250), SLO);
            return true;
        }));
        assertEquals((long) threads * each, models.slo(planned, SLO).decodeSamples());
    }
}
