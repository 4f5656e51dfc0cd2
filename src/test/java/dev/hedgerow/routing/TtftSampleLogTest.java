package dev.hedgerow.routing;

import org.junit.jupiter.api.Test;

import java.util.List;

import static org.junit.jupiter.api.Assertions.assertEquals;

/** The chart's measured points: the last N per route, in a blob that survives damage. */
class TtftSampleLogTest {

    @Test
    void keepsOnlyTheNewestPointsInOrder() {
        String blob = null;
        for (int i = 1; i <= 5; i++) {
            blob = TtftSampleLog.append(blob, i * 100, i * 10L, 3);
        }
        assertEquals(List.of(new TtftSampleLog.Sample(300, 30), new TtftSampleLog.Sample(400, 40),
                new TtftSampleLog.Sample(500, 50)), TtftSampleLog.decode(blob));
    }

    @Test
    void skipsDamagedPoints() {
        assertEquals(List.of(new TtftSampleLog.Sample(10, 5)), TtftSampleLog.decode("x:1,10:5,:3,7:-1,9"));
        assertEquals(List.of(), TtftSampleLog.decode(null));
    }
}
