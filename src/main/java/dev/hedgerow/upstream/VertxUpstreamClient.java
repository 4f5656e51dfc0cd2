package dev.hedgerow.upstream;

import io.vertx.core.Context;
import io.vertx.core.Vertx;
import io.vertx.core.VertxException;
import io.vertx.core.buffer.Buffer;
import io.vertx.core.http.HttpClient;
import io.vertx.core.http.HttpClientRequest;
import io.vertx.core.http.HttpClientResponse;
import io.vertx.core.http.HttpMethod;
import io.vertx.core.http.HttpClientOptions;
import io.vertx.core.http.PoolOptions;
import io.vertx.core.http.RequestOptions;
import io.vertx.core.net.SocketAddress;

import java.net.MalformedURLException;
import java.net.URL;
import java.util.HashMap;
import java.util.Locale;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.function.Function;

/**
 * {@link UpstreamClient} on the Vert.x HTTP client: non-blocking, keep-alive connection pools per host, bodies
 * streamed to the handler as they arrive (no buffering). A cancel resets the request, which closes an HTTP/1.1
 * connection so the provider stops generating. Before anything is sent, the connection's resolved peer address is
 * checked against {@code blockedPeer} (the gateway blocks cloud metadata addresses): a host name that resolves, or
 * is re-pointed, to one fails as a connect error with nothing sent. Thread-safe.
 *
 * <p>One connection pool per event loop: a request sent from an event-loop thread goes out on a connection owned
 * by that same loop, so writing it and reading its answer never hop to another thread. (Vert.x's shared pool
 * hands out the most recently used connection whatever loop owns it: at low concurrency one connection, on one
 * loop, then served the requests of every loop, each paying two cross-thread wake-ups.) Calls from any other
 * thread use a pool of their own.
 */
public final class VertxUpstreamClient implements UpstreamClient {
    private static final System.Logger LOG = System.getLogger("dev.hedgerow.upstream");
    private final Vertx vertx;
    private final HttpClientOptions clientOptions;
    private final PoolOptions poolOptions;
    /** The pool of calls made off the event loops. */
    private final HttpClient client;
    /** Each event-loop thread's own pool, created on its first call. */
    private final Map<Thread, HttpClient> loopClients = new ConcurrentHashMap<>();
    private final Function<String, String> blockedPeer;
    private static final int MAX_URLS = 1024;
    private final Map<String, URL> urls = new ConcurrentHashMap<>();

    public VertxUpstreamClient(Vertx vertx, int maxConnectionsPerHost) {
        this(vertx, maxConnectionsPerHost, ip -> null);
    }

    /**
     * @param maxConnectionsPerHost the most connections to one host from one event loop (and from the off-loop pool)
     * @param blockedPeer why a resolved peer IP address (as {@code SocketAddress.hostAddress()}) must not be
     *                    sent to, or null when it may
     */
    public VertxUpstreamClient(Vertx vertx, int maxConnectionsPerHost, Function<String, String> blockedPeer) {
        this.vertx = vertx;
        this.blockedPeer = blockedPeer;
        this.clientOptions = new HttpClientOptions()
                .setKeepAlive(true)
                .setKeepAliveTimeout(30)
                .setTcpNoDelay(true)
                .setDecompressionSupported(true)
                .setMaxInitialLineLength(16 * 1024)
                .setMaxHeaderSize(64 * 1024);
        this.poolOptions = new PoolOptions().setHttp1MaxSize(maxConnectionsPerHost).setMaxWaitQueueSize(10_000);
        this.client = newClient();
    }

    /**
     * A pool whose connections hand their own failures (a provider resetting the connection) to a DEBUG line: the
     * attempt on it fails with the same error and is recorded in the request's trail, and without a handler Vert.x
     * logged each one again at ERROR with no request to tell it by (about one per upstream reset, found by hunt11).
     */
    private HttpClient newClient() {
        return vertx.httpClientBuilder().with(clientOptions).with(poolOptions)
                .withConnectHandler(connection -> connection.exceptionHandler(t -> LOG.log(System.Logger.Level.DEBUG,
                        "an upstream connection failed (its attempt records it): " + t)))
                .build();
    }

    /** The calling event loop's own pool (its connections are created on, and owned by, that loop). */
    private HttpClient client() {
        if (!Context.isOnEventLoopThread()) {
            return client;
        }
        return loopClients.computeIfAbsent(Thread.currentThread(), t -> newClient());
    }

    /**
     * Resets a request this exchange no longer wants, before any handler of its own was set: its end is already the
     * exchange's (cancelled, or refused), and a request with no exception handler has Vert.x log its reset at ERROR,
     * "Stream reset: 0" naming no request (found by hunt22).
     */
    private static void quietReset(HttpClientRequest request) {
        request.exceptionHandler(t -> { });
        request.reset();
    }

