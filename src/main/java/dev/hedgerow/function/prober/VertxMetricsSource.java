package dev.hedgerow.function.prober;

import dev.hedgerow.prober.MetricsSource;
import io.smallrye.mutiny.Uni;
import io.vertx.core.Vertx;
import io.vertx.core.http.HttpClient;
import io.vertx.core.http.HttpClientOptions;
import io.vertx.core.http.HttpMethod;
import io.vertx.core.http.RequestOptions;

import java.time.Duration;

/** {@link MetricsSource} on the Vert.x HTTP client: a GET with a hard timeout, at most 1 MiB. Thread-safe. */
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
                        return io.vertx.core.Future.failedFuture("metrics answered " + resp.statusCode());
                    }
                    return resp.body();
                })
                .map(buf -> {
                    if (buf.length() > MAX_BYTES) {
                        throw new IllegalStateException("metrics text larger than " + MAX_BYTES + " bytes");
                    }
                    return buf.toString(java.nio.charset.StandardCharsets.UTF_8);
                })
                .toCompletionStage());
    }

    @Override
    public void close() {
        client.close();
    }
}
