package dev.hedgerow.function.gateway;

import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.JsonNodeFactory;
import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.hedgerow.api.ApiError;
import dev.hedgerow.api.ApiRequest;
import dev.hedgerow.api.ChatRequest;
import dev.hedgerow.api.EmbeddingsRequest;
import dev.hedgerow.api.Json;
import dev.hedgerow.api.RequestException;
import dev.hedgerow.api.Text;
import dev.hedgerow.api.RetryAdvice;
import dev.hedgerow.catalog.Catalog;
import dev.hedgerow.catalog.Keys;
import dev.hedgerow.catalog.Org;
import dev.hedgerow.catalog.Strategy;
import dev.hedgerow.dispatch.ClientSink;
import dev.hedgerow.dispatch.DispatchRequest;
import dev.hedgerow.dispatch.Dispatcher;
import dev.hedgerow.function.GatewayMetrics;
import dev.hedgerow.function.JsonReplies;
import dev.hedgerow.routing.RequestFacts;
import dev.hedgerow.routing.RoutePlan;
import dev.hedgerow.runtime.Hedgerow;
import io.netty.channel.Channel;
import io.netty.channel.ChannelOption;
import io.vertx.core.Context;
import io.vertx.core.Handler;
import io.vertx.core.Vertx;
import io.vertx.core.buffer.Buffer;
import io.vertx.core.http.HttpConnection;
import io.vertx.core.http.HttpMethod;
import io.vertx.core.http.HttpServerRequest;
import io.vertx.core.http.HttpServerResponse;
import io.vertx.core.http.HttpVersion;
import io.vertx.core.http.impl.Http1xServerConnection;
import io.vertx.ext.web.Router;
import io.vertx.ext.web.RoutingContext;
import io.vertx.ext.web.handler.BodyHandler;
import io.vertx.ext.web.handler.PlatformHandler;

import java.security.NoSuchAlgorithmException;
import java.security.SecureRandom;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.Supplier;

/**
 * The gateway function's HTTP edge: {@code POST /v1/chat/completions} and {@code POST /v1/embeddings} (and their
 * path-alias forms {@code /models/{alias}/v1/...}), {@code GET /v1/models} and {@code GET /v1/models/{model}}. Thin:
 * authenticate, parse, call the core, write. A plain Vert.x route rather than a JAX-RS resource because the response
 * head must wait for the first content (or the final error) and the status is only known then; the client hang-up
 * must reach the core at once. Thread-safe.
 */
public final class GatewayRoutes {
    /**
     * One DRBG per thread, each seeded from the system's entropy: the default generator (NativePRNG) draws every
     * instance's bytes through one process-wide lock, and JFR showed the two event loops queueing on it (128
     * contended draws in 4 minutes at 500 req/s, up to 2.7 ms).
     */
    private static final ThreadLocal<SecureRandom> RANDOM = ThreadLocal.withInitial(GatewayRoutes::generator);
    private static final String ID_CHARS = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789";

    /** The largest header block the gateway reads (the server accepts more, so this answer is an envelope). */
    public static final int MAX_HEADER_BYTES = 32 * 1024;
    /**
     * Bodies up to this size are counted (tokens, prefix hashes) on the event loop, at most a few milliseconds;
     * larger ones on a worker thread.
     */
    static final int COUNT_ON_LOOP_MAX_BYTES = 32 * 1024;

    /**
     * The order of the route that counts each request on the gateway's paths: before every other handler of a
     * request that can answer it (Quarkus' CORS filter at -300 and Hedgerow's CORS refusals at -301 included).
     */
    static final int TALLY_ORDER = -400;

    private final Supplier<Hedgerow> core;
    private final Supplier<GatewayMetrics> metrics;
    private final long bodyLimit;
    private final java.time.Duration bodyTimeout;

    /** The default of {@code hedgerow.gateway.body-timeout}. */
    public static final String DEFAULT_BODY_TIMEOUT = "60s";

    public GatewayRoutes(Supplier<Hedgerow> core, Supplier<GatewayMetrics> metrics, long bodyLimit) {
        this(core, metrics, bodyLimit, java.time.Duration.ofSeconds(60));
    }

    /**
     * @param bodyLimit   the largest request body read, in bytes
     * @param bodyTimeout the longest a caller may take to send its body, from its head (a body sent slower holds
     *                    a connection and up to {@code bodyLimit} of memory: answered 408 and closed)
     */
    public GatewayRoutes(Supplier<Hedgerow> core, Supplier<GatewayMetrics> metrics, long bodyLimit,
                         java.time.Duration bodyTimeout) {
        this.core = core;
        this.metrics = metrics;
        this.bodyLimit = bodyLimit;
        this.bodyTimeout = bodyTimeout;
    }

