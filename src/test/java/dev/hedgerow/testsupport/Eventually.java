package dev.hedgerow.testsupport;

import java.time.Duration;
import java.util.function.BooleanSupplier;

/** Waits for what another thread, process or instance makes true (fire-and-forget writes, a server's counters). */
public final class Eventually {
    /** How long a condition may take before the test fails: far above any scripted wait, so never hit when green. */
    public static final Duration BOUND = Duration.ofSeconds(10);

    private Eventually() {
    }

    /** Polls {@code cond} every 10 ms until it holds; fails with "never happened: {@code what}" after {@link #BOUND}. */
    public static void eventually(BooleanSupplier cond, String what) {
        long deadline = System.nanoTime() + BOUND.toNanos();
        while (!cond.getAsBoolean()) {
            if (System.nanoTime() > deadline) {
                throw new AssertionError("never happened: " + what);
            }
            try {
                Thread.sleep(10);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                throw new AssertionError("interrupted while waiting for: " + what, e);
            }
        }
    }
}
