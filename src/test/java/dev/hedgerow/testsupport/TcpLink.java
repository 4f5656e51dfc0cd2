package dev.hedgerow.testsupport;

import io.vertx.core.Vertx;
import io.vertx.core.buffer.Buffer;
import io.vertx.core.net.NetClient;
import io.vertx.core.net.NetServer;
import io.vertx.core.net.NetSocket;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;

/**
 * A TCP relay on a free loopback port in front of another port, which a test can break in three ways while the
 * server keeps running (and keeps its data), unlike stopping the server:
 * <ul>
 *   <li>{@link #cut()} / {@link #restore()}: a network partition between one client and the server. While cut, open
 *   connections are closed and new ones are closed as soon as they are accepted, so nothing a client sends meanwhile
 *   reaches the server.</li>
 *   <li>{@link #freeze()} / {@link #thaw()}: a blackhole that leaves the sockets open. Every connection open when it
 *   starts, and every one accepted until {@link #thaw()}, is silent for good: what either side sends is dropped, and
 *   neither side is told (as a firewall or NAT that lost the connections' state leaves them). After {@link #thaw()}
 *   new connections are relayed again; the frozen ones stay silent until their client closes them.</li>
 *   <li>{@link #hold()} / {@link #release()}: a stall. What clients send is kept in the relay instead of forwarded,
 *   on open and new connections alike, and forwarded in order at {@link #release()}: the server runs it late.</li>
 *   <li>{@link #slowFirstConnection(Duration)}: the next connection accepted reaches the server only after a while,
 *   as a client's first connection does when its handshake is slow (a cold JVM's first TLS handshake, a resolver
 *   waking up); later ones go straight through.</li>
 * </ul>
 * Thread-safe.
 */
public final class TcpLink implements AutoCloseable {
    private final NetServer server;
    private final NetClient client;
    private final Set<NetSocket> open = ConcurrentHashMap.newKeySet();
    private final Set<Relay> relays = ConcurrentHashMap.newKeySet();
    private volatile boolean cut;
    private volatile boolean frozen;
    private volatile boolean holding;
    private final java.util.concurrent.atomic.AtomicInteger accepted = new java.util.concurrent.atomic.AtomicInteger();
    private final java.util.concurrent.atomic.AtomicReference<Duration> firstDelay =
            new java.util.concurrent.atomic.AtomicReference<>();
    private final Vertx vertx;

    /** One relayed connection: the client's socket and the server's. */
    private final class Relay {
        final NetSocket front;
        final NetSocket back;
        /** Frozen: everything either way is dropped. */
        volatile boolean dead;
        /** Held: what the client sends is kept here. Guarded by this. */
        boolean held;
        final List<Buffer> kept = new ArrayList<>();

        Relay(NetSocket front, NetSocket back) {
            this.front = front;
            this.back = back;
        }

        synchronized void fromClient(Buffer b) {
            if (dead) {
                return;
            }
            if (held) {
                kept.add(b);
                return;
            }
            back.write(b);
        }

        void fromServer(Buffer b) {
            if (!dead) {
                front.write(b);
            }
        }

        synchronized void hold() {
            held = true;
        }

        synchronized void release() {
            held = false;
            if (!dead) {
                kept.forEach(back::write);
            }
            kept.clear();
        }
    }

    private TcpLink(Vertx vertx, int targetPort) {
        this.vertx = vertx;
        this.client = vertx.createNetClient();
        this.server = vertx.createNetServer().connectHandler(front -> {
            accepted.incrementAndGet();
            if (cut) {
                front.close();
                return;
            }
            if (frozen) {
                // accepted, then never answered: the client's handshake goes nowhere
                open.add(front);
                front.handler(b -> { });
                front.closeHandler(v -> open.remove(front));
                return;
            }
            front.pause();
            Duration delay = firstDelay.getAndSet(null);
            if (delay != null) {
                vertx.setTimer(Math.max(1, delay.toMillis()), id -> relay(front, targetPort));
            } else {
                relay(front, targetPort);
            }
        });
        server.listen(0, "127.0.0.1").toCompletionStage().toCompletableFuture().join();
    }

    /** Connects to the server for the accepted (paused) {@code front} and relays between the two. */
    private void relay(NetSocket front, int targetPort) {
        client.connect(targetPort, "127.0.0.1").onComplete(ar -> {
            if (ar.failed() || cut) {
                front.close();
                if (ar.succeeded()) {
                    ar.result().close();
                }
                return;
            }
            NetSocket back = ar.result();
            Relay relay = new Relay(front, back);
            relay.dead = frozen;
            if (holding) {
                relay.hold();
            }
            relays.add(relay);
            open.add(front);
            open.add(back);
            front.closeHandler(v -> {
                open.remove(front);
                relays.remove(relay);
                back.close();
            });
            back.closeHandler(v -> {
                open.remove(back);
                relays.remove(relay);
                front.close();
            });
            front.handler(relay::fromClient);
            back.handler(relay::fromServer);
            front.resume();
        });
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

    /**
     * Blackholes every relayed connection open now, for good, and every one accepted until {@link #thaw()}: their
     * sockets stay open and nothing more crosses them either way.
     */
    public void freeze() {
        frozen = true;
        relays.forEach(r -> r.dead = true);
    }

    /** New connections are relayed again; those frozen stay silent. */
    public void thaw() {
        frozen = false;
    }

    /** Keeps what clients send, on open connections and new ones, until {@link #release()}. */
    public void hold() {
        holding = true;
        relays.forEach(Relay::hold);
    }

    /** How many connections the relay accepted so far. */
    public int accepted() {
        return accepted.get();
    }

    /** The next connection accepted reaches the server {@code delay} late; the ones after it at once. */
    public void slowFirstConnection(Duration delay) {
        firstDelay.set(delay);
    }

    /** Forwards what was kept, in order, and relays as usual again. */
    public void release() {
        holding = false;
        relays.forEach(Relay::release);
    }

    @Override
    public void close() {
        cut();
        server.close();
        client.close();
    }
}
