package dev.hedgerow.function;

import dev.hedgerow.time.Cancellable;
import dev.hedgerow.time.Scheduler;
import io.vertx.core.Vertx;

import java.time.Duration;

/** {@link Scheduler} on Vert.x timers: tasks run on an event loop and must not block. Thread-safe. */
public final class VertxScheduler implements Scheduler {
    private final Vertx vertx;

    public VertxScheduler(Vertx vertx) {
        this.vertx = vertx;
    }

    @Override
    public Cancellable schedule(Duration delay, Runnable task) {
        long id = vertx.setTimer(Math.max(1, delay.toMillis()), t -> task.run());
        return () -> vertx.cancelTimer(id);
    }
}
