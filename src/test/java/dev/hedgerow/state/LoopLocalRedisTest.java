package dev.hedgerow.state;

import dev.hedgerow.testsupport.RedisServer;
import io.vertx.core.Context;
import io.vertx.core.Vertx;
import io.vertx.core.VertxOptions;
import io.vertx.redis.client.Command;
import io.vertx.redis.client.Redis;
import io.vertx.redis.client.RedisOptions;
import io.vertx.redis.client.Request;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotSame;
import static org.junit.jupiter.api.Assertions.assertSame;

/** One Redis client per event loop, against a private redis-server. */
class LoopLocalRedisTest {
    private static RedisServer server;
    private static Vertx vertx;

    @BeforeAll
    static void start() {
        server = RedisServer.start();
        vertx = Vertx.vertx(new VertxOptions().setEventLoopPoolSize(2));
    }

    @AfterAll
    static void stop() {
        if (vertx != null) {
            vertx.close().toCompletionStage().toCompletableFuture().join();
        }
        if (server != null) {
            server.close();
        }
    }

    /** What {@code LoopLocalRedis.client()} answers on a fresh event-loop context, and whether a PING went through. */
    private static Redis onLoop(Context loop, LoopLocalRedis redis) throws Exception {
        CompletableFuture<Redis> picked = new CompletableFuture<>();
        loop.runOnContext(v -> {
            Redis mine = redis.client();
            redis.send(Request.cmd(Command.PING)).onComplete(r -> {
                if (r.succeeded() && "PONG".equals(r.result().toString())) {
                    picked.complete(mine);
                } else {
                    picked.completeExceptionally(new AssertionError("PING failed: " + r.cause()));
                }
            });
        });
        return picked.get(10, TimeUnit.SECONDS);
    }

    /** A new event-loop context (Vert.x keeps one per outside thread, so each is asked for on a thread of its own). */
    private static Context freshContext() throws Exception {
        CompletableFuture<Context> c = new CompletableFuture<>();
        Thread t = new Thread(() -> c.complete(vertx.getOrCreateContext()));
        t.start();
        t.join();
        return c.get(10, TimeUnit.SECONDS);
    }

    private static Thread threadOf(Context loop) throws Exception {
        CompletableFuture<Thread> t = new CompletableFuture<>();
        loop.runOnContext(v -> t.complete(Thread.currentThread()));
        return t.get(10, TimeUnit.SECONDS);
    }

    @Test
    void eachEventLoopSendsThroughItsOwnClientAndOtherThreadsShareOne() throws Exception {
        AtomicInteger made = new AtomicInteger();
        LoopLocalRedis redis = new LoopLocalRedis(() -> {
            made.incrementAndGet();
            return Redis.createClient(vertx, new RedisOptions().setConnectionString(server.url()));
        });
        try {
            assertEquals(1, made.get(), "the shared client is made at once");
            Context a = freshContext();
            Context b = freshContext();
            for (int i = 0; i < 8 && threadOf(b) == threadOf(a); i++) { // new contexts take the loops in turn
                b = freshContext();
            }
            Redis first = onLoop(a, redis);
            Redis again = onLoop(a, redis);
            Redis other = onLoop(b, redis);
            assertSame(first, again, "one loop keeps its client");
            assertNotSame(first, other, "the other loop has its own");
            assertEquals(3, made.get());
            assertEquals(2, redis.loopClients());
            // off the event loops: the shared client, and commands still go through (batch too)
            assertNotSame(first, redis.client());
            assertNotSame(other, redis.client());
            assertEquals("PONG", redis.send(Request.cmd(Command.PING)).toCompletionStage().toCompletableFuture()
                    .get(10, TimeUnit.SECONDS).toString());
            assertEquals(2, redis.batch(List.of(Request.cmd(Command.PING), Request.cmd(Command.PING)))
                    .toCompletionStage().toCompletableFuture().get(10, TimeUnit.SECONDS).size());
            assertEquals(3, made.get(), "no client is made off the event loops");
        } finally {
            redis.close();
        }
    }
}
