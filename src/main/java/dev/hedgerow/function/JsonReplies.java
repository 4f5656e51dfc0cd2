package dev.hedgerow.function;

import com.fasterxml.jackson.databind.JsonNode;
import dev.hedgerow.api.ApiError;
import dev.hedgerow.api.Json;
import io.vertx.core.buffer.Buffer;
import io.vertx.core.http.HttpServerResponse;
import io.vertx.ext.web.Router;

/**
 * JSON answers of the Vert.x routes (gateway, prober, capacity): a body with its status, or an {@link ApiError} in
 * the OpenAI envelope with its {@code retry-after}. A response already ended or closed (the client left) is left
 * alone.
 */
public final class JsonReplies {
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
            router.route(path).handler(ctx -> error(ctx.response(), new ApiError(405, "invalid_request_error",
                    "method_not_allowed", "Method " + ctx.request().method() + " is not allowed here.", null, null)));
        }
    }
}
