package dev.hedgerow.state;

import dev.hedgerow.sim.ModelScript;
import dev.hedgerow.sim.SimConfig;
import dev.hedgerow.sim.SimServer;
import dev.hedgerow.sim.SimText;
import dev.hedgerow.testsupport.GatewayHarness;
import dev.hedgerow.testsupport.RedisServer;
import dev.hedgerow.testsupport.Resp;
import dev.hedgerow.testsupport.Sse;
import dev.hedgerow.time.FakeTicker;
import dev.hedgerow.time.Ticker;
import io.vertx.core.Vertx;
import io.vertx.redis.client.RedisClientType;
import io.vertx.redis.client.RedisOptions;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

import java.io.IOException;
import java.io.InputStream;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.function.BooleanSupplier;

import static dev.hedgerow.testsupport.Eventually.eventually;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Two gateway instances on one real Redis, which is stopped mid-traffic and restarted empty: every request is still
 * served (on local state), the stores report degraded, and when Redis returns they rejoin shared state and write back
 * the catalog the restarted Redis forgot.
 */
class RedisOutageTest {
    static final long SEED = 5;
    static final String YAML = """
            orgs:
              - id: acme
                keys: [{ name: app, key: "k-acme" }]
                providers:
                  - { id: alpha, base_url: "${SIM_ALPHA_URL}", api_key: "sk-alpha" }
                  - { id: beta, base_url: "${SIM_BETA_URL}", api_key: "sk-beta" }
                routes:
                  - { alias: chat, provider: alpha, model: alpha-model }
                  - { alias: chat, provider: beta, model: beta-model }
                  - { alias: long, provider: alpha, model: alpha-long }
                groups:
                  chat: { strategy: rr_health }
            """;
    /** Short breaker delay so a restarted Redis is tried again quickly; one success closes the breaker. */
    static final ResilientStateStore.Settings SETTINGS =
            new ResilientStateStore.Settings(Duration.ofMillis(500), 4, 0.5, Duration.ofMillis(200), 1);

    static RedisServer redis;
    static Vertx vertx;
    static Map<String, SimServer> sims;
    static final List<io.vertx.mutiny.redis.client.Redis> clients = new ArrayList<>();
    static ResilientStateStore storeA;
    static ResilientStateStore storeB;
    static GatewayHarness a;
    static GatewayHarness b;
    static final HttpClient http = HttpClient.newHttpClient();

    @BeforeAll
    static void start() {
        redis = RedisServer.start();
        vertx = Vertx.vertx();
        ModelScript fast = ModelScript.defaults().withLength(16).withLatency(ModelScript.Latency.of(5, 0));
        sims = GatewayHarness.startSims(vertx, Map.of(
                "alpha", SimConfig.of(SEED).withApiKey("sk-alpha").withModel("alpha-model", fast)
                        .withModel("alpha-long", ModelScript.defaults().withLength(40)
                                .withLatency(ModelScript.Latency.of(5, 100))),
                "beta", SimConfig.of(SEED).withApiKey("sk-beta").withModel("beta-model", fast)));
        storeA = resilient();
        storeB = resilient();
        a = GatewayHarness.start(vertx, YAML, sims, storeA);
        b = GatewayHarness.start(vertx, YAML, sims, storeB);
    }

    static ResilientStateStore resilient() {
        io.vertx.mutiny.redis.client.Redis client = io.vertx.mutiny.redis.client.Redis.createClient(
                io.vertx.mutiny.core.Vertx.newInstance(vertx), new RedisOptions().addConnectionString(redis.url())
                        .setMaxPoolSize(8).setMaxPoolWaiting(256));
        clients.add(client);
        return new ResilientStateStore(new RedisStateStore(client, RedisClientType.STANDALONE),
                new MemoryStateStore(Ticker.system()), SETTINGS);
    }

    @AfterAll
    static void stop() {
        a.close();
        b.close();
        clients.forEach(io.vertx.mutiny.redis.client.Redis::close);
        sims.values().forEach(SimServer::close);
        vertx.close().toCompletionStage().toCompletableFuture().join();
        redis.close();
    }

