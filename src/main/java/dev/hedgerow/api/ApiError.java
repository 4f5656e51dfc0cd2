package dev.hedgerow.api;

import com.fasterxml.jackson.databind.node.JsonNodeFactory;
import com.fasterxml.jackson.databind.node.ObjectNode;

/**
 * An error in the OpenAI envelope {@code {"error":{"message","type","code","param"}}}, with its HTTP status and
 * what it tells the client about retrying ({@link RetryAdvice}: its headers). Immutable.
 *
 * @param retry null means {@link RetryAdvice#clientRule()} (no retry header)
 */
public record ApiError(int status, String type, String code, String message, String param, RetryAdvice retry) {

    public ApiError {
        if (retry == null) {
            retry = RetryAdvice.clientRule();
        }
    }

    public static ApiError invalidRequest(String message, String param) {
        return new ApiError(400, "invalid_request_error", "invalid_request", message, param, null);
    }

    public static ApiError invalidRequest(String code, String message, String param) {
        return new ApiError(400, "invalid_request_error", code, message, param, null);
    }

    public static ApiError unauthorized() {
        return unauthorized("a key of your organization");
    }

    /** 401 for a bearer credential that is not {@code what} (e.g. the prober's token). */
    public static ApiError unauthorized(String what) {
        return new ApiError(401, "invalid_request_error", "invalid_api_key",
                "Incorrect API key provided. Send 'Authorization: Bearer <key>' with " + what + ".", null, null);
    }

    public static ApiError modelNotFound(String alias) {
        return new ApiError(404, "invalid_request_error", "model_not_found",
                "The model '" + alias + "' does not exist or you do not have access to it.", "model", null);
    }

    /** The alias names embeddings models, which answer no chat completions (OpenAI answers such a call 404). */
    public static ApiError notAChatModel(String alias) {
        return new ApiError(404, "invalid_request_error", "not_a_chat_model", "The model '" + alias
                + "' is an embeddings model and is not supported in the v1/chat/completions endpoint.", "model", null);
    }

    /**
     * The alias names chat models, which answer no embeddings requests (the mirror of {@link #notAChatModel}, with
     * its status).
     */
    public static ApiError notAnEmbeddingsModel(String alias) {
        return new ApiError(404, "invalid_request_error", "not_an_embeddings_model", "The model '" + alias
                + "' is a chat model and is not supported in the v1/embeddings endpoint.", "model", null);
    }

    public static ApiError notFound(String message) {
        return new ApiError(404, "invalid_request_error", "not_found", message, null, null);
    }

    public static ApiError methodNotAllowed(String message) {
        return new ApiError(405, "invalid_request_error", "method_not_allowed", message, null, null);
    }

    /** A bug met by one request: nothing about it reaches the client but that it happened. */
    public static ApiError internal() {
        return new ApiError(500, "server_error", "internal_error", "Internal error.", null, null);
    }

    public static ApiError unsupportedMediaType(String message) {
        return new ApiError(415, "invalid_request_error", "unsupported_media_type", message, null, null);
    }

    public static ApiError tooLarge(long limit) {
        return new ApiError(413, "invalid_request_error", "request_too_large",
                "Request body exceeds the limit of " + limit + " bytes.", null, null);
    }

    /** A request-target (path and query) longer than {@code limit} bytes (RFC 9110: 414 URI Too Long). */
    public static ApiError uriTooLong(long limit) {
        return new ApiError(414, "invalid_request_error", "uri_too_long",
                "The request URI (path and query) exceeds the limit of " + limit + " bytes.", null, null);
    }

    /**
     * 503: no route of {@code alias} can take the request now, {@code why} naming each one's reason; {@code retry}
     * is {@link RetryAdvice.After} when a time is known (the message names it in seconds, as Retry-After does), or
     * {@link RetryAdvice#notSoon()} when only an operator can bring a route back.
     */
    public static ApiError noHealthyProvider(String alias, String why, RetryAdvice retry) {
        return new ApiError(503, "server_error", "no_healthy_provider", "No provider of '" + alias
                + "' can take this request now (" + why + ")"
                + (retry instanceof RetryAdvice.After a ? "; retry after " + a.seconds() + " s." : "."), null,
                retry);
    }

    /**
     * 503 {@code server_shutting_down}: this instance is stopping (SIGTERM). A request that arrives meanwhile is
     * refused with it, and one still running when the grace period ends is ended with it; either may be retried at
     * once (1 s), by which time another instance, or this one restarted, serves it.
     */
    public static ApiError shuttingDown(String message) {
        return new ApiError(503, "server_error", "server_shutting_down", message, null, RetryAdvice.after(1000));
    }

    /**
     * 504 {@code request_timeout}: the request's answer made no progress within its group's {@code request_timeout}
     * (every attempt still running was stopped); the message says how long and what was tried.
     */
    public static ApiError requestTimeout(String message, RetryAdvice.After retry) {
        return new ApiError(504, "server_error", "request_timeout", message, null, retry);
    }

    public static ApiError upstreamExhausted(int status, String message, RetryAdvice.After retry) {
        String code = switch (status) {
            case 503 -> "no_healthy_provider";
            case 504 -> "upstream_timeout";
            default -> "upstream_error";
        };
        return new ApiError(status, "server_error", code, message, null, retry);
    }

    public ApiError withStatus(int s) {
        return new ApiError(s, type, code, message, param, retry);
    }

    public ObjectNode toNode() {
        ObjectNode root = JsonNodeFactory.instance.objectNode();
        ObjectNode e = root.putObject("error");
        e.put("message", message);
        e.put("type", type);
        if (code == null) {
            e.putNull("code");
        } else {
            e.put("code", code);
        }
        if (param == null) {
            e.putNull("param");
        } else {
            e.put("param", param);
        }
        return root;
    }

    public String toJson() {
        return Json.write(toNode());
    }
}