    @Override
    public Exchange send(UpstreamRequest req, UpstreamHandler handler) {
        AtomicBoolean done = new AtomicBoolean();
        HttpClientRequest[] holder = new HttpClientRequest[1];
        RequestOptions options = new RequestOptions()
                .setMethod(HttpMethod.POST)
                .setAbsoluteURI(url(req.url()))
                .setConnectTimeout(req.connectTimeout().toMillis());
        req.headers().forEach(options::putHeader);
        client().request(options).onComplete(ar -> {
            if (done.get()) {
                if (ar.succeeded()) {
                    quietReset(ar.result());
                }
                return;
            }
            if (ar.failed()) {
                if (done.compareAndSet(false, true)) {
                    // this future fails on a timeout only when no connection came within the request's connect
                    // timeout (Vert.x's NoStackTraceTimeoutException, "... when getting a connection to ..."):
                    // Kong's connect_timeout, a timeout, not a transport error
                    handler.onError(ar.cause() instanceof TimeoutException
                            ? new TransportFailure(TransportFailure.Kind.CONNECT_TIMEOUT, ar.cause().getMessage())
                            : TransportFailure.classify(ar.cause()));
                }
                return;
            }
            HttpClientRequest request = ar.result();
            String blocked = blocked(request);
            if (blocked != null) {
                quietReset(request);
                if (done.compareAndSet(false, true)) {
                    handler.onError(new TransportFailure(TransportFailure.Kind.CONNECT, blocked));
                }
                return;
            }
            synchronized (holder) {
                holder[0] = request;
            }
            if (done.get()) {
                // cancelled (on another thread) since the check above, when cancel found no request to reset
                quietReset(request);
                return;
            }
            request.exceptionHandler(t -> {
                if (done.compareAndSet(false, true)) {
                    handler.onError(TransportFailure.classify(t));
                }
            });
            handler.onConnected();
            request.response().onComplete(rar -> {
                if (rar.failed()) {
                    if (done.compareAndSet(false, true)) {
                        handler.onError(TransportFailure.classify(rar.cause()));
                    }
                    return;
                }
                HttpClientResponse resp = rar.result();
                resp.exceptionHandler(t -> {
                    if (done.compareAndSet(false, true)) {
                        handler.onError(TransportFailure.classify(t));
                    }
                });
                if (done.get()) {
                    return;
                }
                Map<String, String> headers = new HashMap<>();
                resp.headers().forEach(e -> headers.put(e.getKey().toLowerCase(Locale.ROOT), e.getValue()));
                handler.onHead(resp.statusCode(), headers);
                resp.handler(buf -> {
                    if (!done.get()) {
                        handler.onData(buf.getBytes());
                    }
                });
                resp.endHandler(v -> {
                    if (done.compareAndSet(false, true)) {
                        handler.onEnd();
                    }
                });
            });
            request.end(Buffer.buffer(req.body())).onSuccess(v -> {
                if (!done.get()) {
                    handler.onSent();
                }
            });
        });
        return new Exchange() {
            @Override
            public void cancel() {
                if (done.compareAndSet(false, true)) {
                    HttpClientRequest r;
                    synchronized (holder) {
                        r = holder[0];
                    }
                    if (r != null) {
                        r.reset();
                    }
                }
            }

            @Override
            public boolean reportsSent() {
                return true;
            }
        };
    }

    /**
     * {@code url} parsed, remembered: a gateway sends to a handful of provider URLs, and {@code new URL} on every
     * request (what {@code RequestOptions.setAbsoluteURI(String)} does) was a measurable share of the request path.
     * Bounded: past {@link #MAX_URLS} distinct URLs the memory starts over.
     *
     * @throws VertxException for a malformed URL, as {@code setAbsoluteURI(String)} does
     */
    URL url(String url) {
        URL known = urls.get(url);
        if (known != null) {
            return known;
        }
        URL parsed;
        try {
            parsed = new URL(url);
        } catch (MalformedURLException e) {
            throw new VertxException("Invalid url: " + url, e);
        }
        if (urls.size() >= MAX_URLS) {
            urls.clear();
        }
        urls.put(url, parsed);
        return parsed;
    }

    /** Why the request's connection goes somewhere it must not, or null. */
    private String blocked(HttpClientRequest request) {
        SocketAddress peer = request.connection() == null ? null
                : request.connection().remoteAddress();
        String ip = peer == null ? null : peer.hostAddress();
        String why = ip == null ? null : blockedPeer.apply(ip);
        return why == null ? null : "refused to send to " + request.getHost() + " (" + ip + "): " + why;
    }

    public void close() {
        client.close();
        loopClients.values().forEach(HttpClient::close);
    }
}
