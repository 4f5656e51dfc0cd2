package dev.hedgerow.function;

import dev.hedgerow.state.ResilientStateStore;
import dev.hedgerow.testsupport.RedisServer;
import dev.hedgerow.testsupport.Resp;
import dev.hedgerow.testsupport.TcpLink;
import io.vertx.core.Vertx;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

import java.time.Duration;
import java.util.List;
import java.util.Optional;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * The startup warm-up of the app's Redis store ({@link ResilientStateStore#warmUp}, on {@link HedgerowApp#redisStore}
 * as shipped) against a Redis behind a relay: one started a moment after the instance is waited for, and one that
 * does not answer leaves the instance on local state at once, its breaker open with the reason, instead of each of the
 * startup's calls waiting out the guard's timeout until the breaker had seen enough of them fail (an instance
 * started against an unreachable Redis took 13 s to be ready, past the 10 s Lambda gives an environment's start).
 * {@link RedisSlowFirstConnectionTest} is the app started on a slow first connection.
 */
class RedisWarmUpTest {
    static final Duration WAIT = Duration.ofSeconds(10);

    static RedisServer redis;
    static Vertx vertx;

    @BeforeAll
    static void start() {
        redis = RedisServer.start();
        vertx = Vertx.vertx();
    }

    @AfterAll
    static void stop() {
        vertx.close().toCompletionStage().toCompletableFuture().join();
        redis.close();
    }

    @Test
    void aRedisThatDoesNotAnswerOpensTheBreakerAtOnce() {
        try (TcpLink link = TcpLink.to(vertx, redis.port())) {
            link.freeze();   // connections accepted, never answered
            ResilientStateStore store = HedgerowApp.redisStore(vertx, link.redisUrl(), false);
            String why = store.warmUp(Duration.ofMillis(300)).await().atMost(WAIT);
            assertEquals("no answer to a ping within 300 ms", why);
            assertEquals("OPEN", store.breakerState(), "the startup's calls go to local state without waiting");
            assertTrue(store.degraded());
            assertEquals(why, store.lastFailure(), "readiness says why");
            long fallbacks = store.fallbacks();
            assertEquals(Optional.empty(), store.getOrgBlob("acme", "probe").await().atMost(WAIT));
            assertEquals(fallbacks + 1, store.fallbacks(), "answered from local state");
        }
    }

    @Test
    void aRedisThatRefusesSaysWhyAndOpensTheBreaker() {
        try (TcpLink link = TcpLink.to(vertx, redis.port())) {
            link.cut();   // every connection closed as soon as it is accepted
            ResilientStateStore store = HedgerowApp.redisStore(vertx, link.redisUrl(), false);
            String why = store.warmUp(Duration.ofMillis(500)).await().atMost(WAIT);
            assertTrue(why.startsWith("the shared state store did not answer a ping ("), why);
            assertEquals("OPEN", store.breakerState());
            assertEquals(why, store.lastFailure());
        }
    }

    /** Nothing listening yet (a Redis started alongside the instance): asked again until it answers. */
    @Test
    void aRedisStartedAMomentLaterIsWaitedFor() throws Exception {
        RedisServer late = RedisServer.start();
        try {
            late.stop();
            Thread starter = new Thread(() -> {
                try {
                    Thread.sleep(600);
                } catch (InterruptedException e) {
                    return;
                }
                late.restart();
            });
            starter.start();
            ResilientStateStore store = HedgerowApp.redisStore(vertx, late.url(), false);
            assertEquals("", store.warmUp(Duration.ofSeconds(5)).await().atMost(WAIT), store.lastFailure());
            assertFalse(store.degraded());
            assertEquals("CLOSED", store.breakerState());
            assertEquals(0, store.fallbacks());
            starter.join();
        } finally {
            late.close();
        }
    }

    /**
     * A password holding a {@code +} (as base64 ones do) logs in written as is or percent-encoded: Vert.x read the
     * {@code +} as a space, and the instance served on local state for good (found by hunt25).
     */
    @Test
    void aPasswordHoldingAPlusLogsIn() throws Exception {
        RedisServer locked = RedisServer.start();
        Resp.command(locked.port(), "CONFIG", "SET", "requirepass", "Ab+cd=ef");
        try {
            for (String password : List.of("Ab+cd=ef", "Ab%2Bcd%3Def")) {
                ResilientStateStore store = HedgerowApp.redisStore(vertx,
                        "redis://:" + password + "@127.0.0.1:" + locked.port(), false);
                assertEquals("", store.warmUp(Duration.ofSeconds(3)).await().atMost(WAIT), password);
                assertEquals("CLOSED", store.breakerState(), password);
            }
        } finally {
            locked.close();
        }
    }

    /** A wrong password will not change: not asked again (it was, every 200 ms for 3 s, on every start). */
    @Test
    void aWrongPasswordIsNotAskedAgain() throws Exception {
        RedisServer locked = RedisServer.start();
        Resp.command(locked.port(), "CONFIG", "SET", "requirepass", "right");
        try (TcpLink link = TcpLink.to(vertx, locked.port())) {
            ResilientStateStore store = HedgerowApp.redisStore(vertx,
                    "redis://:wrong@127.0.0.1:" + link.port(), false);
            String why = store.warmUp(Duration.ofSeconds(3)).await().atMost(WAIT);
            assertTrue(why.contains("WRONGPASS") || why.contains("invalid"), why);
            assertEquals("OPEN", store.breakerState());
            assertTrue(link.accepted() <= 2, link.accepted() + " connections for one refused login");
        } finally {
            locked.close();
        }
    }
}
