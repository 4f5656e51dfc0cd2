package dev.hedgerow.function;

import dev.hedgerow.api.ApiError;
import io.quarkus.runtime.configuration.MemorySize;
import io.vertx.core.http.HttpServerRequest;
import io.vertx.ext.web.Router;
import io.vertx.ext.web.handler.BodyHandler;
import jakarta.enterprise.context.ApplicationScoped;
import jakarta.enterprise.event.Observes;
import org.eclipse.microprofile.config.inject.ConfigProperty;

/**
 * Any request that declares a body over the server's limit ({@code quarkus.http.limits.max-body-size}, 10 MiB by
 * default) gets its 413 in the OpenAI envelope: Quarkus' own check, which runs before every route, answers an empty
 * one. The edges with smaller limits (the gateway's 8 MiB, {@code /v1/capacity}'s 16 KiB) check theirs first, and
 * the admin API checks the admin key first. Likewise a request URI over {@value #MAX_URI_BYTES} bytes gets a 414 in
 * the envelope: the server reads request lines up to {@code quarkus.http.limits.max-initial-line-length} (64 KiB,
 * application.properties) so that such a URI reaches this check; only a line beyond that gets Vert.x's own empty 414.
 */
@ApplicationScoped
public class SizeGuard {
    @ConfigProperty(name = "quarkus.http.limits.max-body-size", defaultValue = "10240K")
    MemorySize maxBodySize;

    /** The largest body the server reads, in bytes. */
    public long limit() {
        return maxBodySize.asLongValue();
    }

    /** The longest request-target (path and query) Hedgerow reads, as most servers and proxies (nginx: 8 KiB). */
    public static final int MAX_URI_BYTES = 8192;

    /** True when the request's target (path and query, as sent) is over {@value #MAX_URI_BYTES} bytes. */
    public static boolean uriTooLong(HttpServerRequest request) {
        return request.uri().length() > MAX_URI_BYTES;
    }

    void mount(@Observes Router router) {
        long limit = limit();
        router.route().order(JsonReplies.SIZE_GUARD_ORDER).handler(ctx -> { // one route: every request passes it
            if (uriTooLong(ctx.request())) {
                MetricsLabels.uriTemplate(MetricsLabels.URI_TOO_LONG);
                JsonReplies.refuseUnread(ctx, ApiError.uriTooLong(MAX_URI_BYTES));
            } else if (JsonReplies.declaresMoreThan(ctx.request(), limit)) {
                JsonReplies.tooLarge(ctx, limit);
            } else {
                ctx.next();
            }
        });
        // a body sent without a length (chunked) to the admin API is read here, so one over the limit gets its 413 in
        // the envelope: Quarkus REST's own check answers an empty 413 and replaces the response's end handler, so the
        // request was never counted as ended (the shutdown gate then waited its whole grace period at every stop)
        BodyHandler chunked = BodyHandler.create(false).setBodyLimit(limit).setHandleFileUploads(false);
        router.route("/admin/*").order(JsonReplies.SIZE_GUARD_ORDER).handler(ctx -> {
            if (ctx.request().getHeader("content-length") == null && ctx.request().getHeader("transfer-encoding") != null) {
                chunked.handle(ctx);
            } else {
                ctx.next();
            }
        }).failureHandler(JsonReplies.failureHandler(limit, "request body"));
    }
}