    /** Where the key guard leaves the caller it found, for the handler after the body. */
    private static final String CALLER = "hedgerow.caller";

    public void mount(Router router) {
        for (String path : new String[]{"/v1/*", "/models/*"}) {
            router.route(path).order(TALLY_ORDER - 1).handler(GatewayRoutes::requestId);
        }
        for (String path : new String[]{"/v1/chat/completions", "/models/:alias/v1/chat/completions",
                "/v1/embeddings", "/models/:alias/v1/embeddings", "/v1/models", "/v1/models/:model"}) {
            router.route(path).order(TALLY_ORDER).handler(this::tally);
        }
        Handler<RoutingContext> failure = JsonReplies.failureHandler(bodyLimit, "request");
        BodyHandler body = BodyHandler.create(false).setBodyLimit(bodyLimit).setHandleFileUploads(false);
        // the guard first (a platform handler may precede the body handler): an oversized header block is refused
        // before its body is read
        PlatformHandler guard = GatewayRoutes::headerGuard;
        // then the key, still before the body: an unknown caller's body is never read (130 unauthenticated 8 MiB
        // bodies held open filled a 1 GiB heap for good; found by hunt29-d), and a known one's must come in time
        PlatformHandler key = this::keyGuard;
        // a declared length over the limit is refused before anything else reads the request (Quarkus' own check of
        // its larger limit would answer a bare 413)
        JsonReplies.refuseDeclaredOversize(router, JsonReplies.EDGE_SIZE_GUARD_ORDER, bodyLimit,
                "/v1/chat/completions", "/models/:alias/v1/chat/completions", "/v1/embeddings",
                "/models/:alias/v1/embeddings");
        router.post("/v1/chat/completions").handler(guard).handler(key).handler(body)
                .handler(ctx -> serve(ctx, null, false)).failureHandler(failure);
        router.post("/models/:alias/v1/chat/completions").handler(guard).handler(key).handler(body)
                .handler(ctx -> serve(ctx, ctx.pathParam("alias"), false)).failureHandler(failure);
        router.post("/v1/embeddings").handler(guard).handler(key).handler(body)
                .handler(ctx -> serve(ctx, null, true)).failureHandler(failure);
        router.post("/models/:alias/v1/embeddings").handler(guard).handler(key).handler(body)
                .handler(ctx -> serve(ctx, ctx.pathParam("alias"), true)).failureHandler(failure);
        router.get("/v1/models").handler(guard).handler(this::models)
                .failureHandler(failure);
        // OpenAI's retrieve (the SDKs' models.retrieve); a name holding '/' comes as %2F, as the SDKs encode it
        router.get("/v1/models/:model").handler(guard).handler(this::model)
                .failureHandler(failure);
        // HEAD answers as GET does, without the body (Vert.x writes no body on a HEAD), as RFC 9110 asks of a GET
        router.head("/v1/models").handler(guard).handler(this::models).failureHandler(failure);
        router.head("/v1/models/:model").handler(guard).handler(this::model).failureHandler(failure);
        JsonReplies.methodNotAllowed(router, HttpMethod.POST, "/v1/chat/completions",
                "/models/:alias/v1/chat/completions", "/v1/embeddings", "/models/:alias/v1/embeddings");
        JsonReplies.methodNotAllowed(router, HttpMethod.GET, "/v1/models", "/v1/models/:model");
    }

    /**
     * Gives every answer under {@code /v1} its request id, as {@code x-hedgerow-request-id} and under OpenAI's name
     * {@code x-request-id}, which the official SDKs expose ({@code _request_id}, {@code withResponse().request_id}, an
     * error's {@code requestID}): the model list, a 404, 405 or 413 included, which had none (found by hunt6). A chat
     * completion's is its {@code id} ({@code chatcmpl-hr...}), an embeddings request's {@code emb-hr...}, any other
     * {@code req-hr...}; the router serves a path with a trailing slash as the path without it, and so is its id
     * (found by hunt13: {@code /v1/chat/completions/} was served with {@code req-hr...} ids), and the path it matches
     * is the normalized one, dot segments resolved (found by hunt20: {@code /v1/chat/completions/x/..} too).
     */
    private static void requestId(RoutingContext ctx) {
        String path = ctx.normalizedPath();
        int end = path.length();
        while (end > 1 && path.charAt(end - 1) == '/') {
            end--;
        }
        path = path.substring(0, end);
        String id = newId(path.endsWith("/chat/completions") ? "chatcmpl-hr" : path.endsWith("/embeddings")
                ? "emb-hr" : "req-hr");
        ctx.response().putHeader("x-hedgerow-request-id", id);
        ctx.response().putHeader("x-request-id", id);
        ctx.next();
    }

