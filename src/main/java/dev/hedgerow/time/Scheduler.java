package dev.hedgerow.time;

import java.time.Duration;

/**
 * Runs a task once after a delay. Implementations decide the thread; core code that is not thread-confined
 * must tolerate the task running on another thread. Tests use {@code FakeScheduler}.
 */
public interface Scheduler {
    Cancellable schedule(Duration delay, Runnable task);
}
