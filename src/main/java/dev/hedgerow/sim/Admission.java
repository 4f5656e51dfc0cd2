package dev.hedgerow.sim;

import io.vertx.core.Context;
import java.util.ArrayDeque;
import java.util.Deque;

/**
 * FIFO admission of exchanges up to a limit of concurrently running ones, like a serving engine's scheduler
 * queue. Thread-safe; an admitted exchange is started on its own context.
 */
final class Admission {

    private record Entry(Exchange exchange, Context context) {
    }

    private final int max;
    private final Deque<Entry> queue = new ArrayDeque<>();
    private int running;

    Admission(int max) {
        this.max = max;
    }

    /** Starts the exchange now (on the caller's context) if there is room, else queues it. */
    void submit(Exchange e, Context context) {
        boolean now;
        synchronized (this) {
            now = max == 0 || running < max;
            if (now) {
                running++;
            } else {
                queue.addLast(new Entry(e, context));
            }
        }
        if (now) {
            e.start();
        }
    }

    /** An exchange ended: frees its slot (or its place in the queue) and admits the next waiting one. */
    void release(Exchange e, boolean wasRunning) {
        Entry next = null;
        synchronized (this) {
            if (!wasRunning) {
                queue.removeIf(en -> en.exchange() == e);
                return;
            }
            running--;
            while (!queue.isEmpty() && next == null) {
                Entry en = queue.pollFirst();
                if (!en.exchange().over()) {
                    next = en;
                    running++;
                }
            }
        }
        if (next != null) {
            Exchange x = next.exchange();
            next.context().runOnContext(v -> x.start());
        }
    }

    synchronized int waiting() {
        return queue.size();
    }
}
