package dev.hedgerow.state;

import io.vertx.core.Context;
import io.vertx.core.Future;
import io.vertx.redis.client.Redis;
import io.vertx.redis.client.RedisConnection;
import io.vertx.redis.client.Request;
import io.vertx.redis.client.Response;

import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.concurrent.ConcurrentHashMap;
import java.util.function.Supplier;

/**
 * A Redis client per event loop: a command sent from an event-loop thread goes out on a connection owned by that same
 * loop, so writing it and reading its answer never hop to another thread. Vert.x's Redis pool, like its HTTP pool,
 * hands out whichever connection is free whatever loop owns it, so each command from the other loop cost two
 * cross-thread wake-ups; under the overhead bench on Redis, JFR counted ~56 000 contended enters of the NIO selector's
 * wake-up lock in 4 minutes (p99 0.5–1 ms, up to 12 ms), against 9 on embedded state. Calls from any other thread use
 * one shared client. Each client has its own pool, so the connections to Redis are at most the pool size per event
 * loop plus one more pool. Thread-safe.
 */
public final class LoopLocalRedis implements Redis {
    private final Supplier<Redis> create;
    private final Redis offLoop;
    private final Map<Thread, Redis> loops = new ConcurrentHashMap<>();
    private volatile boolean closed;

    /** @param create makes one client (e.g. {@code () -> Redis.createClient(vertx, options)}); called per loop */
    public LoopLocalRedis(Supplier<Redis> create) {
        this.create = Objects.requireNonNull(create, "create");
        this.offLoop = Objects.requireNonNull(create.get(), "client");
    }

    /** The calling event loop's own client (created on its first call), or the shared one off the event loops. */
    Redis client() {
        if (closed || !Context.isOnEventLoopThread()) {
            return offLoop; // (once closed, the closed shared client answers with its own error)
        }
        Redis mine = loops.get(Thread.currentThread());
        return mine != null ? mine : loops.computeIfAbsent(Thread.currentThread(), t -> create.get());
    }

    /** How many per-loop clients exist (for tests). */
    int loopClients() {
        return loops.size();
    }

    @Override
    public Future<RedisConnection> connect() {
        return client().connect();
    }

    @Override
    public Future<Response> send(Request command) {
        return client().send(command);
    }

    @Override
    public Future<List<Response>> batch(List<Request> commands) {
        return client().batch(commands);
    }

    @Override
    public void close() {
        closed = true;
        offLoop.close();
        loops.values().forEach(Redis::close);
    }
}
