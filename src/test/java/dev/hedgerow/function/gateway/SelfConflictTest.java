package dev.hedgerow.function.gateway;

import dev.hedgerow.function.HedgerowApp;
import dev.hedgerow.function.VertxScheduler;
import dev.hedgerow.sim.ModelScript;
import dev.hedgerow.sim.SimConfig;
import dev.hedgerow.sim.SimServer;
import dev.hedgerow.state.BatchingStateStore;
import dev.hedgerow.state.CachingStateStore;
import dev.hedgerow.state.ResilientStateStore;
import dev.hedgerow.testsupport.GatewayHarness;
import dev.hedgerow.testsupport.RedisServer;
import dev.hedgerow.time.Ticker;
import io.vertx.core.Vertx;
import org.junit.jupiter.api.Test;

import java.time.Duration;
import java.util.Map;

import static org.junit.jupiter.api.Assertions.assertEquals;

/**
 * One instance on a real Redis, with the production store stack (cache, batching, outage guard), learning from one
 * stream at a time, never conflicts with itself: a stream's end learns from its planning snapshot, read before its
 * own first-token write, and when its decode outlasted LearnedModels' 250 ms of trust in its own copy it stepped from
 * that stale value, so Redis refused the write as a conflict and it was stepped and sent again (9 of 10 streams;
 * found by hunt28). A conflict is what two instances learning from one route at once cause, as README says.
 */
class SelfConflictTest {
    @Test
    void oneInstanceSequentialStreamsDoNotConflictWithThemselves() throws Exception {
        try (RedisServer redis = RedisServer.start()) {
            Vertx vertx = Vertx.vertx();
            try {
                // 16 tokens at 40 tokens/s: about 375 ms from first token to end, over LOCAL_LANDED_MS (250 ms)
                ModelScript slowDecode = ModelScript.defaults().withLength(16)
                        .withLatency(ModelScript.Latency.of(5, 40));
                Map<String, SimServer> sims = GatewayHarness.startSims(vertx,
                        Map.of("alpha", SimConfig.of(5).withApiKey("sk-alpha").withModel("m", slowDecode)));
                ResilientStateStore guard = HedgerowApp.redisStore(vertx, redis.url(), false);
                CachingStateStore store = new CachingStateStore(new BatchingStateStore(guard,
                        new VertxScheduler(vertx), Duration.ofMillis(20)), Duration.ofMillis(50), Ticker.system());
                try (GatewayHarness gw = GatewayHarness.start(vertx, SharedLearningTest.YAML, sims, store)) {
                    int requests = 10;
                    for (int i = 0; i < requests; i++) {
                        SharedLearningTest.stream(gw, i);   // one at a time: nothing else learns from the route
                        Thread.sleep(100);
                    }
                    assertEquals(0, guard.learnedConflicts(),
                            guard.learnedConflicts() + " learned writes of " + requests
                                    + " sequential requests on ONE instance conflicted");
                }
            } finally {
                vertx.close().toCompletionStage().toCompletableFuture().get();
            }
        }
    }
}