    /**
     * Counts the request in {@code hedgerow_requests_total} once its answer has ended (or its connection closed
     * first: 499), unless dispatch took it and counts it itself ({@link GatewayMetrics#finished}): so a refusal is
     * counted wherever it comes from, the edge's size and header guards, 405s and CORS refusals included. OPTIONS
     * (a CORS preflight, or the {@code Allow} answer) is not an API request and is not counted.
     */
    private void tally(RoutingContext ctx) {
        if (!ctx.request().method().equals(HttpMethod.OPTIONS)) {
            Tally t = new Tally();
            t.connection = ctx.request().connection();
            t.http2 = ctx.request().version() == HttpVersion.HTTP_2;
            ctx.put(Tally.KEY, t);
            ctx.addEndHandler(ended -> {
                if (t.dispatched) {
                    return;
                }
                if (t.pending) {
                    // gone while its prompt was counted or its routes planned: where that ends decides who counts it
                    // (dispatch's log, or settle), so a hang-up there is counted once
                    t.goneWhilePending = true;
                    return;
                }
                metrics.get().answered(t.orgLabel(), t.aliasLabel(),
                        ended.succeeded() ? ctx.response().getStatusCode() : 499);
            });
        }
        ctx.next();
    }

    /**
     * What the edge learnt of one request for its count: the caller's org once its key was checked, the alias it
     * named once read, and whether dispatch took it. Touched on the request's event loop only (or handed over with
     * it to a worker and back).
     */
    private static final class Tally {
        static final String KEY = "hedgerow.tally";
        Org org;
        String alias;
        boolean dispatched;
        /** Its prompt is being counted on a worker, or its routes planned: the answer comes when that ends. */
        boolean pending;
        /** The connection closed while {@link #pending}: counted as 499 where the pending work ends. */
        boolean goneWhilePending;
        /** The client's connection, which {@link ResponseSink#cutOff} closes (null for a request not tallied). */
        HttpConnection connection;
        /** The request came over HTTP/2 ({@link ResponseSink#http2}). */
        boolean http2;

        static Tally of(RoutingContext ctx) {
            Tally t = ctx.get(KEY);
            return t != null ? t : new Tally(); // OPTIONS is not counted (and never reaches the handlers that ask)
        }

        String orgLabel() {
            return org == null ? GatewayMetrics.NONE : org.id();
        }

        /** The alias only when it is one of the caller's: anything a client made up is {@link GatewayMetrics#NONE}. */
        String aliasLabel() {
            if (org == null || alias == null) {
                return GatewayMetrics.NONE;
            }
            for (dev.hedgerow.catalog.Route r : org.routes()) {
                if (r.alias().equals(alias)) {
                    return alias;
                }
            }
            return GatewayMetrics.NONE;
        }
    }

    /**
     * Refuses a header block over {@value #MAX_HEADER_BYTES} bytes with a 431 in the OpenAI envelope. The HTTP server
     * itself accepts more ({@code quarkus.http.limits.max-header-size}) so that oversized headers reach this guard
     * and get a readable answer; only blocks beyond the server's own limit get its bare 431.
     */
    static void headerGuard(RoutingContext ctx) {
        long size = 0;
        for (Map.Entry<String, String> e : ctx.request().headers()) {
            size += e.getKey().length() + e.getValue().length() + 4;
        }
        if (size > MAX_HEADER_BYTES) {
            ctx.response().putHeader("connection", "close");
            JsonReplies.error(ctx.response(), new ApiError(431, "invalid_request_error", "headers_too_large",
                    "The request headers exceed " + MAX_HEADER_BYTES + " bytes.", null, null));
            return;
        }
        ctx.next();
    }

    /**
     * Refuses a request whose key is no client key with its 401 before its body is read ({@link
     * JsonReplies#refuseUnread}), and gives a known caller {@link #bodyTimeout} to send the body: one still coming
     * then is answered 408 and its connection closed (a body trickled in held its connection, and its memory, for
     * Quarkus' 30-minute idle timeout; hunt29-d).
     */
    private void keyGuard(RoutingContext ctx) {
        Hedgerow h = core.get();
        Optional<Catalog.Caller> caller = authenticate(h, ctx.request());
        if (caller.isEmpty()) {
            JsonReplies.refuseUnread(ctx, unauthorized(h, ctx.request()));
            return;
        }
        ctx.put(CALLER, caller.get());
        Tally.of(ctx).org = caller.get().org();
        if (!ctx.request().isEnded()) {
            long timer = ctx.vertx().setTimer(Math.max(1, bodyTimeout.toMillis()), id -> bodyTooSlow(ctx));
            ctx.put(BODY_TIMER, timer);
            // a request that ends otherwise (its client hung up, its body refused) lets go of the timer, which held
            // the request and the body read so far for the whole timeout (review28: ~9 MiB a hang-up for 60 s)
            ctx.addEndHandler(v -> ctx.vertx().cancelTimer(timer));
        }
        ctx.next();
    }

