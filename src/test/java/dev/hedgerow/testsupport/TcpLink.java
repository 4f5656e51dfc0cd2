package dev.hedgerow.testsupport;

import io.vertx.core.Vertx;
import io.vertx.core.net.NetClient;
import io.vertx.core.net.NetServer;
import io.vertx.core.net.NetSocket;

import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;

/**
 * A TCP relay on a free loopback port in front of another port, which a test can cut and restore: a network
 * partition between one client and a server that keeps running (and keeps its data), unlike stopping the server.
 * While cut, open connections are closed and new ones are closed as soon as they are accepted, so nothing a client
 * sends meanwhile reaches the server. Thread-safe.
 */
public final class TcpLink implements AutoCloseable {
    private final NetServer server;
    private final NetClient client;
    private final Set<NetSocket> open = ConcurrentHashMap.newKeySet();
    private volatile boolean cut;

    private TcpLink(Vertx vertx, int targetPort) {
        this.client = vertx.createNetClient();
        this.server = vertx.createNetServer().connectHandler(front -> {
            if (cut) {
                front.close();
                return;
            }
            front.pause();
            client.connect(targetPort, "127.0.0.1").onComplete(ar -> {
                if (ar.failed() || cut) {
                    front.close();
                    if (ar.succeeded()) {
                        ar.result().close();
                    }
                    return;
                }
                NetSocket back = ar.result();
                open.add(front);
                open.add(back);
                front.closeHandler(v -> {
                    open.remove(front);
                    back.close();
                });
                back.closeHandler(v -> {
                    open.remove(back);
                    front.close();
                });
                front.handler(back::write);
                back.handler(front::write);
                front.resume();
            });
        });
        server.listen(0, "127.0.0.1").toCompletionStage().toCompletableFuture().join();
    }

    /** A relay to {@code 127.0.0.1:targetPort}, listening on a free port. */
    public static TcpLink to(Vertx vertx, int targetPort) {
        return new TcpLink(vertx, targetPort);
    }

    public int port() {
        return server.actualPort();
    }

    /** Connection string for a Redis client going through this relay. */
    public String redisUrl() {
        return "redis://127.0.0.1:" + port();
    }

    /** Partitions: closes every relayed connection and refuses new ones until {@link #restore()}. */
    public void cut() {
        cut = true;
        open.forEach(NetSocket::close);
    }

    public void restore() {
        cut = false;
    }

    @Override
    public void close() {
        cut();
        server.close();
        client.close();
    }
}
