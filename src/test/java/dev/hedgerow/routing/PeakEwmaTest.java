package dev.hedgerow.routing;

import org.junit.jupiter.api.Test;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertTrue;

class PeakEwmaTest {
    private static final long TAU = 10_000;
    private static final long T0 = 1_700_000_000_000L;

    @Test
    void neverMeasuredIsZeroAndSaysSo() {
        PeakEwma p = PeakEwma.fresh(TAU);
        assertFalse(p.isMeasured());
        assertEquals(0, p.value(T0));
    }

    @Test
    void firstSampleIsTakenAsIs() {
        PeakEwma p = PeakEwma.fresh(TAU).observe(300, T0);
        assertTrue(p.isMeasured());
        assertEquals(300, p.value(T0), 1e-9);
    }

    @Test
    void aLowerBoundAboveTheValueIsTakenAtOnceAndOneAtOrBelowItChangesNothing() {
        PeakEwma p = PeakEwma.fresh(TAU).observe(100, T0);
        assertEquals(900, p.observeAtLeast(900, T0 + 1).value(T0 + 1), 1e-9, "the late sample was at least this");
        assertSame(p, p.observeAtLeast(100, T0), "a bound at the value says nothing new");
        // decayed to 100·e^-1 ≈ 37: a bound of 50 is news, and is learnt as the sample it bounds
        PeakEwma later = p.observeAtLeast(50, T0 + TAU);
        assertEquals(p.observe(50, T0 + TAU), later);
        assertTrue(later.value(T0 + TAU) > p.value(T0 + TAU));
        assertEquals(40, PeakEwma.fresh(TAU).observeAtLeast(40, T0).value(T0), 1e-9, "never measured: taken");
    }

    @Test
    void aSampleAboveTheCostJumpsToItAtOnce() {
        PeakEwma p = PeakEwma.fresh(TAU).observe(100, T0).observe(900, T0 + 1);
        assertEquals(900, p.value(T0 + 1), 1e-9);
    }

    @Test
    void aSampleBelowTheCostPullsByElapsedTime() {
        PeakEwma base = PeakEwma.fresh(TAU).observe(1000, T0);
        double soon = base.observe(100, T0 + 100).cost();
        double later = base.observe(100, T0 + TAU).cost();
        assertEquals(1000 * Math.exp(-0.01) + 100 * (1 - Math.exp(-0.01)), soon, 1e-9);
        assertEquals(1000 * Math.exp(-1) + 100 * (1 - Math.exp(-1)), later, 1e-9);
        assertTrue(later < soon, "the longer since the last sample, the more a new one counts");
    }

    @Test
    void valueDecaysTowardZeroWhileIdle() {
        PeakEwma p = PeakEwma.fresh(TAU).observe(800, T0);
        assertEquals(800 * Math.exp(-1), p.value(T0 + TAU), 1e-9);
        assertTrue(p.value(T0 + 10 * TAU) < 1);
    }

    @Test
    void clockSkewBackwardsCountsAsNoElapsedTime() {
        PeakEwma p = PeakEwma.fresh(TAU).observe(800, T0);
        assertEquals(800, p.value(T0 - 5_000), 1e-9);
        assertEquals(T0, p.observe(100, T0 - 5_000).stampMillis());
        assertEquals(T0, p.observe(900, T0 - 5_000).stampMillis(),
                "a new peak from an instance whose clock is behind keeps the later stamp too");
    }

    @Test
    void loadScalesWithInflight() {
        PeakEwma p = PeakEwma.fresh(TAU).observe(200, T0);
        assertEquals(600, p.load(T0, 2), 1e-9);
    }

    @Test
    void encodeAndDecodeRoundTrip() {
        PeakEwma p = PeakEwma.fresh(TAU).observe(812.25, T0).observe(400, T0 + 50);
        assertEquals(p, PeakEwma.decode(p.encode(), TAU));
    }

    @Test
    void decodingGarbageYieldsAFreshState() {
        for (String s : new String[]{null, "", "pe1;1;2", "pe1;-1;2;3", "e1;1;2;3", "pe1;x;y;z"}) {
            assertEquals(PeakEwma.fresh(TAU), PeakEwma.decode(s, TAU), String.valueOf(s));
        }
    }
}