    private static final String BODY_TIMER = "hedgerow.body-timer";

    /**
     * The body did not come within {@link #bodyTimeout}: 408 in the envelope, the rest of the body not kept (HTTP/1.x:
     * the connection closes; HTTP/2: only this stream is answered, the connection's other streams go on, as
     * {@link JsonReplies#refuseUnread} answers; review28 found "connection: close" refused there as a protocol error).
     */
    private void bodyTooSlow(RoutingContext ctx) {
        if (ctx.request().isEnded() || ctx.response().headWritten() || ctx.response().closed()) {
            return;
        }
        if (ctx.request().version() == HttpVersion.HTTP_2) {
            ctx.request().handler(chunk -> { });   // what still comes is dropped, not buffered
        }
        JsonReplies.refuseUnread(ctx, new ApiError(408, "invalid_request_error", "request_timeout",
                "The request body did not arrive within " + bodyTimeout.toSeconds() + " s.", null, null));
    }

    private static Optional<Catalog.Caller> authenticate(Hedgerow h, HttpServerRequest req) {
        return Keys.bearer(req.getHeader("authorization"))
                .flatMap(key -> h.catalog().current().callerForKeyHash(Keys.sha256Hex(key)));
    }

    /**
     * The 401 for a key that is no client key: one that is an admin key says so (it was "Incorrect API key", which sent
     * its holder looking for a typo; the admin API answers a client key the other way round; found by hunt20).
     */
    private static ApiError unauthorized(Hedgerow h, HttpServerRequest req) {
        boolean admin = Keys.bearer(req.getHeader("authorization"))
                .flatMap(key -> h.catalog().current().orgForAdminKeyHash(Keys.sha256Hex(key))).isPresent();
        return admin ? new ApiError(401, "invalid_request_error", "invalid_api_key", "This is an admin key, for the "
                + "console and the admin API; the gateway needs a client key of your organization.", null, null)
                : ApiError.unauthorized();
    }

    /** The caller's org, or empty once the request was answered 401. */
    private Optional<Org> callerOrg(RoutingContext ctx) {
        Optional<Org> org = authenticate(core.get(), ctx.request()).map(Catalog.Caller::org);
        if (org.isEmpty()) {
            JsonReplies.error(ctx.response(), unauthorized(core.get(), ctx.request()));
        } else {
            Tally.of(ctx).org = org.get();
        }
        return org;
    }

    private void models(RoutingContext ctx) {
        Optional<Org> org = callerOrg(ctx);
        if (org.isEmpty()) {
            return;
        }
        ObjectNode root = JsonNodeFactory.instance.objectNode();
        root.put("object", "list");
        root.putArray("data").addAll(modelObjects(org.get()));
        JsonReplies.json(ctx.response(), 200, root);
    }

    /** One model as {@code GET /v1/models} lists it; a name the caller's org does not list is 404 model_not_found. */
    private void model(RoutingContext ctx) {
        Optional<Org> org = callerOrg(ctx);
        if (org.isEmpty()) {
            return;
        }
        String id = ctx.pathParam("model");
        Tally.of(ctx).alias = org.get().routing().alias(id);
        Optional<ObjectNode> m = modelObjects(org.get()).stream().filter(n -> n.path("id").asText().equals(id))
                .findFirst();
        if (m.isPresent()) {
            JsonReplies.json(ctx.response(), 200, m.get());
        } else {
            JsonReplies.error(ctx.response(), ApiError.modelNotFound(id));
        }
    }

    /**
     * The org's aliases as OpenAI model objects: each alias, then each other name its routing rules give it. As on
     * OpenAI, chat and embeddings models are listed together; {@code type} ({@code chat} or {@code embeddings}) says
     * which endpoint serves each.
     */
    private static List<ObjectNode> modelObjects(Org org) {
        List<ObjectNode> out = new ArrayList<>();
        for (String alias : org.aliases()) {
            String type = org.routesOf(alias).get(0).embeddings() ? "embeddings" : "chat";
            // the alias, then each other name the routing rules give it (a client may send any of them)
            List<String> ids = new ArrayList<>();
            ids.add(alias);
            ids.addAll(org.routing().namesOf(alias));
            for (String id : ids) {
                ObjectNode m = JsonNodeFactory.instance.objectNode();
                m.put("id", id);
                m.put("object", "model");
                m.put("created", 0);
                m.put("owned_by", org.id());
                m.put("type", type);
                m.put("strategy", org.group(alias).strategy().wireName());
                if (!id.equals(alias)) {
                    m.put("alias_of", alias);
                }
                out.add(m);
            }
        }
        return out;
    }

