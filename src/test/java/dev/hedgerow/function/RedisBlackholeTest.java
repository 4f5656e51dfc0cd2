package dev.hedgerow.function;

import dev.hedgerow.state.ResilientStateStore;
import dev.hedgerow.state.StateKeys;
import dev.hedgerow.testsupport.RedisServer;
import dev.hedgerow.testsupport.Resp;
import dev.hedgerow.testsupport.TcpLink;
import io.smallrye.mutiny.Uni;
import io.vertx.core.Vertx;
import io.vertx.redis.client.Command;
import io.vertx.redis.client.Redis;
import io.vertx.redis.client.Request;
import io.vertx.redis.client.Response;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

import java.io.IOException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.TimeUnit;

import static dev.hedgerow.testsupport.Eventually.eventually;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * The app's Redis store ({@link HedgerowApp#redisStore}, its pool and guard as shipped) behind a relay whose open
 * connections go silent for good while their sockets stay open (a network blackhole, a firewall or NAT that dropped
 * their state): once Redis is reachable again on new connections, a busy instance must be back on shared state. It
 * stayed degraded for as long as the kernel kept the dead sockets (about 15 minutes): each call the guard gave up on
 * kept its pooled connection, and with every slot held so no call reached Redis again.
 */
class RedisBlackholeTest {
    /** More calls at once than the pool has connections (64), as a busy instance makes. */
    static final int BUSY = 100;
    static final Duration WAIT = Duration.ofSeconds(30);

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

    /** {@code n} calls at once, each answered from Redis or, failing that, from local state. */
    static void busy(ResilientStateStore store, String tag, int n) {
        List<Uni<Optional<String>>> calls = new ArrayList<>();
        for (int i = 0; i < n; i++) {
            calls.add(store.getOrgBlob("acme", tag + i));
        }
        Uni.join().all(calls).andFailFast().await().atMost(WAIT);
    }

    static String stored(String key) {
        try {
            return Resp.command(redis.port(), "GET", key);
        } catch (IOException e) {
            return "";
        }
    }

    static int connectedClients() {
        try {
            String info = Resp.command(redis.port(), "INFO", "clients");
            for (String line : info.split("\r?\n")) {
                if (line.startsWith("connected_clients:")) {
                    return Integer.parseInt(line.substring("connected_clients:".length()).trim());
                }
            }
            throw new IllegalStateException("no connected_clients in " + info);
        } catch (IOException e) {
            throw new IllegalStateException(e);
        }
    }

    @Test
    void aBusyInstanceIsBackOnSharedStateOnceABlackholeOfItsRedisConnectionsEnds() {
        try (TcpLink link = TcpLink.to(vertx, redis.port())) {
            ResilientStateStore store = HedgerowApp.redisStore(vertx, link.redisUrl(), false);
            busy(store, "warm", BUSY); // the pool opens its connections
            assertFalse(store.degraded(), "precondition: on shared state");

            link.freeze();
            busy(store, "frozen", BUSY);
            eventually(() -> {
                busy(store, "frozen", 8);
                return store.degraded();
            }, "the store falls back to local state while its connections are silent");

            link.thaw(); // Redis answers new connections again; the frozen ones stay silent
            int[] n = {0};
            eventually(() -> {
                String value = "back-" + n[0]++;
                store.putOrgBlob("acme", "blackhole", value, Duration.ofMinutes(1)).await().atMost(WAIT);
                return !store.degraded() && stored(StateKeys.orgBlob("acme", "blackhole")).equals(value);
            }, "the store is back on shared state: its writes reach Redis");
        }
    }

    /**
     * What the fix costs: a pooled connection idle past the read-idle timeout is closed, and the next calls open new
     * ones without one of them failing.
     */
    @Test
    void connectionsClosedForIdlenessAreReopenedWithoutAFailedCall() {
        ResilientStateStore store = HedgerowApp.redisStore(vertx, redis.url(), false);
        int before = connectedClients();
        busy(store, "idle", 20);
        assertTrue(connectedClients() > before, "precondition: the pool holds open connections");
        eventually(() -> connectedClients() <= before, "the idle connections are closed");
        long fallbacks = store.fallbacks();
        for (int i = 0; i < 20; i++) {
            store.putOrgBlob("acme", "reopened", "v" + i, Duration.ofMinutes(1)).await().atMost(WAIT);
        }
        busy(store, "reopened", 20);
        assertEquals(fallbacks, store.fallbacks(), "every call was answered by Redis");
        assertEquals("v19", stored(StateKeys.orgBlob("acme", "reopened")));
        assertFalse(store.degraded());
    }

    /**
     * The read-idle timer counts from a connection's last read, not from a command's sending: a connection the pool
     * handed out after lying idle for nearly that long was closed with its command out, and a healthy Redis's slow
     * answer became a failed call (review7). Here a command goes out on the client's connection of 2.2 s before and
     * its answer takes 1.2 s (the relay holds it): 3.4 s after that connection's last read.
     */
    @Test
    void aCommandSentAfterALullIsNotCutByTheReadIdleTimer() throws Exception {
        try (TcpLink link = TcpLink.to(vertx, redis.port())) {
            Redis client = Redis.createClient(vertx, HedgerowApp.redisOptions(link.redisUrl(), false));
            try {
                assertEquals("PONG", send(client, Request.cmd(Command.PING)).toString());
                Thread.sleep(2200);
                link.hold();
                vertx.setTimer(1200, id -> link.release());
                assertEquals("OK", send(client, Request.cmd(Command.SET).arg("after-lull").arg("v")).toString(),
                        "the slow answer arrives on its connection");
                assertEquals("v", stored("after-lull"));
            } finally {
                client.close();
            }
        }
    }

    static Response send(Redis client, Request request) throws Exception {
        return client.send(request).toCompletionStage().toCompletableFuture().get(10, TimeUnit.SECONDS);
    }
}
