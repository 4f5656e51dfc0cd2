package dev.hedgerow.function.prober;

import dev.hedgerow.prober.MetricsSource;
import io.smallrye.mutiny.Uni;
import io.vertx.core.Future;
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

    public VertxMetricsSource(Vertx vertx) {
        this.client = vertx.createHttpClient(new HttpClientOptions().setKeepAlive(true).setDecompressionSupported(true));
    }

    @Override
    public Uni<String> fetch(String url, Duration timeout) {
        RequestOptions options = new RequestOptions().setMethod(HttpMethod.GET).setAbsoluteURI(url)
                .setConnectTimeout(timeout.toMillis()).setIdleTimeout(timeout.toMillis())
                .putHeader("accept", "text/plain");
        return Uni.createFrom().completionStage(() -> client.request(options)
                .compose(req -> req.send())
                .compose(resp -> {
                    if (resp.statusCode() != 200) {
                        return Future.<String>failedFuture("metrics answered " + resp.statusCode());
                    }
                    return readCapped(resp);
                })
                .toCompletionStage());
    }

    /** The body, read as it arrives and cut off (connection reset) past {@value #MAX_BYTES} bytes. */
    private static Future<String> readCapped(HttpClientResponse resp) {
        Promise<String> done = Promise.promise();
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
        return done.future();
    }

    @Override
    public void close() {
        client.close();
    }
}
