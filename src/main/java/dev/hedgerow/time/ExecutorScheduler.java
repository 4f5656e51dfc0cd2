package dev.hedgerow.time;

import java.time.Duration;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.ScheduledFuture;
import java.util.concurrent.TimeUnit;

/** A {@link Scheduler} on one daemon timer thread. Thread-safe. Tasks must be short or hand off their work. */
public final class ExecutorScheduler implements Scheduler {
    private final ScheduledExecutorService executor;

    public ExecutorScheduler(String name) {
        this.executor = Executors.newSingleThreadScheduledExecutor(r -> {
            Thread t = new Thread(r, name);
            t.setDaemon(true);
            return t;
        });
    }

    @Override
    public Cancellable schedule(Duration delay, Runnable task) {
        ScheduledFuture<?> f = executor.schedule(task, Math.max(0, delay.toNanos()), TimeUnit.NANOSECONDS);
        return () -> f.cancel(false);
    }

    public void shutdown() {
        executor.shutdownNow();
    }
}
