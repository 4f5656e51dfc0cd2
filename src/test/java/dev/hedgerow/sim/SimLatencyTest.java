package dev.hedgerow.sim;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.Arrays;
import org.junit.jupiter.api.Test;

/** Seeded TTFT draws of {@link ModelState}: the step and the Pareto heavy tail. */
class SimLatencyTest {

    static final long BASE_MS = 100;
    static final int DRAWS = 400_000;

    private static long[] draws(ModelScript.Latency latency, long seed) {
        ModelState m = new ModelState("m", ModelScript.defaults().withSeed(seed).withLatency(latency));
        long[] out = new long[DRAWS];
        for (int i = 0; i < DRAWS; i++) {
            out[i] = m.drawTtftMs(0);
        }
        return out;
    }

    /** The slow-down factors of the slowed draws (those above the base TTFT), sorted. */
    private static double[] slowedFactors(long[] ttfts) {
        return Arrays.stream(ttfts).filter(t -> t > BASE_MS).mapToDouble(t -> t / (double) BASE_MS).sorted()
                .toArray();
    }

    @Test
    void paretoTailSlowsTheScriptedShareOfRequestsByAtLeastTheMinimumFactor() {
        long[] t = draws(ModelScript.Latency.of(BASE_MS, 0).withParetoTail(0.05, 5, 1.2), 7);
        double[] factors = slowedFactors(t);
        // binomial SD of the share is 0.00034 at 400 000 draws: ±0.002 is about 6 SD
        double share = factors.length / (double) DRAWS;
        assertEquals(0.05, share, 0.002, "slowed share");
        assertTrue(factors[0] >= 5, "smallest factor " + factors[0]);
        assertTrue(Arrays.stream(t).allMatch(x -> x == BASE_MS || x >= 5 * BASE_MS), "no factor between 1 and 5");
    }

    @Test
    void paretoFactorsFollowTheParetoQuantiles() {
        double xm = 5;
        double alpha = 1.2;
        double[] factors = slowedFactors(draws(ModelScript.Latency.of(BASE_MS, 0).withParetoTail(0.05, xm, alpha), 11));
        // ~20 000 slowed draws: the relative SD of an empirical quantile q is sqrt(q / ((1 - q) n)) / α, i.e. 0.6 %,
        // 1.8 % and 5.9 % at q = 0.5, 0.9, 0.99; α = 1 instead of 1.2 would be off by 12 %, 47 % and 115 %.
        double[] qs = {0.5, 0.9, 0.99};
        double[] tolerance = {0.04, 0.08, 0.25};
        for (int i = 0; i < qs.length; i++) {
            double expected = xm * Math.pow(1 - qs[i], -1 / alpha);
            double measured = factors[(int) (qs[i] * factors.length)];
            assertEquals(expected, measured, tolerance[i] * expected, "factor quantile " + qs[i]);
        }
    }

    @Test
    void paretoFactorIsCappedAtMaxTailFactor() {
        // α = 0.3: a fifth of the slowed draws would exceed 1000× uncapped
        double[] factors = slowedFactors(draws(ModelScript.Latency.of(BASE_MS, 0).withParetoTail(0.5, 5, 0.3), 3));
        double cap = ModelScript.Latency.MAX_TAIL_FACTOR;
        assertEquals(cap, factors[factors.length - 1], "largest factor");
        long atCap = Arrays.stream(factors).filter(f -> f == cap).count();
        double expectedAtCap = Math.pow(5 / cap, 0.3) * factors.length;
        assertEquals(expectedAtCap, atCap, 0.05 * expectedAtCap, "draws at the cap");
    }

    @Test
    void stepAndParetoTailsWithTheSameSeedSlowTheSameRequests() {
        long[] step = draws(ModelScript.Latency.of(BASE_MS, 0).withJitter(0.1).withHeavyTail(0.05, 10), 5);
        long[] pareto = draws(ModelScript.Latency.of(BASE_MS, 0).withJitter(0.1).withParetoTail(0.05, 5, 1.2), 5);
        int slowed = 0;
        for (int i = 0; i < DRAWS; i++) {
            if (step[i] <= 2 * BASE_MS) {
                assertEquals(step[i], pareto[i], "unslowed draw " + i);
            } else {
                slowed++;
                assertTrue(pareto[i] >= 4 * BASE_MS, "slowed draw " + i + ": " + pareto[i]);
            }
        }
        assertTrue(slowed > 0.04 * DRAWS, "slowed " + slowed);
    }

    @Test
    void stepTailMultipliesByExactlyItsFactor() {
        long[] t = draws(ModelScript.Latency.of(BASE_MS, 0).withHeavyTail(0.05, 10), 7);
        long slowed = Arrays.stream(t).filter(x -> x == 10 * BASE_MS).count();
        assertEquals(DRAWS, slowed + Arrays.stream(t).filter(x -> x == BASE_MS).count(), "only 1× or 10×");
        assertEquals(0.05, slowed / (double) DRAWS, 0.002, "slowed share");
    }

    @Test
    void paretoTailNeedsAPositiveShape() {
        ModelScript.Latency l = ModelScript.Latency.of(BASE_MS, 0);
        assertThrows(IllegalArgumentException.class, () -> l.withParetoTail(0.05, 5, 0));
        assertThrows(IllegalArgumentException.class, () -> new ModelScript.Latency(BASE_MS, 0, 0, 0, 0.05, 5, -1));
    }
}