    /** Every test leaves Redis running and both instances back on shared state. */
    @AfterEach
    void redisBack() {
        redis.restart();
        awaitShared();
    }

    static String body(String alias, String prompt, boolean stream) {
        return "{\"model\":\"" + alias + "\",\"stream\":" + stream
                + ",\"messages\":[{\"role\":\"user\",\"content\":\"" + prompt + "\"}]}";
    }

    static HttpResponse<String> chat(GatewayHarness gw, String alias, String prompt) {
        try {
            return http.send(HttpRequest.newBuilder(URI.create(gw.baseUrl() + "/v1/chat/completions"))
                    .header("Authorization", "Bearer k-acme").header("Content-Type", "application/json")
                    .POST(HttpRequest.BodyPublishers.ofString(body(alias, prompt, true))).build(),
                    HttpResponse.BodyHandlers.ofString());
        } catch (IOException | InterruptedException e) {
            throw new IllegalStateException(e);
        }
    }

    static void assertServed(GatewayHarness gw, String prompt) {
        HttpResponse<String> r = chat(gw, "chat", prompt);
        assertEquals(200, r.statusCode(), r.body());
        assertEquals(SimText.expected(SEED, prompt, 16), Sse.content(r.body()));
    }

    /** Sends traffic to both instances until the condition holds (or 15 s pass: then the test fails). */
    static void driveUntil(BooleanSupplier condition, String what) {
        long deadline = System.nanoTime() + Duration.ofSeconds(15).toNanos();
        int i = 0;
        while (!condition.getAsBoolean()) {
            assertTrue(System.nanoTime() < deadline, "timed out waiting until " + what);
            assertServed(a, "drive a " + i);
            assertServed(b, "drive b " + i++);
        }
    }

    static void awaitShared() {
        driveUntil(() -> !storeA.degraded() && !storeB.degraded(), "both stores are back on shared state");
    }

    @Test
    void servesEveryRequestOnBothInstancesWhileRedisIsDown() {
        redis.stop();
        for (int i = 0; i < 12; i++) {
            assertServed(a, "outage a " + i);
            assertServed(b, "outage b " + i);
        }
        assertTrue(storeA.degraded(), "instance A reports degraded");
        assertTrue(storeB.degraded(), "instance B reports degraded");
        assertTrue(storeA.fallbacks() > 0);
    }

    @Test
    void aStreamInFlightWhenRedisStopsCompletesByteForByte() throws Exception {
        HttpResponse<InputStream> r = http.send(HttpRequest.newBuilder(URI.create(a.baseUrl() + "/v1/chat/completions"))
                .header("Authorization", "Bearer k-acme").header("Content-Type", "application/json")
                .POST(HttpRequest.BodyPublishers.ofString(body("long", "mid stream", true))).build(),
                HttpResponse.BodyHandlers.ofInputStream());
        assertEquals(200, r.statusCode());
        StringBuilder out = new StringBuilder();
        try (InputStream in = r.body()) {
            byte[] buf = new byte[256];
            int n = in.read(buf);
            out.append(new String(buf, 0, n, StandardCharsets.UTF_8));
            assertFalse(out.toString().contains("[DONE]"), "the stream was still running when Redis stopped");
            redis.stop();
            out.append(new String(in.readAllBytes(), StandardCharsets.UTF_8));
        }
        assertEquals(SimText.expected(SEED, "mid stream", 40), Sse.content(out.toString()));
        assertTrue(Sse.endsWithDone(out.toString()));
    }

    @Test
    void reportsDegradedOnlyAfterRedisStops() {
        assertFalse(storeA.degraded());
        assertEquals("CLOSED", storeA.breakerState());
        redis.stop();
        driveUntil(storeA::degraded, "instance A reports degraded");
        assertTrue(storeA.lastFailure().length() > 0);
    }

