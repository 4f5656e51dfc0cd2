package dev.hedgerow.state;

import dev.hedgerow.testsupport.RedisServer;
import dev.hedgerow.testsupport.Resp;
import io.vertx.mutiny.core.Vertx;
import io.vertx.mutiny.redis.client.Redis;
import io.vertx.redis.client.RedisClientType;
import io.vertx.redis.client.RedisOptions;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

import java.time.Duration;
import java.util.List;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** The contract on a private standalone redis-server (real TTLs, real server time). */
class RedisStateStoreTest extends StateStoreContract {

    private static RedisServer server;
    private static Vertx vertx;
    private static Redis redis;
    private static RedisStateStore store;

    @BeforeAll
    static void startRedis() {
        server = RedisServer.start();
        vertx = Vertx.vertx();
        redis = Redis.createClient(vertx, new RedisOptions().setConnectionString(server.url())
                .setMaxPoolSize(8).setMaxPoolWaiting(256));
        store = new RedisStateStore(redis, RedisClientType.STANDALONE, TUNING);
    }

    @AfterAll
    static void stopRedis() {
        if (redis != null) {
            redis.close();
        }
        if (vertx != null) {
            vertx.closeAndAwait();
        }
        if (server != null) {
            server.close();
        }
    }

    @Override
    protected StateStore store() {
        return store;
    }

    @Override
    protected void advance(Duration d) {
        try {
            Thread.sleep(d.toMillis());
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IllegalStateException(e);
        }
    }

    @Test
    void scriptsAreReloadedWhenTheServerForgetsThem() throws Exception {
        String r = id("route");
        await(store.recordFailure(r, 5, LONG));
        Resp.command(server.port(), "SCRIPT", "FLUSH");
        assertEquals(2, await(store.recordFailure(r, 5, LONG)).fails());
        Resp.command(server.port(), "SCRIPT", "FLUSH");
        assertEquals(2, await(store.snapshot(List.of(r, id("route")), LONG)).get(r).fails());
    }

    /**
     * A blob kept for good (an operator's verdict) keeps the route's blob index; deleting it hands the index the TTL
     * of the longest-lived blob left, and deleting the last takes the index with it: no index outlives its blobs.
     */
    @Test
    void deletingARouteBlobForgetsItsNameAndLetsTheIndexExpireWithTheRest() throws Exception {
        String r = id("route");
        String index = StateKeys.routeBlobIndex(r);
        await(store.putRouteBlob(r, "verdict", "pass", null));
        await(store.putRouteBlob(r, "ewma", "e", LONG));
        assertEquals("-1", Resp.command(server.port(), "PTTL", index));

        await(store.deleteRouteBlob(r, "verdict"));

        assertEquals("0", Resp.command(server.port(), "EXISTS", StateKeys.routeBlob(r, "verdict")));
        assertEquals("0", Resp.command(server.port(), "HEXISTS", index, "verdict"));
        long ttl = Long.parseLong(Resp.command(server.port(), "PTTL", index));
        assertTrue(ttl > 0 && ttl <= LONG.toMillis(), "the index lives as long as the ewma blob: " + ttl);

        await(store.deleteRouteBlob(r, "ewma"));
        assertEquals("0", Resp.command(server.port(), "EXISTS", index));
    }

    @Test
    void pingFailsWhileRedisIsDownAndRecoversAfterRestart() {
        assertTrue(await(store.ping()));
        server.stop();
        try {
            assertFalse(await(store.ping()));
        } finally {
            server.restart();
        }
        boolean up = false;
        for (int i = 0; i < 50 && !up; i++) {
            up = await(store.ping());
            if (!up) {
                advance(Duration.ofMillis(100));
            }
        }
        assertTrue(up, "store reconnects after the restart");
    }
}
