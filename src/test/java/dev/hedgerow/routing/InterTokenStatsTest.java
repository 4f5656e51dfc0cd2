package dev.hedgerow.routing;

import org.junit.jupiter.api.Test;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

class InterTokenStatsTest {
    @Test
    void unmeasuredRouteAllowsTheFloor() {
        assertFalse(InterTokenStats.FRESH.isMeasured());
        assertEquals(5000, InterTokenStats.FRESH.allowedGapMillis(5000, 4, 10));
    }

    @Test
    void firstGapSetsMeanAndHalfDeviation() {
        InterTokenStats s = InterTokenStats.FRESH.observe(40);
        assertEquals(40, s.meanMs(), 1e-9);
        assertEquals(20, s.devMs(), 1e-9);
    }

    @Test
    void updatesAsJacobsonKarels() {
        InterTokenStats s = InterTokenStats.FRESH.observe(40).observe(80);
        assertEquals(0.75 * 20 + 0.25 * 40, s.devMs(), 1e-9);
        assertEquals(0.875 * 40 + 0.125 * 80, s.meanMs(), 1e-9);
    }

    @Test
    void steadyStreamsGetATightWindowAboveTheFloorOnlyWhenSlow() {
        InterTokenStats s = InterTokenStats.FRESH;
        for (int i = 0; i < 200; i++) {
            s = s.observe(i % 2 == 0 ? 20 : 30);
        }
        assertEquals(100, s.allowedGapMillis(100, 4, 3));
        InterTokenStats slow = InterTokenStats.FRESH;
        for (int i = 0; i < 200; i++) {
            slow = slow.observe(i % 2 == 0 ? 800 : 1200);
        }
        long allowed = slow.allowedGapMillis(100, 4, 3);
        assertTrue(allowed >= 3 * 970 && allowed <= 3 * 1030, "m·mean dominates: " + allowed);
    }

    @Test
    void jitteryStreamsGetAWiderWindow() {
        InterTokenStats s = InterTokenStats.FRESH;
        for (int i = 0; i < 200; i++) {
            s = s.observe(i % 2 == 0 ? 10 : 1000);
        }
        assertTrue(s.allowedGapMillis(0, 4, 1) > s.meanMs() + 3 * s.devMs());
    }

    @Test
    void ignoresNegativeAndNonFiniteGaps() {
        InterTokenStats s = InterTokenStats.FRESH.observe(40);
        assertEquals(s, s.observe(-1).observe(Double.NaN));
    }

    @Test
    void encodeAndDecodeRoundTrip() {
        InterTokenStats s = InterTokenStats.FRESH.observe(40).observe(55.5);
        assertEquals(s, InterTokenStats.decode(s.encode()));
    }

    @Test
    void decodingGarbageYieldsAFreshState() {
        assertEquals(InterTokenStats.FRESH, InterTokenStats.decode("ig1;-1;2;3"));
        assertEquals(InterTokenStats.FRESH, InterTokenStats.decode("th1;1;2;3"));
        assertEquals(InterTokenStats.FRESH, InterTokenStats.decode(null));
    }
}
