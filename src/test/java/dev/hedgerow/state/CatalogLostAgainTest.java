package dev.hedgerow.state;

import dev.hedgerow.sim.ModelScript;
import dev.hedgerow.sim.SimConfig;
import dev.hedgerow.sim.SimServer;
import dev.hedgerow.sim.SimText;
import dev.hedgerow.testsupport.GatewayHarness;
import dev.hedgerow.testsupport.RedisServer;
import dev.hedgerow.testsupport.Resp;
import dev.hedgerow.testsupport.Sse;
import dev.hedgerow.time.Ticker;
import io.smallrye.mutiny.Uni;
import io.vertx.core.Vertx;
import io.vertx.redis.client.RedisClientType;
import io.vertx.redis.client.RedisOptions;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.time.Duration;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.atomic.AtomicInteger;

import static dev.hedgerow.testsupport.Eventually.eventually;
import static org.junit.jupiter.api.Assertions.assertEquals;

/**
 * A Redis that loses its data again right after an instance wrote a forgotten org back (a second restart, a FLUSHALL,
 * eviction) does not make the instance drop the org: the catalog poll that wrote it back read the store again, found
 * it empty, and answered without the org, so its keys answered 401 until the next poll (CI failed RedisOutageTest on
 * this: its previous test's FLUSHALL came between one instance's write-back and its read).
 */
class CatalogLostAgainTest {
    static final long SEED = 9;
    static final String YAML = """
            orgs:
              - id: acme
                keys: [{ name: app, key: "k-acme" }]
                providers:
                  - { id: alpha, base_url: "${SIM_ALPHA_URL}", api_key: "sk-alpha" }
                routes:
                  - { alias: chat, provider: alpha, model: alpha-model }
            """;

    static RedisServer redis;
    static Vertx vertx;
    static Map<String, SimServer> sims;
    static io.vertx.mutiny.redis.client.Redis client;
    static Forgetful forgetful;
    static GatewayHarness gw;
    static final HttpClient http = HttpClient.newHttpClient();

    /** The real Redis store, whose data is flushed right after each write-back of a forgotten org while armed. */
    static final class Forgetful extends ForwardingStateStore {
        volatile boolean armed;
        final AtomicInteger flushed = new AtomicInteger();

        Forgetful(StateStore inner) {
            super(inner);
        }

        @Override
        public Uni<Optional<Long>> putOrgCatalog(String orgId, VersionedDoc doc, long expectedVersion) {
            return super.putOrgCatalog(orgId, doc, expectedVersion).invoke(written -> {
                if (armed && expectedVersion == 0) {
                    flushAll();
                    flushed.incrementAndGet();
                }
            });
        }
    }

    static void flushAll() {
        try {
            Resp.command(redis.port(), "FLUSHALL");
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    @BeforeAll
    static void start() {
        redis = RedisServer.start();
        vertx = Vertx.vertx();
        sims = GatewayHarness.startSims(vertx, Map.of("alpha", SimConfig.of(SEED).withApiKey("sk-alpha")
                .withModel("alpha-model", ModelScript.defaults().withLength(8)
                        .withLatency(ModelScript.Latency.of(2, 0)))));
        client = io.vertx.mutiny.redis.client.Redis.createClient(io.vertx.mutiny.core.Vertx.newInstance(vertx),
                new RedisOptions().addConnectionString(redis.url()).setMaxPoolSize(8).setMaxPoolWaiting(256));
        forgetful = new Forgetful(new RedisStateStore(client, RedisClientType.STANDALONE));
        ResilientStateStore store = new ResilientStateStore(forgetful, new MemoryStateStore(Ticker.system()),
                ResilientStateStore.Settings.DEFAULTS);
        gw = GatewayHarness.start(vertx, YAML, sims, store);
    }

    @AfterAll
    static void stop() {
        gw.close();
        client.close();
        sims.values().forEach(SimServer::close);
        vertx.close().toCompletionStage().toCompletableFuture().join();
        redis.close();
    }

    static HttpResponse<String> chat(String prompt) {
        try {
            return http.send(HttpRequest.newBuilder(URI.create(gw.baseUrl() + "/v1/chat/completions"))
                    .header("Authorization", "Bearer k-acme").header("Content-Type", "application/json")
                    .POST(HttpRequest.BodyPublishers.ofString("{\"model\":\"chat\",\"stream\":true,\"messages\":"
                            + "[{\"role\":\"user\",\"content\":\"" + prompt + "\"}]}")).build(),
                    HttpResponse.BodyHandlers.ofString());
        } catch (IOException | InterruptedException e) {
            throw new IllegalStateException(e);
        }
    }

    @Test
    void anOrgWrittenBackIsKeptWhenTheStoreLosesItAgain() {
        assertEquals(200, chat("before").statusCode());
        forgetful.armed = true;
        flushAll();
        // the harness polls the catalog every 200 ms: each poll writes the org back and finds it gone again
        eventually(() -> forgetful.flushed.get() >= 3, "three write-backs lost at once");
        for (int i = 0; i < 3; i++) {
            HttpResponse<String> r = chat("lost again " + i);
            assertEquals(200, r.statusCode(), r.body());
            assertEquals(SimText.expected(SEED, "lost again " + i, 8), Sse.content(r.body()));
        }
        forgetful.armed = false;
        eventually(() -> {
            try {
                return Resp.command(redis.port(), "SMEMBERS", StateKeys.ORGS).contains("acme");
            } catch (IOException e) {
                return false;
            }
        }, "written back once the store keeps it");
        assertEquals(200, chat("after").statusCode());
    }
}
