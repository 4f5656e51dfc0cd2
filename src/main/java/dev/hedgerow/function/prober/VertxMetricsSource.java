package dev.hedgerow.function.prober;

import dev.hedgerow.prober.MetricsSource;
import io.smallrye.mutiny.Uni;
import io.vertx.core.Promise;
import io.vertx.core.Vertx;
import io.vertx.core.buffer.Buffer;
import io.vertx.core.http.HttpClient;
import io.vertx.core.http.HttpClientOptions;
import io.vertx.core.http.HttpClientResponse;
import io.vertx.core.http.HttpMethod;
import io.vertx.core.http.RequestOptions;

import java.nio.charset.StandardCharsets;
import java.time.Duration;

/** {@link MetricsSource} on the Vert.x HTTP client: a GET with a hard timeout, at most 1 MiB read (the rest is never buffered). Thread-safe. */
public final class VertxMetricsSource implements MetricsSource, AutoCloseable {
    private static final int MAX_BYTES = 1024 * 1024;
    private final HttpClient client;
    /** Why a resolved peer address is refused (a cloud metadata address), or null: the upstream client's rule. */
    private final java.util.function.Function<String, String> blockedPeer;

    /** A source that scrapes any address (tests). */
    public VertxMetricsSource(Vertx vertx) {
        this(vertx, ip -> null);
    }

    /**
     * A source that sends nothing to a peer {@code blockedPeer} refuses, checked on the connection's resolved address
     * as the upstream client checks a provider's: a {@code metrics_url} whose name resolves (or is re-pointed) to
     * 169.254.169.254 got a GET from the prober every round (found by hunt29-d).
     */
    public VertxMetricsSource(Vertx vertx, java.util.function.Function<String, String> blockedPeer) {
        this.client = vertx.createHttpClient(new HttpClientOptions().setKeepAlive(true).setDecompressionSupported(true));
        this.blockedPeer = blockedPeer;
    }

    @Override
    public Uni<String> fetch(String url, Duration timeout) {
        RequestOptions options = new RequestOptions().setMethod(HttpMethod.GET).setAbsoluteURI(url)
                .setConnectTimeout(timeout.toMillis()).setIdleTimeout(timeout.toMillis())
                .putHeader("accept", "text/plain");
        return Uni.createFrom().completionStage(() -> client.request(options)
                .compose(req -> {
                    // the body's handlers are set as its head arrives, in the same event-loop task: set in a later
                    // composition of send()'s future, a small page could have ended before them ("Response already
                    // ended", seen in a loaded full-suite run)
                    Promise<String> done = Promise.promise();
                    String ip = req.connection() == null || req.connection().remoteAddress() == null ? null
                            : req.connection().remoteAddress().hostAddress();
                    String why = ip == null ? null : blockedPeer.apply(ip);
                    if (why != null) {
                        req.reset();
                        return io.vertx.core.Future.failedFuture("refused to scrape " + req.getHost() + " (" + ip
                                + "): " + why);
                    }
                    req.response(head -> {
                        if (head.failed()) {
                            done.tryFail(head.cause());
                        } else if (head.result().statusCode() != 200) {
                            done.tryFail("metrics answered " + head.result().statusCode());
                        } else {
                            readCapped(head.result(), done);
                        }
                    });
                    req.end().onFailure(done::tryFail);
                    return done.future();
                })
                .toCompletionStage());
    }

    /** The body, read as it arrives and cut off (connection reset) past {@value #MAX_BYTES} bytes. */
    private static void readCapped(HttpClientResponse resp, Promise<String> done) {
        Buffer body = Buffer.buffer();
        resp.handler(chunk -> {
            if (body.length() + chunk.length() > MAX_BYTES) {
                if (done.tryFail("metrics text larger than " + MAX_BYTES + " bytes")) {
                    resp.request().reset();
                }
                return;
            }
            body.appendBuffer(chunk);
        });
        resp.exceptionHandler(done::tryFail);
        resp.endHandler(v -> done.tryComplete(body.toString(StandardCharsets.UTF_8)));
    }

    @Override
    public void close() {
        client.close();
    }
}
