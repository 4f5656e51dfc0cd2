package dev.hedgerow.upstream;

import io.vertx.core.Context;
import io.vertx.core.Vertx;
import io.vertx.core.VertxOptions;
import io.vertx.core.http.HttpServer;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

import java.io.ByteArrayOutputStream;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertSame;

/**
 * Each event loop sends on connections of its own, over real HTTP: a server that answers with the client port
 * of the connection it was asked on shows which connection each request used. Requests from one loop reuse one
 * connection; a request from another loop, sent after the first loop's connection went idle (so a shared
 * most-recently-used pool would have handed that one out), goes on a different connection; and the answer is
 * handled on the sending loop's own thread.
 */
class VertxUpstreamClientLoopTest {
    static Vertx vertx;
    static HttpServer server;

    @BeforeAll
    static void start() throws Exception {
        vertx = Vertx.vertx(new VertxOptions().setEventLoopPoolSize(2));
        server = vertx.createHttpServer()
                .requestHandler(req -> req.body().onSuccess(b -> req.response()
                        .end(Integer.toString(req.remoteAddress().port()))))
                .listen(0, "127.0.0.1").toCompletionStage().toCompletableFuture().get(10, TimeUnit.SECONDS);
    }

    @AfterAll
    static void stop() {
        vertx.close().toCompletionStage().toCompletableFuture().join();
    }

    record Answer(String clientPort, Thread handledOn) {
    }

    /** Sends one request from {@code loop} and returns the client port the server saw. */
    static Answer sendFrom(Context loop, VertxUpstreamClient client) throws Exception {
        CompletableFuture<Answer> out = new CompletableFuture<>();
        loop.runOnContext(v -> client.send(UpstreamRequest.post("http://127.0.0.1:" + server.actualPort(), "/chat",
                null, false, "{}".getBytes(StandardCharsets.UTF_8), Duration.ofSeconds(5)), new UpstreamHandler() {
                    final ByteArrayOutputStream body = new ByteArrayOutputStream();

                    @Override
                    public void onHead(int status, Map<String, String> headers) {
                    }

                    @Override
                    public void onData(byte[] bytes) {
                        body.writeBytes(bytes);
                    }

                    @Override
                    public void onEnd() {
                        out.complete(new Answer(body.toString(StandardCharsets.UTF_8), Thread.currentThread()));
                    }

                    @Override
                    public void onError(TransportFailure failure) {
                        out.completeExceptionally(new AssertionError(failure.toString()));
                    }
                }));
        return out.get(10, TimeUnit.SECONDS);
    }

    /** A fresh event-loop context (Vert.x keeps one per outside thread, taking the loops in turn). */
    static Context contextOfNewThread() throws Exception {
        CompletableFuture<Context> c = new CompletableFuture<>();
        new Thread(() -> c.complete(vertx.getOrCreateContext())).start();
        return c.get(10, TimeUnit.SECONDS);
    }

    static Thread threadOf(Context loop) throws Exception {
        CompletableFuture<Thread> t = new CompletableFuture<>();
        loop.runOnContext(v -> t.complete(Thread.currentThread()));
        return t.get(10, TimeUnit.SECONDS);
    }

    @Test
    void eachEventLoopSendsOnItsOwnConnection() throws Exception {
        Context first = contextOfNewThread();
        Context second = contextOfNewThread();   // the next of the two event loops
        Thread firstThread = threadOf(first);
        Thread secondThread = threadOf(second);
        assertNotEquals(firstThread, secondThread, "two contexts on two event loops");
        VertxUpstreamClient client = new VertxUpstreamClient(vertx, 4);
        try {
            Answer a1 = sendFrom(first, client);
            Answer a2 = sendFrom(first, client);
            Answer b1 = sendFrom(second, client);
            Answer b2 = sendFrom(second, client);
            assertEquals(a1.clientPort(), a2.clientPort(), "one loop keeps reusing its connection");
            assertEquals(b1.clientPort(), b2.clientPort(), "one loop keeps reusing its connection");
            assertNotEquals(a1.clientPort(), b1.clientPort(), "the other loop's idle connection is not borrowed");
            assertSame(firstThread, a2.handledOn());
            assertSame(secondThread, b2.handledOn());
        } finally {
            client.close();
        }
    }
}
