package dev.hedgerow.function;

import dev.hedgerow.state.ResilientStateStore;
import dev.hedgerow.testsupport.AppTestResource;
import dev.hedgerow.testsupport.PackagedApp;
import dev.hedgerow.testsupport.RedisCluster;
import dev.hedgerow.testsupport.RedisServer;
import io.vertx.core.Vertx;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.concurrent.TimeUnit;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * {@code REDIS_URL} and {@code HEDGEROW_REDIS_CLUSTER} that disagree with the server they reach: one node of a Redis
 * Cluster without the flag (its MOVED answers), or a single server with it (cluster support disabled). The server
 * answers a ping and then fails every call, so each instance ran on its own local state, degraded but ready, for good
 * (found by hunt21). The app now stops at start naming both settings; the store says why against real servers, and
 * says nothing when the modes agree.
 */
class RedisModeMismatchTest {
    static final Duration WAIT = Duration.ofSeconds(10);
    static RedisServer single;
    static RedisCluster cluster;
    static Vertx vertx;

    @BeforeAll
    static void start() {
        single = RedisServer.start();
        cluster = RedisCluster.start();
        vertx = Vertx.vertx();
    }

    @AfterAll
    static void stop() {
        if (vertx != null) {
            vertx.close().toCompletionStage().toCompletableFuture().join();
        }
        if (cluster != null) {
            cluster.close();
        }
        if (single != null) {
            single.close();
        }
    }

    static String mismatch(String urls, boolean clusterClient) {
        ResilientStateStore store = HedgerowApp.redisStore(vertx, urls, clusterClient);
        return store.modeMismatch().await().atMost(WAIT);
    }

    @Test
    void theStoreSaysWhenItsModeIsNotTheServers() {
        assertEquals("", mismatch(single.url(), false));
        assertEquals("", mismatch(String.join(",", cluster.urls()), true));
        String clusterNode = mismatch(cluster.urls().get(0), false);
        assertTrue(clusterNode.contains("names a node of a Redis Cluster") && clusterNode.contains(
                "HEDGEROW_REDIS_CLUSTER"), clusterNode);
        String singleServer = mismatch(single.url(), true);
        assertTrue(singleServer.contains("cluster support disabled") && singleServer.contains(
                "HEDGEROW_REDIS_CLUSTER=true"), singleServer);
    }

    @Test
    void theAppStopsAtStartOnAClusterNodeWithoutTheFlag() throws Exception {
        String out = launch(cluster.urls().get(0), "");
        assertTrue(out.contains("Hedgerow stops: REDIS_URL (redis.url) names a node of a Redis Cluster"), out);
    }

    @Test
    void theAppStopsAtStartOnASingleServerWithTheFlag() throws Exception {
        String out = launch(single.url(), "true");
        assertTrue(out.contains("Hedgerow stops: the Redis server has cluster support disabled"), out);
    }

    /** Starts the packaged app on {@code redisUrl} and waits for it to stop; its output. */
    static String launch(String redisUrl, String clusterFlag) throws Exception {
        Path dir = Files.createTempDirectory("mode-mismatch");
        Path catalog = dir.resolve("hedgerow.yaml");
        Files.writeString(catalog, """
                orgs:
                  - id: acme
                    keys: [{ name: app, key: "k-acme" }]
                    providers:
                      - { id: alpha, base_url: "http://127.0.0.1:9/v1", api_key: "sk-alpha" }
                    routes:
                      - { alias: chat, provider: alpha, model: alpha-model }
                """);
        Path log = dir.resolve("app.log");
        ProcessBuilder pb = PackagedApp.process(log);
        pb.environment().put("QUARKUS_HTTP_PORT", Integer.toString(GracefulShutdownTest.freePort()));
        pb.environment().put("HEDGEROW_CONFIG", catalog.toString());
        pb.environment().put("REDIS_URL", redisUrl);
        pb.environment().put("HEDGEROW_REDIS_CLUSTER", clusterFlag);
        pb.environment().put("HEDGEROW_SECRET_KEY", AppTestResource.SECRET_KEY);
        Process app = pb.start();
        try {
            assertTrue(app.waitFor(60, TimeUnit.SECONDS), "the process stops: " + Files.readString(log));
            String out = Files.readString(log);
            assertEquals(1, app.exitValue(), out);
            assertFalse(out.contains("Hedgerow ready"), out);
            assertFalse(out.contains("\tat "), "no stack trace:\n" + out);
            return out;
        } finally {
            app.destroyForcibly();
        }
    }
}