    /**
     * A chat completions or embeddings request ({@code embeddings}): the same guards, refusals and audit events for
     * both, then the core's plan and dispatch. Only the parsing, the alias check and the facts differ.
     */
    private void serve(RoutingContext ctx, String pathAlias, boolean embeddings) {
        Hedgerow h = core.get();
        HttpServerRequest httpReq = ctx.request();
        HttpServerResponse resp = ctx.response();
        if (resp.ended()) {
            return;   // answered while its body came (bodyTooSlow, over HTTP/2, whose stream may still end)
        }
        // every answer carries the id (requestId), refusals too: it is the one a blocked audit event records
        String requestId = resp.headers().get("x-hedgerow-request-id");
        Tally tally = Tally.of(ctx);
        Long bodyTimer = ctx.get(BODY_TIMER);
        if (bodyTimer != null) {
            ctx.vertx().cancelTimer(bodyTimer);
        }
        Catalog.Caller guarded = ctx.get(CALLER);
        Optional<Catalog.Caller> caller = guarded != null ? Optional.of(guarded) : authenticate(h, httpReq);
        if (caller.isEmpty()) {
            JsonReplies.error(resp, unauthorized(h, httpReq));
            return;
        }
        Org org = caller.get().org();
        tally.org = org;
        String keyName = caller.get().keyName();
        if (pathAlias != null && !org.routing().pathAlias()) {
            // the org's routing rules do not route by path: the path form does not exist for it
            JsonReplies.error(resp, ApiError.notFound("Path aliases are not enabled for this organization; send the alias"
                    + " as \"model\"."));
            return;
        }
        // the alias a refusal is audited under: the path's or header's at once, the body's once it is read (a name
        // the routing rules give an alias stands for it from here on)
        String routed = org.routing().routedAlias(pathAlias, httpReq::getHeader);
        String alias = org.routing().alias(routed);
        tally.alias = alias;
        String[] named = {alias};   // the body's alias once parsed: what a refusal is audited under
        try {
            refuseEncoded(httpReq.getHeader("content-encoding"), httpReq.getHeader("transfer-encoding"));
            Buffer b = ctx.body().buffer();
            if (b == null || b.length() == 0) {
                // Vert.x decodes a multipart body into form attributes and leaves the body itself empty
                refuseMultipart(httpReq.getHeader("content-type"));
                throw new RequestException(ApiError.invalidRequest("invalid_json", "The request body is empty.", null));
            }
            if (b.length() <= COUNT_ON_LOOP_MAX_BYTES) {
                ApiRequest request;
                try {
                    request = parsed(h, org, b, routed, embeddings, named);
                } finally {
                    tally.alias = named[0];   // a wrong kind of model is labelled with it, as before the parse moved
                }
                RequestFacts facts = facts(h, org, request, routingHeaders(httpReq, keyName));
                tally.pending = true;
                route(h, org, keyName, request, facts, requestId, tally, resp);
            } else {
                Map<String, String> headers = routingHeaders(httpReq, keyName);
                tally.pending = true;
                // parsing megabytes of JSON (millions of nodes, each string checked for lone surrogates) and a long
                // prompt's BPE (~0.5 µs per character) would hold this event loop, and every other org's requests on
                // it, for seconds (found by hunt29-d: 5.7 s with four 8 MiB bodies of empty objects): a worker does
                // both and the loop carries on from there
                ctx.vertx().executeBlocking(() -> {
                    ApiRequest request = parsed(h, org, b, routed, embeddings, named);
                    return Map.entry(request, facts(h, org, request, headers));
                }, false).onComplete(done -> {
                    if (done.succeeded()) {
                        tally.alias = done.result().getKey().model();
                        route(h, org, keyName, done.result().getKey(), done.result().getValue(), requestId, tally,
                                resp);
                    } else if (done.cause() instanceof RequestException e) {
                        tally.alias = named[0];
                        settle(tally);
                        refuse(h, org, named[0] != null ? named[0] : e.alias(), requestId, resp, e);
                    } else {
                        settle(tally);
                        internalError(resp, done.cause());
                    }
                });
            }
        } catch (RequestException e) {
            refuse(h, org, named[0] != null ? named[0] : e.alias(), requestId, resp, e);
        }
    }

