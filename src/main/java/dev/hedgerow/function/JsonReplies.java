package dev.hedgerow.function;

import com.fasterxml.jackson.databind.JsonNode;
import dev.hedgerow.api.ApiError;
import dev.hedgerow.api.Json;
import io.vertx.core.buffer.Buffer;
import io.vertx.core.http.HttpServerResponse;
import io.vertx.core.Handler;
import io.vertx.core.http.HttpClosedException;
import io.vertx.ext.web.Router;
import io.vertx.ext.web.RoutingContext;

import java.io.IOException;

/**
 * JSON answers of the Vert.x routes (gateway, prober, capacity): a body with its status, or an {@link ApiError} in
 * the OpenAI envelope with its {@code retry-after}. A response already ended or closed (the client left) is left
 * alone.
 */
public final class JsonReplies {
    private static final System.Logger LOG = System.getLogger("dev.hedgerow.http");

    private JsonReplies() {
    }

    /** Ends {@code resp} with {@code status} and {@code body} as JSON. */
    public static void json(HttpServerResponse resp, int status, JsonNode body) {
        if (resp.ended() || resp.closed()) {
            return;
        }
        resp.setStatusCode(status).putHeader("content-type", "application/json").end(Buffer.buffer(Json.bytes(body)));
    }

    /** Ends {@code resp} with the error's status, envelope and, when it has one, {@code retry-after}. */
    public static void error(HttpServerResponse resp, ApiError err) {
        if (resp.ended() || resp.closed()) {
            return;
        }
        if (err.retryAfterSeconds() != null) {
            resp.putHeader("retry-after", Long.toString(err.retryAfterSeconds()));
        }
        json(resp, err.status(), err.toNode());
    }

    /**
     * Routes any method but the ones already routed on {@code paths} to a 405 in the envelope (the router's own
     * answer would be a bare 405, or the HTML 404 of a path no route takes). Call after mounting the real routes.
     */
    public static void methodNotAllowed(Router router, String... paths) {
        for (String path : paths) {
            router.route(path).handler(ctx -> error(ctx.response(), ApiError.methodNotAllowed(
                    "Method " + ctx.request().method() + " is not allowed here.")));
        }
    }

    /**
     * The failure handler of a Vert.x route with a body: a client that hung up or reset the connection while its
     * body was arriving is a debug line (nobody to answer, not the server's fault); a body over {@code bodyLimit}
     * is 413; another 4xx of the router's ("the {@code what} could not be read"); anything else an ERROR and a 500.
     */
    public static Handler<RoutingContext> failureHandler(long bodyLimit, String what) {
        return ctx -> {
            if (ctx.response().closed() || ctx.failure() instanceof HttpClosedException
                    || ctx.failure() instanceof IOException) {
                LOG.log(System.Logger.Level.DEBUG, "client closed the connection before its request body was read");
                return;
            }
            int status = ctx.statusCode();
            if (status == 413) {
                error(ctx.response(), ApiError.tooLarge(bodyLimit));
            } else if (status >= 400 && status < 500) {
                error(ctx.response(), ApiError.invalidRequest("The " + what + " could not be read.", null)
                        .withStatus(status));
            } else {
                LOG.log(System.Logger.Level.ERROR, "unexpected failure on " + ctx.request().path(), ctx.failure());
                error(ctx.response(), ApiError.internal());
            }
        };
    }
}