    /**
     * Lease releases Redis did not take wait for it, up to a bound; those past it are counted, not silently lost (their
     * leases stay in Redis until their TTL ends). The waiting ones are sent when Redis answers.
     */
    @Test
    void leaseReleasesPastTheBoundAreCountedAsDropped() {
        redis.stop();
        driveUntil(storeA::degraded, "instance A reports degraded");
        long dropped = storeA.droppedReleases();
        int room = ResilientStateStore.MAX_PENDING_RELEASES - storeA.pendingReleases();
        for (int i = 0; i < room + 3; i++) {
            storeA.releaseLease("acme/never", "lease-" + i).await().atMost(Duration.ofSeconds(5));
        }
        assertEquals(ResilientStateStore.MAX_PENDING_RELEASES, storeA.pendingReleases());
        assertEquals(dropped + 3, storeA.droppedReleases());

        redis.restart();
        awaitShared();
        driveUntil(() -> storeA.pendingReleases() == 0, "the waiting releases are sent");
    }

    @Test
    void rejoinsSharedStateWhenRedisReturns() {
        redis.stop();
        driveUntil(() -> storeA.degraded() && storeB.degraded(), "both instances degraded");
        redis.restart();
        awaitShared();
        storeA.putOrgBlob("acme", "rejoin-probe", "from-a", Duration.ofMinutes(1)).await().atMost(Duration.ofSeconds(5));
        assertEquals(Optional.of("from-a"),
                storeB.getOrgBlob("acme", "rejoin-probe").await().atMost(Duration.ofSeconds(5)));
    }

    @Test
    void aProbeSlotTakenLocallyDuringTheOutageIsReleasedThereAfterRedisReturns() {
        FakeTicker time = new FakeTicker();
        MemoryStateStore local = new MemoryStateStore(time);
        io.vertx.mutiny.redis.client.Redis client = io.vertx.mutiny.redis.client.Redis.createClient(
                io.vertx.mutiny.core.Vertx.newInstance(vertx), new RedisOptions().addConnectionString(redis.url())
                        .setMaxPoolSize(2).setMaxPoolWaiting(16));
        clients.add(client);
        ResilientStateStore store = new ResilientStateStore(new RedisStateStore(client, RedisClientType.STANDALONE),
                local, SETTINGS);
        String route = "acme/outage-probe";
        local.recordFailure(route, 1, Duration.ofSeconds(30)).await().atMost(Duration.ofSeconds(5));
        time.advance(Duration.ofSeconds(30)); // the local cooldown is over: half-open there
        redis.stop();
        assertTrue(store.tryAcquireProbe(route, 1, Duration.ofSeconds(30), "owner-a").await()
                .atMost(Duration.ofSeconds(5)), "taken on the local store while Redis is down");
        redis.restart();
        eventually(() -> !store.degraded() && store.ping().await().atMost(Duration.ofSeconds(5)),
                "shared state is back");
        store.releaseProbe(route, "owner-a").await().atMost(Duration.ofSeconds(5));
        assertFalse(store.degraded(), "precondition: the release went to Redis first");
        assertFalse(local.snapshot(List.of(route), Duration.ofMinutes(1)).await().atMost(Duration.ofSeconds(5))
                .get(route).probeTaken(), "no local slot left to hold a later outage's probe");
    }

    /**
     * An admin edit made right after Redis came back empty, before any catalog poll wrote the org back, finds its
     * org (it was 404 'Unknown organization' until the next poll).
     */
    @Test
    void anEditRightAfterRedisForgotTheCatalogFindsItsOrg() throws IOException {
        Resp.command(redis.port(), "FLUSHALL");   // as a restart without persistence leaves it, with no outage seen
        var edited = a.core().catalog().update("acme", org -> org).await().atMost(Duration.ofSeconds(5));
        assertEquals("acme", edited.id());
        assertTrue(Resp.command(redis.port(), "SMEMBERS", StateKeys.ORGS).contains("acme"), "written back");
    }