    /**
     * The request the body holds, its alias one the org serves for this kind of request; {@code named[0]} becomes the
     * body's alias as soon as it is read.
     */
    private static ApiRequest parsed(Hedgerow h, Org org, Buffer b, String routed, boolean embeddings,
                                     String[] named) {
        ApiRequest request = embeddings ? EmbeddingsRequest.parse(b.getBytes(), routed, org.routing()::alias)
                : ChatRequest.parse(b.getBytes(), routed, org.routing()::alias);
        named[0] = request.model();
        if (embeddings) {
            dev.hedgerow.routing.Router.requireEmbeddingsAlias(org, request.model());
        } else {
            dev.hedgerow.routing.Router.requireChatAlias(org, request.model());
        }
        return request;
    }

    /**
     * Refuses a multipart form (415) naming its type: a chat or embeddings request is a JSON object, whatever its
     * content type.
     */
    public static void refuseMultipart(String contentType) {
        if (contentType != null && contentType.regionMatches(true, 0, "multipart/", 0, "multipart/".length())) {
            throw new RequestException(ApiError.unsupportedMediaType("The request body must be a JSON object "
                    + "(Content-Type: application/json), not " + contentType.split(";", 2)[0].trim() + "."));
        }
    }

    /**
     * Refuses (415 {@code unsupported_content_encoding}) a body sent compressed ({@code Content-Encoding: gzip},
     * anything but {@code identity}): read as it came it was "not valid UTF-8", which named the wrong problem. It is
     * not decompressed: the size limit counts the bytes received, and a few kilobytes of gzip can inflate to
     * gigabytes. Likewise a {@code Transfer-Encoding} naming a coding other than {@code chunked} (415
     * {@code unsupported_transfer_encoding}): the server undoes the chunked framing only, so {@code gzip, chunked}
     * was refused for "a NUL byte" (found by hunt22). 415 as for a Content-Encoding, not RFC 9112's 501: the OpenAI
     * SDKs retry a 5xx, and this request can never succeed.
     */
    public static void refuseEncoded(String contentEncoding, String transferEncoding) {
        String coding = contentEncoding == null ? "" : contentEncoding.trim();
        if (!coding.isEmpty() && !coding.equalsIgnoreCase("identity")) {
            throw new RequestException(new ApiError(415, "invalid_request_error", "unsupported_content_encoding",
                    "The request body must be sent uncompressed; Content-Encoding " + coding + " is not accepted.",
                    null, null));
        }
        if (transferEncoding == null || transferEncoding.equalsIgnoreCase("chunked")) {
            return;   // the common cases, on every request: nothing to split
        }
        for (String c : transferEncoding.split(",")) {
            String t = c.trim();
            if (!t.isEmpty() && !t.equalsIgnoreCase("chunked")) {
                throw new RequestException(new ApiError(415, "invalid_request_error", "unsupported_transfer_encoding",
                        "The request body must be sent with no transfer coding but chunked; Transfer-Encoding "
                        + Text.clip(t, 40, "...") + " is not accepted.", null, null));
            }
        }
    }

    /** A bad request: one blocked audit event and the error envelope. */
    private static void refuse(Hedgerow h, Org org, String alias, String requestId, HttpServerResponse resp,
                               RequestException e) {
        h.audit().blocked(org.id(), alias, e.error().code(), e.error().message(), requestId).subscribe()
                .with(v -> { }, t -> { });
        JsonReplies.error(resp, e.error());
    }

    /** Plans the request's routes, then dispatches it or answers the refusal (on the event loop). */
    private void route(Hedgerow h, Org org, String keyName, ApiRequest request, RequestFacts facts, String requestId,
                       Tally tally, HttpServerResponse resp) {
        h.router().plan(org, request.model(), facts).subscribe().with(
                plan -> {
                    try {
                        onPlan(h, org, keyName, request.model(), request, facts, plan, requestId, tally, resp);
                    } catch (RuntimeException t) {
                        // thrown inside a Mutiny callback it would be dropped and the client left waiting
                        settle(tally);
                        internalError(resp, t);
                    }
                },
                t -> {
                    System.getLogger("dev.hedgerow.gateway").log(System.Logger.Level.ERROR, "routing failed", t);
                    settle(tally);
                    routingUnavailable(h, org, request.model(), requestId, resp);
                });
    }

    /**
     * The counting or planning ended without a dispatch: the answer is the edge's to count again, and a client that
     * left meanwhile (its end handler, which ran then, counted nothing) is counted here, once, as 499.
     */
    private void settle(Tally t) {
        t.pending = false;
        if (t.goneWhilePending && !t.dispatched) {
            t.goneWhilePending = false;
            metrics.get().answered(t.orgLabel(), t.aliasLabel(), 499);
        }
    }

