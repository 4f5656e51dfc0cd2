package dev.hedgerow.function;

import com.fasterxml.jackson.databind.JsonNode;
import dev.hedgerow.api.ApiError;
import dev.hedgerow.api.Json;
import io.vertx.core.buffer.Buffer;
import io.vertx.core.http.HttpServerResponse;
import io.vertx.core.Handler;
import io.vertx.core.http.HttpClosedException;
import io.vertx.core.http.HttpMethod;
import io.vertx.core.http.HttpServerRequest;
import io.vertx.core.http.HttpVersion;
import io.quarkus.vertx.http.runtime.RouteConstants;
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

    /**
     * The order of {@link SizeGuard}'s catch-all route: just before Quarkus' own check of the declared body size
     * ({@code quarkus.http.limits.max-body-size}), which answers a bare 413.
     */
    public static final int SIZE_GUARD_ORDER = RouteConstants.ROUTE_ORDER_UPLOAD_LIMIT - 1;
    /** The order of an edge's own, smaller body limit on its paths: before the catch-all. */
    public static final int EDGE_SIZE_GUARD_ORDER = SIZE_GUARD_ORDER - 1;

    private JsonReplies() {
    }

    /**
     * Routes {@code paths} through a check of the declared {@code Content-Length} against {@code limit} at
     * {@code order}: a larger one is refused before its body is read, with a 413 in the envelope.
     */
    public static void refuseDeclaredOversize(Router router, int order, long limit, String... paths) {
        Handler<RoutingContext> guard = ctx -> {
            if (declaresMoreThan(ctx.request(), limit)) {
                tooLarge(ctx, limit);
            } else {
                ctx.next();
            }
        };
        for (String path : paths) {
            router.route(path).order(order).handler(guard);
        }
    }

    /** True when the request declares a body ({@code Content-Length}) of more than {@code limit} bytes. */
    public static boolean declaresMoreThan(HttpServerRequest request, long limit) {
        String length = request.getHeader("content-length");
        if (length == null) {
            return false;
        }
        try {
            return Long.parseLong(length.trim()) > limit;
        } catch (NumberFormatException e) {
            return false; // the HTTP codec refuses a malformed length itself
        }
    }

    /** Answers 413 in the envelope without reading the body (see {@link #refuseUnread}). */
    public static void tooLarge(RoutingContext ctx, long limit) {
        refuseUnread(ctx, ApiError.tooLarge(limit));
    }

    /**
     * Answers {@code err} before the request's body is read. The answer goes out at once (a client that reads while it
     * sends sees it there); the body is then read and dropped, so a client that sends it all before reading (most
     * SDKs) still gets the answer rather than a reset, and (HTTP/1.x) the connection closes when the body has ended,
     * or after {@value #DRAIN_LIMIT} bytes or {@value #DRAIN_MILLIS} ms of it, whichever comes first.
     */
    public static void refuseUnread(RoutingContext ctx, ApiError err) {
        HttpServerRequest req = ctx.request();
        HttpServerResponse resp = ctx.response();
        if (req.version() != HttpVersion.HTTP_2 && !req.isEnded()) {
            resp.putHeader("connection", "close");
            // closes once the answer is written and the body has ended; at once past the limit or the time
            boolean[] written = {false};
            boolean[] drained = {false};
            long timer = ctx.vertx().setTimer(DRAIN_MILLIS, id -> req.connection().close());
            long[] read = {0};
            // addEndHandler, not resp.endHandler: that would replace the one Vert.x Web runs every route's end
            // handlers from (the request tally, the shutdown gate's in-flight count)
            ctx.addEndHandler(v -> {
                written[0] = true;
                if (drained[0]) {
                    req.connection().close();
                }
            });
            req.handler(chunk -> {
                read[0] += chunk.length();
                if (read[0] > DRAIN_LIMIT) {
                    ctx.vertx().cancelTimer(timer);
                    req.connection().close();
                }
            });
            req.endHandler(v -> {
                ctx.vertx().cancelTimer(timer);
                drained[0] = true;
                if (written[0]) {
                    req.connection().close();
                }
            });
            req.exceptionHandler(t -> ctx.vertx().cancelTimer(timer));
            req.resume();
        }
        error(resp, err);
    }

    /** The most of a refused body {@link #refuseUnread} reads (and drops) before it closes the connection. */
    static final long DRAIN_LIMIT = 64L * 1024 * 1024;
    /** The longest {@link #refuseUnread} waits for a refused body to end before it closes the connection. */
    static final long DRAIN_MILLIS = 10_000;

    /** Ends {@code resp} with {@code status} and {@code body} as JSON. */
    public static void json(HttpServerResponse resp, int status, JsonNode body) {
        if (resp.ended() || resp.closed()) {
            return;
        }
        resp.setStatusCode(status).putHeader("content-type", "application/json").end(Buffer.buffer(Json.bytes(body)));
    }

    /**
     * Ends {@code resp} with the error's status, envelope and retry headers ({@code retry-after} and
     * {@code retry-after-ms}, or {@code x-should-retry}, when it has them).
     */
    public static void error(HttpServerResponse resp, ApiError err) {
        if (resp.ended() || resp.closed()) {
            return;
        }
        err.retry().headers().forEach(resp::putHeader);
        json(resp, err.status(), err.toNode());
    }

    /**
     * Routes any method but {@code allowed}, already routed on {@code paths}, to a 405 in the envelope that names the
     * method the path answers, in its message and in {@code Allow} (RFC 9110 asks a 405 for it; the router's own
     * answer would be a bare 405, or the HTML 404 of a path no route takes); OPTIONS gets {@link #options}. Call after
     * mounting the real routes.
     */
    public static void methodNotAllowed(Router router, HttpMethod allowed, String... paths) {
        String allow = allowed.name() + (allowed.equals(HttpMethod.GET) ? ", HEAD" : "") + ", OPTIONS";
        for (String path : paths) {
            router.route(path).handler(ctx -> {
                if (ctx.request().method().equals(HttpMethod.OPTIONS)) {
                    options(ctx.response(), allow);
                    return;
                }
                ctx.response().putHeader("allow", allow);
                error(ctx.response(), ApiError.methodNotAllowed("Method " + ctx.request().method()
                        + " is not allowed here; " + ctx.request().path() + " answers " + allowed.name() + "."));
            });
        }
    }

    /**
     * The answer to OPTIONS on a path Hedgerow serves (CORS off, or not a preflight: Quarkus' CORS filter answers
     * those first): 204 with the path's methods in {@code Allow}, OPTIONS among them, as RFC 9110 describes it, on
     * every function alike.
     */
    public static void options(HttpServerResponse resp, String allow) {
        if (resp.ended() || resp.closed()) {
            return;
        }
        resp.setStatusCode(204).putHeader("allow", allow).end();
    }

    /**
     * The failure handler of a Vert.x route with a body: a client that hung up or reset the connection while its
     * body was arriving is a debug line (nobody to answer, not the server's fault); a body over {@code bodyLimit}
     * is 413; a 404 names what has no route; another 4xx of the router's ("the {@code what} could not be read");
     * anything else an ERROR and a 500.
     */
    public static Handler<RoutingContext> failureHandler(long bodyLimit, String what) {
        return ctx -> {
            if (ctx.response().closed() || ctx.failure() instanceof HttpClosedException
                    || ctx.failure() instanceof IOException) {
                LOG.log(System.Logger.Level.DEBUG, "client closed the connection before its request body was read");
                return;
            }
            int status = ctx.statusCode();
            if (status < 400 && !ctx.request().isEnded()) {
                // the body's framing could not be decoded (a chunk size past any limit): the client's fault, which
                // any client, keyed or not, could make fill the log with stack traces as an ERROR (found by hunt20)
                LOG.log(System.Logger.Level.DEBUG, "request body undecodable on " + ctx.request().path() + ": "
                        + ctx.failure());
                error(ctx.response(), ApiError.invalidRequest("The " + what + " could not be read.", null));
                return;
            }
            if (status == 413) {
                error(ctx.response(), ApiError.tooLarge(bodyLimit));
            } else if (status == 400 && ctx.request().version() != HttpVersion.HTTP_2 && ctx.request().host() == null) {
                // Vert.x refuses it before any route runs
                error(ctx.response(), ApiError.invalidRequest("The request has no valid Host header, which HTTP/1.1 "
                        + "requires.", null));
            } else if (status == 404) {
                // what the router found no route for, such as OPTIONS * (about the server, not a path)
                error(ctx.response(), ApiError.notFound("No such endpoint: " + ctx.request().method() + " "
                        + ctx.request().uri() + "."));
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
