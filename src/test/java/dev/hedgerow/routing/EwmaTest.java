package dev.hedgerow.routing;

import org.junit.jupiter.api.Test;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

class EwmaTest {
    @Test
    void neverMeasuredIsDetectable() {
        assertFalse(Ewma.fresh(0.2).isMeasured());
        assertTrue(Ewma.fresh(0.2).observe(5).isMeasured());
    }

    @Test
    void firstSampleIsTakenAsIsAndLaterOnesBlendByAlpha() {
        Ewma e = Ewma.fresh(0.25).observe(400).observe(800);
        assertEquals(500, e.value(), 1e-9);
        assertEquals(2, e.count());
    }

    @Test
    void ignoresNonFiniteSamples() {
        Ewma e = Ewma.fresh(0.25).observe(400);
        assertEquals(e, e.observe(Double.NaN));
    }

    @Test
    void encodeAndDecodeRoundTrip() {
        Ewma e = Ewma.fresh(0.3).observe(123.456).observe(99);
        assertEquals(e, Ewma.decode(e.encode(), 0.3));
    }

    @Test
    void decodingGarbageYieldsAFreshState() {
        assertEquals(Ewma.fresh(0.3), Ewma.decode("e1;nope;1", 0.3));
        assertEquals(Ewma.fresh(0.3), Ewma.decode("e1;1;-4", 0.3));
        assertEquals(Ewma.fresh(0.3), Ewma.decode(null, 0.3));
    }
}
