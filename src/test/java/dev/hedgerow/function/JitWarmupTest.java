package dev.hedgerow.function;

import org.junit.jupiter.api.Test;

import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** The JIT warm-up gate, fed the samples a gateway's periodic pass would read. */
class JitWarmupTest {

    @Test
    void firstPassOnlyTakesABaseline() {
        JitWarmup gate = new JitWarmup(100, 1000);
        assertFalse(gate.settled(1_000_000, 0), "no earlier compile time to compare with");
        assertTrue(gate.settled(1_000_000, 10), "quiet since the baseline, traffic enough");
    }

    @Test
    void waitsForTrafficEvenWhenTheJitIsQuiet() {
        JitWarmup gate = new JitWarmup(20_000, 1000);
        assertFalse(gate.settled(0, 5_000));
        assertFalse(gate.settled(0, 5_000), "an idle gateway compiles nothing, yet is not warm");
        assertFalse(gate.settled(19_999, 5_100));
        assertTrue(gate.settled(20_000, 5_200));
        assertTrue(gate.done());
    }

    @Test
    void waitsWhileTheJitIsStillBusy() {
        JitWarmup gate = new JitWarmup(20_000, 1000);
        assertFalse(gate.settled(30_000, 8_000));
        assertFalse(gate.settled(60_000, 9_000), "grew by exactly the threshold: still compiling");
        assertFalse(gate.settled(90_000, 12_500));
        assertFalse(gate.done());
        assertTrue(gate.settled(120_000, 13_499), "grew by 999 ms, under the threshold");
    }

    @Test
    void answersTrueOnceThenStaysDone() {
        JitWarmup gate = new JitWarmup(0, 1000);
        gate.settled(0, 0);
        assertTrue(gate.settled(0, 0));
        assertFalse(gate.settled(0, 0), "only the first settled pass answers true");
        assertFalse(gate.settled(1_000_000, 50_000), "a later compile burst does not undo it");
        assertTrue(gate.done());
    }

    @Test
    void refusesNonsenseThresholds() {
        assertThrows(IllegalArgumentException.class, () -> new JitWarmup(-1, 1000));
        assertThrows(IllegalArgumentException.class, () -> new JitWarmup(0, 0));
    }
}
