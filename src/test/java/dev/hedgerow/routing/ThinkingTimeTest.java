package dev.hedgerow.routing;

import org.junit.jupiter.api.Test;

import static org.junit.jupiter.api.Assertions.assertEquals;

class ThinkingTimeTest {
    @Test
    void unmeasuredRouteAllowsTheFloor() {
        assertEquals(30_000, ThinkingTime.FRESH.allowedPauseMillis(30_000, 3));
    }

    @Test
    void learnsFromReasoningAndVisibleInstants() {
        ThinkingTime t = ThinkingTime.FRESH.observe(1_000, 13_000);
        assertEquals(12_000, t.meanMs(), 1e-9);
        assertEquals(6_000, t.devMs(), 1e-9);
        assertEquals(12_000 + 3 * 6_000, t.allowedPauseMillis(1_000, 3));
    }

    @Test
    void blendsLaterRequestsByEwma() {
        ThinkingTime t = ThinkingTime.FRESH.observe(10_000).observe(20_000);
        assertEquals(0.8 * 10_000 + 0.2 * 20_000, t.meanMs(), 1e-9);
        assertEquals(0.75 * 5_000 + 0.25 * 10_000, t.devMs(), 1e-9);
    }

    @Test
    void ignoresVisibleContentBeforeReasoning() {
        ThinkingTime t = ThinkingTime.FRESH.observe(5_000);
        assertEquals(t, t.observe(9_000, 2_000));
    }

    @Test
    void encodeAndDecodeRoundTrip() {
        ThinkingTime t = ThinkingTime.FRESH.observe(8_250.5).observe(4_000);
        assertEquals(t, ThinkingTime.decode(t.encode()));
    }

    @Test
    void decodingGarbageYieldsAFreshState() {
        assertEquals(ThinkingTime.FRESH, ThinkingTime.decode("th1;1;2"));
        assertEquals(ThinkingTime.FRESH, ThinkingTime.decode("garbage"));
    }
}
