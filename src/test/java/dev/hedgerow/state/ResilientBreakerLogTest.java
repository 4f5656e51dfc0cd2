package dev.hedgerow.state;

import dev.hedgerow.testsupport.LogCapture;
import dev.hedgerow.time.FakeTicker;
import org.junit.jupiter.api.Test;

import java.time.Duration;
import java.util.List;

import static dev.hedgerow.testsupport.Eventually.eventually;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Leaving shared state and coming back are each logged once, the first with why the store did not answer, and the
 * readiness check's last failure is that cause, not the open breaker's own refusal. Nothing was logged, and a wrong
 * password or an unknown host started an instance on local state for good with no line saying so (hunt7, hunt8).
 */
class ResilientBreakerLogTest {
    static final ResilientStateStore.Settings SETTINGS =
            new ResilientStateStore.Settings(Duration.ofMillis(500), 4, 0.5, Duration.ofMillis(100), 1);

    static List<String> stateLines(LogCapture log) {
        return log.lines().stream().filter(l -> l.startsWith("dev.hedgerow.state ")).toList();
    }

    static List<Integer> indexes(List<String> lines, java.util.function.Predicate<String> p) {
        return java.util.stream.IntStream.range(0, lines.size()).filter(i -> p.test(lines.get(i))).boxed().toList();
    }

    @Test
    void anOutageIsLoggedOnceWithItsCauseAndTheReturnOnce() {
        ResilientLocalHealthTest.Shared shared = new ResilientLocalHealthTest.Shared(
                new MemoryStateStore(new FakeTicker()));
        ResilientStateStore store = new ResilientStateStore(shared, new MemoryStateStore(new FakeTicker()), SETTINGS);
        try (LogCapture log = new LogCapture()) {
            shared.up = false;
            eventually(() -> {
                store.cooldownRemainingMillis("acme/a").await().atMost(Duration.ofSeconds(5));
                return store.degraded();
            }, "the store falls back to local state");
            for (int i = 0; i < 20; i++) {   // refused by the open breaker, and half-open tries that fail again
                store.cooldownRemainingMillis("acme/a").await().atMost(Duration.ofSeconds(5));
            }
            assertTrue(store.lastFailure().contains("connection refused"), store.lastFailure());
            shared.up = true;
            eventually(() -> {
                store.cooldownRemainingMillis("acme/a").await().atMost(Duration.ofSeconds(5));
                return !store.degraded();
            }, "back on shared state");
            // this store's lines: its cause is the test's own (another store of the JVM may log meanwhile)
            List<String> lines = stateLines(log);
            List<Integer> left = indexes(lines, l -> l.contains("WARN") && l.contains("IOException: connection refused"));
            assertEquals(1, left.size(), "left once, not at every half-open try: " + String.join("\n", lines));
            assertTrue(indexes(lines, l -> l.contains("INFO") && l.contains("back on shared state")).stream()
                    .anyMatch(i -> i > left.get(0)), "back, after: " + String.join("\n", lines));
        }
    }
}