    /**
     * A route suspended through one instance and seen by the other in a snapshot stays suspended on both when Redis
     * loses its data (a restart without persistence brought it back into service: found by hunt7), and the flag is
     * written back to Redis; a flag written since is not overwritten.
     */
    @Test
    void aFlagRedisLostIsKeptAndWrittenBackByAnInstanceThatSawIt() throws IOException {
        String route = "acme/flags-only";   // no traffic here: its only blob is the flag
        String key = StateKeys.routeBlob(route, RouteFlags.STANDING);
        storeA.putRouteBlob(route, RouteFlags.STANDING, "suspended", null).await().atMost(Duration.ofSeconds(5));
        assertEquals(Map.of(RouteFlags.STANDING, "suspended"), snapshotBlobs(storeB, route), "B sees it");
        long before = storeB.restoredFlags();

        Resp.command(redis.port(), "FLUSHALL");   // as a restart without persistence leaves it, with no outage seen

        assertEquals(Map.of(RouteFlags.STANDING, "suspended"), snapshotBlobs(storeB, route),
                "still in force on B, which only saw it");
        eventually(() -> {
            try {
                return "suspended".equals(Resp.command(redis.port(), "GET", key));
            } catch (IOException e) {
                return false;
            }
        }, "written back to Redis");
        // Redis shows the value before B's client has read the script's answer: wait for B to count it
        eventually(() -> storeB.restoredFlags() > before, "counted by B");
        assertEquals(before + 1, storeB.restoredFlags());
        assertEquals(Map.of(RouteFlags.STANDING, "suspended"), snapshotBlobs(storeA, route));

        Resp.command(redis.port(), "FLUSHALL");
        storeA.putRouteBlob(route, RouteFlags.STANDING, "good", null).await().atMost(Duration.ofSeconds(5));
        assertEquals(Map.of(RouteFlags.STANDING, "good"), snapshotBlobs(storeB, route),
                "a flag written since the loss is not written over");
        assertEquals("good", Resp.command(redis.port(), "GET", key));
    }

    /**
     * A route failing the prober's verification stays out while Redis is down: the verdict lives in Redis (with a TTL)
     * and the local store never had it, so during an outage the route served the wrong model to every client (found
     * by hunt14). Each instance holds the verdict the shared store last showed it.
     */
    @Test
    void aRouteFailingVerificationStaysOutWhileRedisIsDown() {
        storeA.putRouteBlob("acme/chat-alpha", RouteFlags.PROBER_VERIFICATION, "fail:served model is not alpha-model",
                Duration.ofMinutes(10)).await().atMost(Duration.ofSeconds(5));
        for (GatewayHarness gw : List.of(a, b)) {
            for (int i = 0; i < 4; i++) {   // rotation would give chat-alpha one of every two
                assertEquals("chat-beta", routeOf(chat(gw, "chat", "verified " + i)), "excluded on shared state");
            }
        }
        redis.stop();
        driveUntil(() -> storeA.degraded() && storeB.degraded(), "both instances are on local state");
        for (GatewayHarness gw : List.of(a, b)) {
            for (int i = 0; i < 6; i++) {
                assertEquals("chat-beta", routeOf(chat(gw, "chat", "outage " + i)), "still excluded in the outage");
            }
        }
    }

    static String routeOf(HttpResponse<String> r) {
        assertEquals(200, r.statusCode(), r.body());
        return r.headers().firstValue("x-hedgerow-route").orElseThrow();
    }

    /** The route's blobs but the flags' stamps (StateStoreContract pins those). */
    static Map<String, String> snapshotBlobs(ResilientStateStore store, String route) {
        Map<String, String> blobs = new java.util.HashMap<>(store.snapshot(List.of(route), Duration.ofMinutes(1))
                .await().atMost(Duration.ofSeconds(5)).get(route).blobs());
        RouteFlags.NAMES.forEach(name -> blobs.remove(RouteFlags.stampName(name)));
        return blobs;
    }

    @Test
    void writesBackTheCatalogARestartedRedisForgot() throws IOException {
        redis.stop();
        driveUntil(() -> storeA.degraded() && storeB.degraded(), "both instances degraded");
        redis.restart(); // no persistence: the restarted server holds no catalog
        awaitShared();
        driveUntil(() -> {
            try {
                return Resp.command(redis.port(), "SMEMBERS", StateKeys.ORGS).contains("acme");
            } catch (IOException e) {
                return false;
            }
        }, "the catalog is back in Redis");
        assertServed(a, "after reseed a");
        assertServed(b, "after reseed b");
        assertEquals(1, storeB.catalogVersions().await().atMost(Duration.ofSeconds(5)).size());
    }
}
