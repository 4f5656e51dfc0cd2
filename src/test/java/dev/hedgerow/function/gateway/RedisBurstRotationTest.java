package dev.hedgerow.function.gateway;

import dev.hedgerow.function.HedgerowApp;
import dev.hedgerow.sim.SimServer;
import dev.hedgerow.state.CachingStateStore;
import dev.hedgerow.state.ForwardingStateStore;
import dev.hedgerow.state.StateStore;
import dev.hedgerow.testsupport.GatewayHarness;
import dev.hedgerow.testsupport.RedisServer;
import dev.hedgerow.time.Ticker;
import io.smallrye.mutiny.Uni;
import io.vertx.core.Vertx;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;

import static dev.hedgerow.function.gateway.GroupKit.chat;
import static dev.hedgerow.function.gateway.GroupKit.route;
import static org.junit.jupiter.api.Assertions.assertEquals;

/**
 * A burst of concurrent requests on a fresh instance with Redis state, the first traffic a cold start or a scale-out
 * gets: the rotation still spreads it evenly. Every request that found the instance's block of rotation positions
 * spent used to fetch a block of its own and take its first position, so the whole burst went to one member (found
 * by hunt5: 40 of 40 on one of four routes).
 */
class RedisBurstRotationTest {
    static final int BURST = 40;

    static Vertx vertx;
    static RedisServer redis;
    static Map<String, SimServer> sims;
    static GatewayHarness gw;

    @BeforeAll
    static void start() {
        vertx = Vertx.vertx();
        redis = RedisServer.start();
        sims = GatewayHarness.startSims(vertx, GroupKit.sims(GroupKit.quick(4), "m"));
        String yaml = GroupKit.yaml("""
                      - { alias: rr, provider: openrouter, model: m }
                      - { alias: rr, provider: digitalocean, model: m }
                      - { alias: rr, provider: fireworks, model: m }
                      - { alias: rr, provider: together, model: m }
                """, """
                      rr: { strategy: rr_health, hedging: false }
                """);
        // the shared cursor answers slowly (a busy or distant Redis), so the burst arrives while its first block is
        // being fetched, as it does on a cold instance whose first requests all wait on their first Redis reads
        StateStore slowCursor = new ForwardingStateStore(HedgerowApp.redisStore(vertx, redis.url(), false)) {
            @Override
            public Uni<Long> nextCursors(String orgId, String alias, int n) {
                return super.nextCursors(orgId, alias, n).onItem().delayIt().by(Duration.ofMillis(300));
            }
        };
        // behind the snapshot cache as a production instance has it (HedgerowApp.createStore), which hands out the
        // rotation's positions a block at a time
        gw = GatewayHarness.start(vertx, yaml, sims, new CachingStateStore(slowCursor, Duration.ofMillis(50),
                Ticker.system()));
    }

    @AfterAll
    static void stop() {
        gw.close();
        sims.values().forEach(SimServer::close);
        vertx.close().toCompletionStage().toCompletableFuture().join();
        redis.close();
    }

    @Test
    void aConcurrentBurstOnAColdInstanceIsSpreadEvenly() throws Exception {
        ExecutorService pool = Executors.newFixedThreadPool(BURST);
        try {
            List<Future<String>> served = new ArrayList<>();
            for (int i = 0; i < BURST; i++) {
                String prompt = "burst " + i;
                served.add(pool.submit(() -> route(chat(gw, "rr", prompt, false, null))));
            }
            Map<String, Integer> share = new TreeMap<>();
            for (Future<String> f : served) {
                share.merge(f.get(), 1, Integer::sum);
            }
            assertEquals(Map.of("rr-digitalocean", 10, "rr-fireworks", 10, "rr-openrouter", 10,
                    "rr-together", 10), share);
        } finally {
            pool.shutdownNow();
        }
    }
}
