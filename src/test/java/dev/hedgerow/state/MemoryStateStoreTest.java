package dev.hedgerow.state;

import org.junit.jupiter.api.Test;

import java.time.Duration;
import java.util.List;

import static org.junit.jupiter.api.Assertions.assertEquals;

/** The contract on the embedded store, with time moved by a fake ticker (no sleeping). */
class MemoryStateStoreTest extends FakeTimeStoreContract {

    @Override
    protected StateStore build() {
        return new MemoryStateStore(ticker, TUNING);
    }

    private long usage(String route, Duration window) {
        return await(store().snapshot(List.of(route), window)).get(route).usage().totalTokens();
    }

    @Test
    void usageSlidesBucketByBucket() {
        // TUNING's buckets are 100 ms; from a bucket boundary, a 300 ms window is 3 buckets
        String r = id("route");
        Duration window = Duration.ofMillis(300);
        ticker.advance(Duration.ofMillis((100 - ticker.millis() % 100) % 100));
        await(store().addUsage(r, new UsageSample(1, 0, 0), window));
        ticker.advance(Duration.ofMillis(100));
        await(store().addUsage(r, new UsageSample(2, 0, 0), window));
        ticker.advance(Duration.ofMillis(100));
        await(store().addUsage(r, new UsageSample(4, 0, 0), window));
        assertEquals(7, usage(r, window));
        assertEquals(4, usage(r, Duration.ofMillis(100)), "a one-bucket window reads only the current bucket");
        ticker.advance(Duration.ofMillis(100));
        assertEquals(6, usage(r, window), "the first bucket left the window");
        ticker.advance(Duration.ofMillis(100));
        assertEquals(4, usage(r, window));
        await(store().addUsage(r, new UsageSample(8, 0, 0), window));
        assertEquals(12, usage(r, window));
        ticker.advance(Duration.ofMillis(300));
        assertEquals(0, usage(r, window));
        ticker.advance(Duration.ofSeconds(10));
        assertEquals(0, usage(r, Duration.ofSeconds(30)), "buckets expire a window past their last add");
    }
}
