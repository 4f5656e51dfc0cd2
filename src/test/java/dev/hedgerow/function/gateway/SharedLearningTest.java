package dev.hedgerow.function.gateway;

import dev.hedgerow.function.HedgerowApp;
import dev.hedgerow.function.VertxScheduler;
import dev.hedgerow.routing.LearnedModels;
import dev.hedgerow.routing.TtftPredictor;
import dev.hedgerow.sim.ModelScript;
import dev.hedgerow.sim.SimConfig;
import dev.hedgerow.state.BatchingStateStore;
import dev.hedgerow.state.CachingStateStore;
import dev.hedgerow.state.ResilientStateStore;
import dev.hedgerow.state.StateKeys;
import dev.hedgerow.testsupport.GatewayHarness;
import dev.hedgerow.testsupport.GatewayPair;
import dev.hedgerow.testsupport.RedisServer;
import dev.hedgerow.testsupport.Resp;
import dev.hedgerow.time.Ticker;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

import java.io.IOException;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.time.Duration;
import java.util.List;
import java.util.Map;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Two gateway instances on one Redis, each on production's store stack (snapshot cache, write batching, outage
 * guard), learn from the same route through the HTTP API: every first token either instance saw is in the route's
 * shared model. Before, each instance stepped its own copy of a model and wrote the whole of it, so the last writer's
 * copy won: 20 requests sent to the two in turn left 10 or 11 samples, and a fleet of N instances needed about N
 * times the traffic to notice a route slowing down (found by hunt10).
 */
class SharedLearningTest {
    static final String YAML = """
            orgs:
              - id: acme
                keys: [{ name: app, key: "k-acme" }]
                providers:
                  - { id: alpha, base_url: "${SIM_ALPHA_URL}", api_key: "sk-alpha" }
                routes:
                  - { id: one, alias: solo, provider: alpha, model: m }
            """;

    static RedisServer redis;
    static final HttpClient http = HttpClient.newHttpClient();

    @BeforeAll
    static void start() {
        redis = RedisServer.start();
    }

    @AfterAll
    static void stop() {
        redis.close();
    }

    /** Each test learns from a route no test taught before. */
    @BeforeEach
    void forget() throws IOException {
        Resp.command(redis.port(), "FLUSHALL");
    }

    /** Two instances as production assembles each: HedgerowApp's Redis store, batched writes, cached snapshots. */
    static GatewayPair fleet() {
        return fleet(new java.util.ArrayList<>());
    }

    /** As above, each instance's Redis store (behind its outage guard) added to {@code guards}. */
    static GatewayPair fleet(List<ResilientStateStore> guards) {
        ModelScript fast = ModelScript.defaults().withLength(2).withLatency(ModelScript.Latency.of(5, 0));
        return GatewayPair.on(YAML, Map.of("alpha", SimConfig.of(5).withApiKey("sk-alpha").withModel("m", fast)),
                vertx -> {
                    ResilientStateStore guard = HedgerowApp.redisStore(vertx, redis.url(), false);
                    guards.add(guard);
                    return new CachingStateStore(new BatchingStateStore(guard, new VertxScheduler(vertx),
                            Duration.ofMillis(20)), Duration.ofMillis(50), Ticker.system());
                });
    }

    static void stream(GatewayHarness gw, int i) throws Exception {
        HttpResponse<String> r = http.send(HttpRequest.newBuilder(URI.create(gw.baseUrl() + "/v1/chat/completions"))
                .header("Authorization", "Bearer k-acme").header("Content-Type", "application/json")
                .POST(HttpRequest.BodyPublishers.ofString("{\"model\":\"solo\",\"stream\":true,"
                        + "\"messages\":[{\"role\":\"user\",\"content\":\"question " + i + "\"}]}")).build(),
                HttpResponse.BodyHandlers.ofString());
        assertEquals(200, r.statusCode(), r.body());
    }

    static long sharedSamples() {
        try {
            String enc = Resp.command(redis.port(), "GET", StateKeys.routeBlob("acme/one", LearnedModels.TTFT));
            return enc == null ? 0 : TtftPredictor.decode(enc, TtftPredictor.Prior.defaults()).samples();
        } catch (IOException e) {
            return -1;
        }
    }

    @Test
    void everyFirstTokenEitherInstanceSawIsInTheSharedModel() throws Exception {
        try (GatewayPair fleet = fleet()) {
            GatewayHarness a = fleet.gw1();
            GatewayHarness b = fleet.gw2();
            for (int i = 0; i < 10; i++) {
                stream(a, 2 * i);
                stream(b, 2 * i + 1);
            }
            long deadline = System.nanoTime() + Duration.ofSeconds(5).toNanos();
            while (sharedSamples() != 20 && System.nanoTime() < deadline) {
                Thread.sleep(20);   // the last writes land within a batch window
            }
            assertEquals(20, sharedSamples());
        }
    }

    /**
     * Two instances serving a route in turn, one request at a time, step each model from what the other stored, not
     * from their own older copy: every write found Redis changed and was stepped and sent again, about five per
     * request (one per model; found by hunt14): 112 for these 16, none now. The pause between requests only gives each
     * write time to land; a slower host makes more conflicts, never fewer samples.
     */
    @Test
    void instancesTakingTurnsStepFromWhatTheOtherStored() throws Exception {
        List<ResilientStateStore> guards = new java.util.ArrayList<>();
        try (GatewayPair fleet = fleet(guards)) {
            int requests = 16;
            for (int i = 0; i < requests; i++) {
                stream(i % 2 == 0 ? fleet.gw1() : fleet.gw2(), i);
                Thread.sleep(400);
            }
            long conflicts = guards.stream().mapToLong(ResilientStateStore::learnedConflicts).sum();
            assertTrue(conflicts < requests, conflicts + " learned writes of " + requests + " requests conflicted");
        }
    }
}