    /**
     * Planning failed on a state-store error: 503 {@code routing_unavailable}, and, as every refusal, one blocked
     * audit event. The answer goes out first and the event is written best effort: the store that failed the plan may
     * be the audit's too, and an audit write never delays or fails a request ({@link dev.hedgerow.audit.AuditLog}).
     */
    private static void routingUnavailable(Hedgerow h, Org org, String alias, String requestId,
                                           HttpServerResponse resp) {
        ApiError err = new ApiError(503, "server_error", "routing_unavailable",
                "Routing state is unavailable; retry shortly.", null, RetryAdvice.after(1000));
        JsonReplies.error(resp, err);
        h.audit().blocked(org.id(), alias, err.code(), err.message(), requestId).subscribe()
                .with(v -> { }, t -> { });
    }

    /** A bug met by one request ends that request with a 500 envelope; it must never leave the client hanging. */
    private static void internalError(HttpServerResponse resp, Throwable t) {
        System.getLogger("dev.hedgerow.gateway").log(System.Logger.Level.ERROR, "request failed", t);
        JsonReplies.error(resp, ApiError.internal());
    }

    private void onPlan(Hedgerow h, Org org, String keyName, String alias, ApiRequest request, RequestFacts facts,
                        RoutePlan plan, String requestId, Tally tally, HttpServerResponse resp) {
        if (plan instanceof RoutePlan.Blocked b) {
            settle(tally);
            h.audit().blocked(org.id(), alias, b.reason(), b.error().message(), requestId).subscribe()
                    .with(v -> { }, t -> { });
            JsonReplies.error(resp, b.error());
            return;
        }
        RoutePlan.Ready ready = (RoutePlan.Ready) plan;
        DispatchRequest dr = new DispatchRequest(requestId, h.clock().instant().getEpochSecond(), org, keyName,
                alias, org.group(alias), request, facts, ready.candidates(), ready.othersBackInMillis());
        tally.dispatched = true; // from here dispatch counts it (finished, or refused), whatever happens
        tally.pending = false;
        if (resp.closed()) {
            // the client hung up while its request was counted or planned: nothing goes upstream, but it is logged
            h.dispatcher().clientGoneBeforeStart(dr);
            return;
        }
        ResponseSink sink = new ResponseSink(resp, tally.connection, tally.http2);
        Dispatcher.Handle handle = h.dispatcher().start(dr, sink);
        sink.gone = handle::clientGone;
        resp.closeHandler(v -> handle.clientGone());
        if (resp.closed()) {
            handle.clientGone();
        }
    }

    /**
     * Closes a client's connection at once, with a TCP reset, whatever is still queued for it. The response's own
     * {@code reset()} on HTTP/1.x closes the connection only after its queued writes are sent, which a client that
     * reads nothing never takes: the connection stayed open with its 8 MiB until the client left, and Vert.x, having
     * marked the response closed, never ran its end handlers, so the shutdown gate counted the request in flight for
     * good (readiness over-counted, and every later shutdown waited out its whole grace; found by hunt11). A plain
     * {@code channel.close()} is no better: Vert.x's handler turns it into the same close-after-write. Closing the
     * channel below the pipeline (Netty's {@code unsafe().close}, on its event loop) drops the queue and fires the
     * channel's end as a hang-up does: the end handlers run, and the response's close handler (the request's
     * hang-up). An HTTP/2 stream has no such connection to itself and is reset as a stream.
     */
    static void abort(HttpServerResponse resp, HttpConnection connection) {
        if (connection instanceof Http1xServerConnection http1) { // an HTTP/2 connection carries other streams too
            Channel channel = http1.channel();
            channel.config().setOption(ChannelOption.SO_LINGER, 0);
            channel.eventLoop().execute(() -> channel.unsafe().close(channel.voidPromise()));
        } else {
            resp.reset();
        }
    }

    /**
     * The request's headers as routing reads them (lower-case names), the client key's secret replaced by the name
     * the catalog gives the key: {@code hash_on_header: Authorization} sticks by client key (Kong's consumer), never
     * by the secret. The header was dropped, so such a group accepted the setting and
     * never stuck (found by hunt9).
     */
    private static Map<String, String> routingHeaders(HttpServerRequest req, String keyName) {
        Map<String, String> headers = new HashMap<>();
        req.headers().forEach(e -> headers.put(e.getKey().toLowerCase(Locale.ROOT), e.getValue()));
        headers.put("authorization", keyName);
        return headers;
    }

    static RequestFacts facts(Hedgerow h, Org org, ApiRequest request, Map<String, String> headers) {
        if (request instanceof EmbeddingsRequest e) {
            return RequestFacts.of(e, h.tokens(), headers);
        }
        ChatRequest chat = (ChatRequest) request;
        // prefix affinity is the auto strategy's alone: other groups skip the second tokenizer pass and the hashing
        return RequestFacts.of(chat, h.tokens(), h.prefixes(), headers,
                org.group(chat.model()).strategy() == Strategy.AUTO);
    }

