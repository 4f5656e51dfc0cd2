package dev.hedgerow.state;

import dev.hedgerow.sim.ModelScript;
import dev.hedgerow.sim.SimConfig;
import dev.hedgerow.sim.SimServer;
import dev.hedgerow.testsupport.GatewayHarness;
import dev.hedgerow.testsupport.RedisServer;
import dev.hedgerow.testsupport.RedisStores;
import dev.hedgerow.time.Ticker;
import io.smallrye.mutiny.Uni;
import io.vertx.core.Vertx;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.time.Duration;
import java.util.Map;

import static dev.hedgerow.testsupport.Eventually.eventually;
import static org.junit.jupiter.api.Assertions.assertEquals;

/**
 * Through the HTTP API: one Redis reply to a half-open probe acquisition that comes back after the outage guard's
 * timeout left the route's probe slot taken in Redis by a request that was told it did not get it, which never
 * probed nor released it, so every request for the alias was refused 503 "half-open probe in flight" until the
 * slot's TTL (about 35 s) ran out, though the route was healthy and nothing probed it (hunt19). The slot's release is
 * now kept and sent once Redis answers ({@link RedisStallTest} at the store).
 */
class HalfOpenLateReplyTest {
    static final String YAML = """
            orgs:
              - id: acme
                keys: [{ name: app, key: "k-acme" }]
                providers:
                  - { id: alpha, base_url: "${SIM_ALPHA_URL}", api_key: "sk-alpha" }
                routes:
                  - { alias: solo, provider: alpha, model: m }
                groups:
                  solo: { strategy: rr_health, breaker: { max_fails: 1, fail_timeout: 1s } }
            """;

    /**
     * Redis, whose reply to a probe acquisition arrives late once {@link #slowProbeReplies} is set, and which takes
     * no verdict and no release (as in an outage, the connection lost) while {@link #verdictsLost} is.
     */
    static final class SlowReplies extends ForwardingStateStore {
        volatile boolean slowProbeReplies;
        volatile boolean verdictsLost;

        SlowReplies(StateStore inner) {
            super(inner);
        }

        @Override
        public Uni<Boolean> tryAcquireProbe(String routeId, int maxFails, Duration ttl, String owner) {
            Uni<Boolean> call = super.tryAcquireProbe(routeId, maxFails, ttl, owner);
            return slowProbeReplies ? call.onItem().delayIt().by(Duration.ofMillis(800)) : call;
        }

        @Override
        public Uni<BreakerState> recordSuccess(String routeId, int maxFails, Duration failTimeout) {
            return verdictsLost ? lost() : super.recordSuccess(routeId, maxFails, failTimeout);
        }

        @Override
        public Uni<Void> releaseProbe(String routeId, String owner) {
            return verdictsLost ? lost() : super.releaseProbe(routeId, owner);
        }

        private static <T> Uni<T> lost() {
            return Uni.createFrom().failure(new java.io.IOException("Connection reset (the link to Redis is down)"));
        }
    }

    RedisServer redis;
    Vertx vertx;
    Map<String, SimServer> sims;
    RedisStores.Opened redisStore;
    SlowReplies shared;
    ResilientStateStore store;
    GatewayHarness gw;
    final HttpClient http = HttpClient.newHttpClient();

    @BeforeEach
    void start() {
        redis = RedisServer.start();
        vertx = Vertx.vertx();
        sims = GatewayHarness.startSims(vertx, Map.of("alpha", SimConfig.of(3).withApiKey("sk-alpha")
                .withModel("m", ModelScript.defaults().withLength(8).withLatency(ModelScript.Latency.of(5, 0)))));
        redisStore = RedisStores.open(vertx, redis.url());
        shared = new SlowReplies(redisStore.store());
        store = new ResilientStateStore(shared, new MemoryStateStore(Ticker.system()),
                new ResilientStateStore.Settings(Duration.ofMillis(300), 100, 0.5, Duration.ofMillis(200), 1));
        gw = GatewayHarness.start(vertx, YAML, sims, store);
    }

    @AfterEach
    void stop() {
        gw.close();
        redisStore.close();
        sims.values().forEach(SimServer::close);
        vertx.close().toCompletionStage().toCompletableFuture().join();
        redis.close();
    }

    HttpResponse<String> chat(String prompt) throws Exception {
        return http.send(HttpRequest.newBuilder(URI.create(gw.baseUrl() + "/v1/chat/completions"))
                .header("Authorization", "Bearer k-acme").header("Content-Type", "application/json")
                .POST(HttpRequest.BodyPublishers.ofString("{\"model\":\"solo\",\"stream\":false,"
                        + "\"messages\":[{\"role\":\"user\",\"content\":\"" + prompt + "\"}]}")).build(),
                HttpResponse.BodyHandlers.ofString());
    }

    /**
     * A half-open probe that succeeded while Redis took no write: its verdict went to the local store, and the slot
     * stayed taken in Redis, the route refused "half-open probe in flight" until its TTL once Redis was back (found by
     * hunt23). The slot's release under the probe's owner token follows the verdict, kept by the outage guard until
     * Redis answers.
     */
    @Test
    void aHalfOpenProbesVerdictLostInAnOutageStillFreesItsSlot() throws Exception {
        assertEquals(200, chat("warm up").statusCode());
        redisStore.store().recordFailure("acme/solo-alpha", 1, Duration.ofSeconds(1)).await().indefinitely();
        eventually(() -> !redisStore.store().snapshot(java.util.List.of("acme/solo-alpha"), Duration.ofMinutes(1))
                .await().indefinitely().get("acme/solo-alpha").coolingDown(), "the cooldown is over");

        shared.verdictsLost = true;
        HttpResponse<String> probe = chat("probe");
        assertEquals(200, probe.statusCode(), probe.body());
        // the verdict and the release go out once the answer is written: give them time to fail
        Thread.sleep(500);
        shared.verdictsLost = false;   // Redis is back
        eventually(() -> !redisStore.store().snapshot(java.util.List.of("acme/solo-alpha"), Duration.ofMinutes(1))
                .await().indefinitely().get("acme/solo-alpha").probeTaken(),
                "the slot's kept release is sent when Redis answers, well before its 35 s TTL");

        HttpResponse<String> next = chat("after");
        assertEquals(200, next.statusCode(), next.body());
    }

    @Test
    void aHealthyHalfOpenRouteIsNotRefusedForTheSlotTtlAfterOneLateReply() throws Exception {
        assertEquals(200, chat("warm up").statusCode());
        // the route failed once (max_fails 1) and its 1 s cooldown is over: half-open
        redisStore.store().recordFailure("acme/solo-alpha", 1, Duration.ofSeconds(1)).await().indefinitely();
        eventually(() -> !redisStore.store().snapshot(java.util.List.of("acme/solo-alpha"), Duration.ofMinutes(1))
                .await().indefinitely().get("acme/solo-alpha").coolingDown(), "the cooldown is over");

        shared.slowProbeReplies = true;   // one reply comes back after the guard's 300 ms
        HttpResponse<String> first = chat("probe");
        shared.slowProbeReplies = false;  // Redis answers promptly again
        eventually(() -> store.pendingReleases() == 0, "the slot's kept release is sent at a catalog poll");

        HttpResponse<String> next = chat("after");
        assertEquals(200, next.statusCode(), "first: " + first.statusCode() + " " + first.body()
                + "\nnext: " + next.body());
    }
}
