package dev.hedgerow.testsupport;

import dev.hedgerow.state.RedisStateStore;
import io.vertx.core.Vertx;
import io.vertx.mutiny.redis.client.Redis;
import io.vertx.redis.client.RedisClientType;
import io.vertx.redis.client.RedisOptions;

/** A plain {@link RedisStateStore} on its own small client: one gateway instance's view of a test Redis. */
public final class RedisStores {
    private RedisStores() {
    }

    /** A store and the client it owns; closing it closes the client (for a Vert.x that outlives the test). */
    public record Opened(RedisStateStore store, Redis client) implements AutoCloseable {
        @Override
        public void close() {
            client.close();
        }
    }

    public static Opened open(Vertx vertx, String url) {
        Redis client = Redis.createClient(io.vertx.mutiny.core.Vertx.newInstance(vertx),
                new RedisOptions().setConnectionString(url).setMaxPoolSize(8).setMaxPoolWaiting(256));
        return new Opened(new RedisStateStore(client, RedisClientType.STANDALONE), client);
    }

    /** A store whose client is closed with {@code vertx}. */
    public static RedisStateStore standalone(Vertx vertx, String url) {
        return open(vertx, url).store();
    }
}