    /**
     * {@code prefix} and 24 base-62 characters (about 143 random bits) from one draw of the secure random. A chat
     * request's is its answer's {@code id}, so it begins as OpenAI's do ({@code chatcmpl-hr}); an embeddings answer
     * has no id, and its request's ({@code emb-hr}) is in the headers only.
     */
    private static String newId(String prefix) {
        byte[] bytes = new byte[24];
        RANDOM.get().nextBytes(bytes);   // one call: a draw per character cost more than the rest of the id
        StringBuilder sb = new StringBuilder(prefix.length() + 24).append(prefix);
        for (byte b : bytes) {
            // 256 is not a multiple of 62: the alphabet's first 8 characters are 5/4 as likely (under 0.1 bit lost)
            sb.append(ID_CHARS.charAt((b & 0xff) % ID_CHARS.length()));
        }
        return sb.toString();
    }

    private static SecureRandom generator() {
        try {
            return SecureRandom.getInstance("DRBG");
        } catch (NoSuchAlgorithmException e) {
            return new SecureRandom();
        }
    }

    /**
     * Writes the dispatcher's output to the Vert.x response; everything is dropped once the client is gone. The
     * response turns chunked at its first {@code write}; an answer that ends without one (a whole JSON answer or an
     * error) goes out with a content-length, head and body in one write.
     */
    private static final class ResponseSink implements ClientSink {
        /**
         * The most of an answer a client may leave unread before it is taken for gone: the gateway reads its upstream
         * as the provider writes (nothing holds a provider back), so a client that stopped reading had the whole answer
         * buffered for it, hundreds of MB. A client reading at any network speed has a few KB waiting at most; one this
         * far behind has not read for minutes of generation.
         */
        static final int MAX_UNREAD_BYTES = 8 * 1024 * 1024;

        private final HttpServerResponse resp;
        private final HttpConnection connection;
        /**
         * HTTP/2: the stream's write queue is full as soon as the client's flow-control window is (64 KiB by default),
         * and Vert.x ignores the queue size set for it; so the bytes written since the stream last stopped taking
         * them are counted here ({@link #behind}), and only {@link #MAX_UNREAD_BYTES} of them cut the client off. A
         * client that fell a window behind for a second lost its answer (found by hunt22).
         */
        private final boolean http2;
        private final AtomicLong behind = new AtomicLong();
        /** The request's hang-up, set once it is dispatched. */
        volatile Runnable gone = () -> { };
        private boolean cut;

        ResponseSink(HttpServerResponse resp, HttpConnection connection, boolean http2) {
            this.resp = resp;
            this.connection = connection;
            this.http2 = http2;
            resp.setWriteQueueMaxSize(MAX_UNREAD_BYTES);
            if (http2) {
                resp.drainHandler(v -> behind.set(0));   // the client's window opened again: it is reading
            }
        }

        /** Whether the client left {@link #MAX_UNREAD_BYTES} unread, once {@code written} more bytes were queued. */
        private boolean tooFarBehind(int written) {
            if (!resp.writeQueueFull()) {
                return false;
            }
            return !http2 || behind.addAndGet(written) > MAX_UNREAD_BYTES;
        }

        private boolean open() {
            return !resp.closed() && !resp.ended();
        }

        @Override
        public void head(int status, Map<String, String> headers) {
            if (resp.closed()) {
                return;
            }
            resp.setStatusCode(status);
            headers.forEach(resp::putHeader);
        }

        @Override
        public void write(byte[] bytes) {
            if (open()) {
                if (!resp.headWritten()) {
                    resp.setChunked(true);
                }
                resp.write(Buffer.buffer(bytes));
                if (!cut && tooFarBehind(bytes.length)) {
                    cutOff();
                }
            }
        }

        /**
         * The client left {@link #MAX_UNREAD_BYTES} unread: its connection is reset and the request ends as its hang-up
         * (499, the upstream hung up on), once the dispatch call writing now has returned.
         */
        private void cutOff() {
            cut = true;
            System.getLogger("dev.hedgerow.gateway").log(System.Logger.Level.WARNING, "a client left over "
                    + MAX_UNREAD_BYTES + " bytes of its answer unread: it is taken for gone and its connection reset");
            abort(resp, connection);
            Context ctx = Vertx.currentContext();
            if (ctx != null) {
                ctx.runOnContext(v -> gone.run());
            } else {
                gone.run();
            }
        }

        @Override
        public void end() {
            if (open()) {
                resp.end();
            }
        }

        @Override
        public void end(byte[] last) {
            if (open()) {
                resp.end(Buffer.buffer(last));
            }
        }
    }
}
