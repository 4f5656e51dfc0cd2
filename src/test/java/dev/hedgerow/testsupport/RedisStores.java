package dev.hedgerow.testsupport;

import dev.hedgerow.state.RedisStateStore;
import io.vertx.core.Vertx;
import io.vertx.redis.client.RedisClientType;
import io.vertx.redis.client.RedisOptions;

/** A plain {@link RedisStateStore} on its own small client: one gateway instance's view of a test Redis. */
public final class RedisStores {
    private RedisStores() {
    }

    public static RedisStateStore standalone(Vertx vertx, String url) {
        return new RedisStateStore(io.vertx.mutiny.redis.client.Redis.createClient(
                io.vertx.mutiny.core.Vertx.newInstance(vertx),
                new RedisOptions().setConnectionString(url).setMaxPoolSize(8).setMaxPoolWaiting(256)),
                RedisClientType.STANDALONE);
    }
}
