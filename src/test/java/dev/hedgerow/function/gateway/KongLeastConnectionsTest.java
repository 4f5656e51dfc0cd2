package dev.hedgerow.function.gateway;

import dev.hedgerow.sim.ModelScript;
import dev.hedgerow.sim.SimConfig;
import dev.hedgerow.sim.SimServer;
import dev.hedgerow.state.RedisStateStore;
import dev.hedgerow.state.RouteSnapshot;
import dev.hedgerow.testsupport.GatewayHarness;
import dev.hedgerow.testsupport.RedisServer;
import io.vertx.core.Vertx;
import io.vertx.mutiny.redis.client.Redis;
import io.vertx.redis.client.RedisClientType;
import io.vertx.redis.client.RedisOptions;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;

import static dev.hedgerow.testsupport.Eventually.eventually;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Kong's {@code least_connections} across two gateway instances sharing one private Redis: in-flight requests are
 * counted per route fleet-wide (leases in the store), and capacity comes from the weight.
 */
class KongLeastConnectionsTest {
    static final String YAML = """
            orgs:
              - id: acme
                keys: [{ name: app, key: "k-acme" }]
                providers:
                  - { id: sim, base_url: "${SIM_SIM_URL}", api_key: "sk-sim" }
                routes:
                  - { id: lc-big, alias: lc, provider: sim, model: m-big, weight: 2 }
                  - { id: lc-small, alias: lc, provider: sim, model: m-small, weight: 1 }
                groups:
                  lc: { strategy: least_connections, hedging: false }
            """;

    static RedisServer redisServer;
    static Vertx vertx;
    static List<Redis> clients = new ArrayList<>();
    static Map<String, SimServer> sims;
    static GatewayHarness one;
    static GatewayHarness two;
    /** A third client of the shared Redis: what the fleet's leases say, read as each instance's router reads it. */
    static RedisStateStore shared;

    @BeforeAll
    static void start() {
        redisServer = RedisServer.start();
        vertx = Vertx.vertx();
        // streams of 80 s (a token a second), far longer than sending the 24 requests below takes on any host: every
        // one is still in flight when the split is read, and the test hangs up on them afterwards
        ModelScript longStream = ModelScript.defaults().withLength(80).withLatency(ModelScript.Latency.of(0, 1));
        sims = GatewayHarness.startSims(vertx, Map.of("sim", SimConfig.of(5).withApiKey("sk-sim")
                .withModel("m-big", longStream).withModel("m-small", longStream)));
        one = GatewayHarness.start(vertx, YAML, sims, store());
        two = GatewayHarness.start(vertx, YAML, sims, store());
        shared = store();
    }

    private static RedisStateStore store() {
        Redis redis = Redis.createClient(io.vertx.mutiny.core.Vertx.newInstance(vertx),
                new RedisOptions().setConnectionString(redisServer.url()).setMaxPoolSize(8).setMaxPoolWaiting(256));
        clients.add(redis);
        return new RedisStateStore(redis, RedisClientType.STANDALONE);
    }

    @AfterAll
    static void stop() {
        if (one != null) {
            one.close();
        }
        if (two != null) {
            two.close();
        }
        clients.forEach(Redis::close);
        if (sims != null) {
            sims.values().forEach(SimServer::close);
        }
        if (vertx != null) {
            vertx.close().toCompletionStage().toCompletableFuture().join();
        }
        if (redisServer != null) {
            redisServer.close();
        }
    }

    @Test
    void inFlightRequestsSplitByWeightAcrossTwoInstances() throws Exception {
        HttpClient client = HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(5)).build();
        SimServer sim = sims.get("sim");
        List<CompletableFuture<HttpResponse<InputStream>>> pending = new ArrayList<>();
        int total = 24;
        try {
            for (int i = 0; i < total; i++) {
                GatewayHarness gw = i % 2 == 0 ? one : two;
                HttpRequest req = HttpRequest.newBuilder(URI.create(gw.baseUrl() + "/v1/chat/completions"))
                        .header("authorization", "Bearer k-acme").header("content-type", "application/json")
                        .POST(HttpRequest.BodyPublishers.ofString("{\"model\":\"lc\",\"stream\":true,\"messages\":"
                                + "[{\"role\":\"user\",\"content\":\"connection " + i + "\"}]}")).build();
                pending.add(client.sendAsync(req, HttpResponse.BodyHandlers.ofInputStream()));
                // one request at a time reaches an upstream and has its lease stored, so each sees all before it
                int sent = i + 1;
                eventually(() -> received(sim) >= sent, "request " + sent + " reaches the upstream");
                eventually(() -> leases() == sent, "request " + sent + "'s lease is stored");
            }
            int big = sim.stats("m-big").inFlight();
            int small = sim.stats("m-small").inFlight();
            System.out.printf("[kong] least_connections, weights 2:1, %d in flight over two instances: "
                    + "lc-big=%d (%.1f%%) lc-small=%d (%.1f%%)%n", total, big, 100.0 * big / total, small,
                    100.0 * small / total);
            for (CompletableFuture<HttpResponse<InputStream>> f : pending) {
                assertEquals(200, f.get(30, TimeUnit.SECONDS).statusCode());
            }
            assertEquals(total, big + small, "every request was still in flight when counted");
            // expected 16 / 8 (equal in-flight per unit of weight); tolerance +-2
            assertTrue(Math.abs(big - 16) <= 2, "big=" + big + " small=" + small);
        } finally {
            // hang up on the 80 s streams
            for (CompletableFuture<HttpResponse<InputStream>> f : pending) {
                f.thenAccept(r -> {
                    try {
                        r.body().close();
                    } catch (IOException e) {
                        throw new UncheckedIOException(e);
                    }
                });
            }
        }
    }

    /** Live leases of both routes, as stored in the shared Redis. */
    private static int leases() {
        List<String> ids = List.of("acme/lc-big", "acme/lc-small");
        return shared.snapshot(ids, Duration.ofMinutes(1)).await().atMost(Duration.ofSeconds(5)).values().stream()
                .mapToInt(RouteSnapshot::inflight).sum();
    }

    private static long received(SimServer sim) {
        return sim.stats("m-big").received() + sim.stats("m-small").received();
    }
}
