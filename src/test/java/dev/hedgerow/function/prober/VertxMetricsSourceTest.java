package dev.hedgerow.function.prober;

import io.vertx.core.Vertx;
import io.vertx.core.buffer.Buffer;
import io.vertx.core.http.HttpServer;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

import java.time.Duration;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** The metrics fetch over real HTTP: a normal page is read, an endless one is cut at the cap instead of buffered. */
class VertxMetricsSourceTest {
    static Vertx vertx;
    static HttpServer server;
    static VertxMetricsSource source;
    static final java.util.concurrent.atomic.AtomicInteger requests = new java.util.concurrent.atomic.AtomicInteger();

    @BeforeAll
    static void start() {
        vertx = Vertx.vertx();
        Buffer kib = Buffer.buffer("x".repeat(1024));
        server = vertx.createHttpServer().requestHandler(req -> {
            requests.incrementAndGet();
            if (req.path().equals("/small")) {
                req.response().end("vllm:num_requests_waiting 3\n");
                return;
            }
            // an endless page: 1 KiB chunks until the client goes away
            req.response().setChunked(true);
            vertx.setPeriodic(1, id -> {
                if (req.response().closed() || req.response().ended()) {
                    vertx.cancelTimer(id);
                    return;
                }
                for (int i = 0; i < 64; i++) {
                    req.response().write(kib);
                }
            });
        }).listen(0, "127.0.0.1").toCompletionStage().toCompletableFuture().join();
        source = new VertxMetricsSource(vertx);
    }

    @AfterAll
    static void stop() {
        source.close();
        vertx.close().toCompletionStage().toCompletableFuture().join();
    }

    static String url(String path) {
        return "http://127.0.0.1:" + server.actualPort() + path;
    }

    @Test
    void aPageUnderTheCapIsRead() {
        assertEquals("vllm:num_requests_waiting 3\n",
                source.fetch(url("/small"), Duration.ofSeconds(5)).await().atMost(Duration.ofSeconds(10)));
    }

    @Test
    void anEndlessPageIsCutAtTheCap() {
        RuntimeException e = assertThrows(RuntimeException.class,
                () -> source.fetch(url("/endless"), Duration.ofSeconds(30)).await().atMost(Duration.ofSeconds(20)));
        assertTrue(String.valueOf(e.getMessage()).contains("larger than"), String.valueOf(e));
    }

    /** A peer the rule refuses (production's: a cloud metadata address) is sent nothing: the scrape fails. */
    @Test
    void aRefusedPeerIsSentNothing() {
        VertxMetricsSource refusing = new VertxMetricsSource(vertx, ip -> ip.equals("127.0.0.1") ? "a test's rule"
                : null);
        try {
            int before = requests.get();
            RuntimeException e = assertThrows(RuntimeException.class, () -> refusing.fetch(url("/small"),
                    Duration.ofSeconds(5)).await().atMost(Duration.ofSeconds(10)));
            assertTrue(String.valueOf(e.getMessage()).contains("refused to scrape"), String.valueOf(e));
            assertEquals(before, requests.get(), "nothing reached the server");
        } finally {
            refusing.close();
        }
    }
}
