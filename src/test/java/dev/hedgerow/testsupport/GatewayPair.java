package dev.hedgerow.testsupport;

import dev.hedgerow.sim.SimConfig;
import dev.hedgerow.sim.SimServer;
import dev.hedgerow.state.RedisStateStore;
import dev.hedgerow.state.StateStore;
import io.vertx.core.Vertx;
import io.vertx.mutiny.redis.client.Redis;
import io.vertx.redis.client.RedisClientType;
import io.vertx.redis.client.RedisOptions;

import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.function.Function;
import java.util.function.UnaryOperator;

/**
 * Two gateway instances over one shared Redis, as two processes of a fleet: one Vert.x, one simulator per provider
 * (shared by both), and one store per instance on its own Redis client. {@link #close()} closes the gateways, the
 * Redis clients it made, the simulators, Vert.x and the private Redis server (if it started one).
 */
public final class GatewayPair implements AutoCloseable {
    private final RedisServer redis;
    private final Vertx vertx;
    private final List<Redis> clients = new ArrayList<>();
    private Map<String, SimServer> sims = Map.of();
    private StateStore store1;
    private StateStore store2;
    private GatewayHarness gw1;
    private GatewayHarness gw2;

    private GatewayPair(RedisServer redis) {
        this.redis = redis;
        this.vertx = Vertx.vertx();
    }

    /** Two instances on a private {@link RedisServer}, each with its own plain {@link RedisStateStore}. */
    public static GatewayPair onPrivateRedis(String yaml, Map<String, SimConfig> providers) {
        return onPrivateRedis(yaml, providers, UnaryOperator.identity());
    }

    /** As above, each instance's store wrapped by {@code wrap} (e.g. in its own snapshot cache). */
    public static GatewayPair onPrivateRedis(String yaml, Map<String, SimConfig> providers,
                                             UnaryOperator<StateStore> wrap) {
        GatewayPair pair = new GatewayPair(RedisServer.start());
        return pair.start(yaml, providers, v -> wrap.apply(pair.standaloneStore()));
    }

    /**
     * Two instances whose stores {@code stores} makes (called once per instance, e.g. on a Redis Cluster the test
     * owns and closes after this pair); Redis clients a given factory makes are released when the pair's Vert.x
     * closes.
     */
    public static GatewayPair on(String yaml, Map<String, SimConfig> providers, Function<Vertx, StateStore> stores) {
        return new GatewayPair(null).start(yaml, providers, stores);
    }

    private GatewayPair start(String yaml, Map<String, SimConfig> providers, Function<Vertx, StateStore> stores) {
        try {
            sims = GatewayHarness.startSims(vertx, providers);
            store1 = stores.apply(vertx);
            store2 = stores.apply(vertx);
            gw1 = GatewayHarness.start(vertx, yaml, sims, store1);
            gw2 = GatewayHarness.start(vertx, yaml, sims, store2);
            return this;
        } catch (RuntimeException | Error e) {
            close();
            throw e;
        }
    }

    private StateStore standaloneStore() {
        Redis client = Redis.createClient(io.vertx.mutiny.core.Vertx.newInstance(vertx), new RedisOptions()
                .setConnectionString(redis.url()).setMaxPoolSize(8).setMaxPoolWaiting(256));
        clients.add(client);
        return new RedisStateStore(client, RedisClientType.STANDALONE);
    }

    public GatewayHarness gw1() {
        return gw1;
    }

    public GatewayHarness gw2() {
        return gw2;
    }

    public StateStore store1() {
        return store1;
    }

    public StateStore store2() {
        return store2;
    }

    /** The private Redis server ({@link #onPrivateRedis} only). */
    public RedisServer redis() {
        if (redis == null) {
            throw new IllegalStateException("this pair runs on a store factory, not on a private Redis");
        }
        return redis;
    }

    @Override
    public void close() {
        if (gw1 != null) {
            gw1.close();
        }
        if (gw2 != null) {
            gw2.close();
        }
        clients.forEach(Redis::close);
        sims.values().forEach(SimServer::close);
        vertx.close().toCompletionStage().toCompletableFuture().join();
        if (redis != null) {
            redis.close();
        }
    }
}
