package dev.hedgerow.audit;

import java.util.Objects;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.locks.LockSupport;
import java.util.function.Consumer;
import java.util.function.Supplier;

/**
 * The request log's hand-off: an event loop adds a line (built later, off the loop) to a lock-free queue, and a
 * thread of its own writes the lines a batch at a time, waking at most once per {@code batch} while lines arrive.
 *
 * <p>Why not hand each line to the logging system from the event loop, through an async console handler (which was
 * how it worked): that wakes the handler's thread once per request, a cross-CPU wake-up and a thread switch on every
 * request; writing the line on the loop instead puts the occasional slow terminal or file write straight into request
 * latency. Measured against the async handler on a 2-vCPU VM (bench-results/overhead-ab.md, session 11): 5-24 % less
 * CPU per request in the rounds after the first (within that host's noise), peak throughput +28 %. A line reaches the
 * log at most {@code batch} after its request ended (plus the sink's own time), in the order the requests ended.
 *
 * <p>{@link #flush()} writes what waits at once; {@link #close()} also stops the thread, and a line added after that
 * is written by the caller. Thread-safe.
 */
public final class RequestLog implements AutoCloseable {
    private static final System.Logger LOG = System.getLogger("dev.hedgerow.request");
    /** Made on first use, not at class initialization: no thread is started by loading the class (native image). */
    private static volatile RequestLog shared;

    private final ConcurrentLinkedQueue<Supplier<String>> lines = new ConcurrentLinkedQueue<>();
    private final Consumer<String> sink;
    private final long batchNanos;
    /** The writer is parked until a line comes (the next add wakes it); false while it gathers or writes. */
    private final AtomicBoolean waiting = new AtomicBoolean();
    private final Thread writer;
    private volatile boolean closed;

    /**
     * @param sink  writes one line (called on the writer thread only, and on adders after {@link #close()})
     * @param batchNanos how long the writer gathers lines after the first one before writing them; positive
     */
    public RequestLog(Consumer<String> sink, long batchNanos) {
        this.sink = Objects.requireNonNull(sink, "sink");
        if (batchNanos <= 0) {
            throw new IllegalArgumentException("batch must be positive: " + batchNanos);
        }
        this.batchNanos = batchNanos;
        this.writer = new Thread(this::run, "hedgerow-request-log");
        writer.setDaemon(true);
        writer.start();
    }

    /** The process's request log: lines go to the {@code dev.hedgerow.request} logger at INFO. */
    public static RequestLog shared() {
        RequestLog log = shared;
        if (log == null) {
            synchronized (RequestLog.class) {
                log = shared;
                if (log == null) {
                    log = new RequestLog(line -> LOG.log(System.Logger.Level.INFO, line),
                            TimeUnit.MILLISECONDS.toNanos(25));
                    shared = log;
                }
            }
        }
        return log;
    }

    /** Writes what waits in the shared log now, if it was ever made (at shutdown). */
    public static void flushShared() {
        RequestLog log = shared;
        if (log != null) {
            log.flush();
        }
    }

    /** Whether the shared log's lines are written at all (the logger's level): when not, there is nothing to queue. */
    public static boolean enabled() {
        return LOG.isLoggable(System.Logger.Level.INFO);
    }

    /** Queues a line; {@code line} is called once, on the writer thread. */
    public void add(Supplier<String> line) {
        if (closed) {
            sink.accept(line.get());
            return;
        }
        lines.offer(line);
        if (waiting.get() && waiting.compareAndSet(true, false)) {
            LockSupport.unpark(writer);
        }
        if (closed) { // closed while adding: the writer may have made its last pass already
            writeAll();
        }
    }

    private void run() {
        while (!closed) {
            if (lines.isEmpty()) {
                waiting.set(true);
                if (lines.isEmpty() && !closed) { // an add after this check sees waiting and unparks
                    LockSupport.park(this);
                }
                waiting.set(false);
                continue;
            }
            LockSupport.parkNanos(this, batchNanos); // let the batch gather (close() cuts it short)
            writeAll();
        }
        writeAll();
    }

    /** Writes every queued line, oldest first; a line that fails to build or write is skipped. */
    private void writeAll() {
        Supplier<String> next;
        while ((next = lines.poll()) != null) {
            try {
                sink.accept(next.get());
            } catch (RuntimeException e) {
                // a log line must never take the writer down with it
            }
        }
    }

    /** Writes what waits now, on the calling thread (at shutdown: the process may stop before the next batch). */
    public void flush() {
        writeAll();
    }

    /** Writes what waits, then stops the writer (waits up to 2 s for it). */
    @Override
    public void close() {
        closed = true;
        LockSupport.unpark(writer);
        try {
            writer.join(2_000);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
        writeAll();
    }
}
