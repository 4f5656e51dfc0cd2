package dev.hedgerow.state;

import dev.hedgerow.testsupport.RedisCluster;
import dev.hedgerow.testsupport.Resp;
import io.vertx.mutiny.core.Vertx;
import io.vertx.mutiny.redis.client.Redis;
import io.vertx.redis.client.RedisClientType;
import io.vertx.redis.client.RedisOptions;
import io.vertx.redis.client.RedisReplicas;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;

import static org.junit.jupiter.api.Assertions.assertEquals;

/** The contract on a private 3-master Redis Cluster: proves every script stays inside one slot. */
class RedisClusterStateStoreTest extends StateStoreContract {

    private static RedisCluster cluster;
    private static Vertx vertx;
    private static Redis redis;
    private static RedisStateStore store;

    @BeforeAll
    static void startCluster() {
        cluster = RedisCluster.start();
        vertx = Vertx.vertx();
        RedisOptions options = new RedisOptions().setType(RedisClientType.CLUSTER).setUseReplicas(RedisReplicas.NEVER)
                .setMaxPoolSize(8).setMaxPoolWaiting(256);
        cluster.urls().forEach(options::addConnectionString);
        redis = Redis.createClient(vertx, options);
        store = new RedisStateStore(redis, RedisClientType.CLUSTER, TUNING);
    }

    @AfterAll
    static void stopCluster() {
        if (redis != null) {
            redis.close();
        }
        if (vertx != null) {
            vertx.closeAndAwait();
        }
        if (cluster != null) {
            cluster.close();
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
    void concurrentSnapshotReloadsScriptsOnEveryNode() throws Exception {
        List<String> routes = new ArrayList<>();
        for (int i = 0; i < 12; i++) {
            routes.add(id("route"));
            await(store.recordFailure(routes.get(i), 5, LONG));
        }
        for (int port : cluster.ports()) {
            Resp.command(port, "SCRIPT", "FLUSH");
        }
        var snapshot = await(store.snapshot(routes, LONG));
        routes.forEach(r -> assertEquals(1, snapshot.get(r).fails(), r));
    }
}
