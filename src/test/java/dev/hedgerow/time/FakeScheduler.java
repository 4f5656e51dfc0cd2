package dev.hedgerow.time;

import java.time.Duration;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;

/** A scheduler driven by a {@link FakeTicker}: tasks run inside {@link #advance(Duration)}, in due order. */
public final class FakeScheduler implements Scheduler {
    private final FakeTicker ticker;
    private final List<Task> tasks = new ArrayList<>();
    private long seq;

    public FakeScheduler(FakeTicker ticker) {
        this.ticker = ticker;
    }

    private final class Task {
        final long due;
        final long order;
        final Runnable run;
        boolean cancelled;

        Task(long due, long order, Runnable run) {
            this.due = due;
            this.order = order;
            this.run = run;
        }
    }

    @Override
    public synchronized Cancellable schedule(Duration delay, Runnable task) {
        Task t = new Task(ticker.nanos() + delay.toNanos(), seq++, task);
        tasks.add(t);
        return () -> t.cancelled = true;
    }

    /** Moves time forward, running every task that falls due on the way. */
    public void advance(Duration d) {
        long end = ticker.nanos() + d.toNanos();
        while (true) {
            Task next;
            synchronized (this) {
                next = tasks.stream().filter(t -> !t.cancelled && t.due <= end)
                        .min(Comparator.<Task>comparingLong(t -> t.due).thenComparingLong(t -> t.order)).orElse(null);
                if (next != null) {
                    tasks.remove(next);
                }
            }
            if (next == null) {
                break;
            }
            long step = next.due - ticker.nanos();
            if (step > 0) {
                ticker.advance(Duration.ofNanos(step));
            }
            next.run.run();
        }
        long rest = end - ticker.nanos();
        if (rest > 0) {
            ticker.advance(Duration.ofNanos(rest));
        }
    }

    public synchronized int pending() {
        return (int) tasks.stream().filter(t -> !t.cancelled).count();
    }
}
