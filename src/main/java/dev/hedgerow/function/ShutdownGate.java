package dev.hedgerow.function;

import dev.hedgerow.api.ApiError;
import io.vertx.ext.web.Router;
import io.vertx.ext.web.RoutingContext;
import jakarta.enterprise.context.ApplicationScoped;
import jakarta.enterprise.event.Observes;

import java.time.Duration;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.locks.Condition;
import java.util.concurrent.locks.ReentrantLock;

/**
 * The HTTP side of a graceful shutdown: counts the requests in flight on every path and, once {@link #close()} is
 * called (SIGTERM), refuses every new one but health and metrics with 503 {@code server_shutting_down} in the
 * OpenAI envelope, with {@code Retry-After} and {@code Connection: close}, so a client's retry opens a new connection
 * (which a load balancer sends to another instance); a keep-alive connection's next request gets that answer too.
 * Readiness check {@code hedgerow-shutdown} ({@link ShutdownHealth}) is DOWN from
 * then on, so an orchestrator that still probes the instance takes it out of rotation.
 *
 * <p>Quarkus lets an application answer here: the HTTP server keeps listening through the pre-shutdown phase
 * ({@code quarkus.shutdown.delay-enabled}), whose observer ({@link HedgerowApp}) waits in {@link #awaitIdle}; by the
 * {@code ShutdownEvent} the server has closed every connection. Quarkus' own {@code quarkus.shutdown.timeout} is not
 * used: its filter only closes connections and waits, and gives the application no moment to end the streams still
 * open with an error event before the server closes them. Thread-safe.
 */
@ApplicationScoped
public class ShutdownGate {
    /** Before every other route of the application (CORS refusals, size guards): a refusal reads nothing. */
    static final int ORDER = CorsRefusals.ORDER - 10;

    private final AtomicInteger inFlight = new AtomicInteger();
    /** Only for waking {@link #awaitIdle}; the count itself is lock-free (every request passes here). */
    private final ReentrantLock lock = new ReentrantLock();
    private final Condition idle = lock.newCondition();
    private volatile boolean closed;

    /** Counts every request from its arrival to its end (public for tests that mount it on a bare router). */
    public void mount(@Observes Router router) {
        router.route().order(ORDER).handler(this::admit);
    }

    private void admit(RoutingContext ctx) {
        if (closed && !ctx.normalizedPath().startsWith("/q/")) {
            ctx.response().putHeader("connection", "close");
            JsonReplies.refuseUnread(ctx, ApiError.shuttingDown("This Hedgerow instance is shutting down and takes"
                    + " no new requests; retry in 1 s (another instance, or this one restarted, will serve it)."));
            return;
        }
        if (ctx.normalizedPath().startsWith("/q/")) {
            // health checks and metrics scrapes are not waited for, nor counted: a readiness check counted itself,
            // so an idle instance showed requests_in_flight 1 (found by hunt14)
            ctx.next();
            return;
        }
        inFlight.incrementAndGet();
        boolean[] done = {false};
        // the response's end, or the connection's close before it (Vert.x then calls the end handlers too)
        ctx.addEndHandler(v -> {
            if (!done[0]) {
                done[0] = true;
                ended();
            }
        });
        ctx.next();
    }

    private void ended() {
        if (inFlight.decrementAndGet() == 0 && closed) {
            lock.lock();
            try {
                idle.signalAll();
            } finally {
                lock.unlock();
            }
        }
    }

    /** From now on every new request but health and metrics is refused; readiness is DOWN. */
    public void close() {
        closed = true;
    }

    /** Whether {@link #close()} was called. */
    public boolean closed() {
        return closed;
    }

    /** Requests whose answer has not ended yet. */
    public int inFlight() {
        return inFlight.get();
    }

    /** Blocks until no request is in flight or {@code max} has passed; true when none is. Call after {@link #close}. */
    public boolean awaitIdle(Duration max) {
        long deadline = System.nanoTime() + max.toNanos();
        lock.lock();
        try {
            while (inFlight.get() > 0) {
                long left = deadline - System.nanoTime();
                if (left <= 0) {
                    return false;
                }
                idle.awaitNanos(Math.min(left, 50_000_000L)); // re-checked at least every 50 ms
            }
            return true;
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            return inFlight.get() == 0;
        } finally {
            lock.unlock();
        }
    }

    /** For a log line: a duration as {@code 20 s} or {@code 1500 ms}. */
    static String text(Duration d) {
        return d.toMillis() % 1000 == 0 ? d.toSeconds() + " s" : d.toMillis() + " ms";
    }
}
