package dev.hedgerow.admin;

import dev.hedgerow.state.MemoryStateStore;
import dev.hedgerow.state.RouteSnapshot;
import dev.hedgerow.time.FakeTicker;
import org.junit.jupiter.api.Test;

import java.time.Duration;
import java.util.List;

import static org.junit.jupiter.api.Assertions.assertEquals;

/** The chart's measured points: the last N per route, in a blob that survives damage. */
class TtftSamplesTest {

    @Test
    void keepsOnlyTheNewestPointsInOrder() {
        MemoryStateStore store = new MemoryStateStore(new FakeTicker());
        TtftSamples samples = new TtftSamples(store, 3);
        RouteSnapshot base = RouteSnapshot.empty("acme/r");
        for (int i = 1; i <= 5; i++) {
            samples.record(base, i * 100, i * 10L);
        }
        String blob = store.snapshot(List.of("acme/r"), Duration.ofMinutes(1)).await().indefinitely()
                .get("acme/r").blob(TtftSamples.BLOB).orElseThrow();
        assertEquals(List.of(new TtftSamples.Sample(300, 30), new TtftSamples.Sample(400, 40),
                new TtftSamples.Sample(500, 50)), TtftSamples.decode(blob));
    }

    @Test
    void skipsDamagedPoints() {
        assertEquals(List.of(new TtftSamples.Sample(10, 5)), TtftSamples.decode("x:1,10:5,:3,7:-1,9"));
        assertEquals(List.of(), TtftSamples.decode(null));
    }
}
