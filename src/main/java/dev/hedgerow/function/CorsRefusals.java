package dev.hedgerow.function;

import dev.hedgerow.api.ApiError;
import io.quarkus.vertx.http.runtime.cors.CORSFilter;
import io.vertx.core.http.HttpHeaders;
import io.vertx.core.http.HttpMethod;
import io.vertx.core.http.HttpServerRequest;
import io.vertx.ext.web.Router;
import io.vertx.ext.web.RoutingContext;
import jakarta.enterprise.context.ApplicationScoped;
import jakarta.enterprise.event.Observes;
import org.eclipse.microprofile.config.inject.ConfigProperty;

import java.net.URI;
import java.util.List;
import java.util.Optional;
import java.util.Set;
import java.util.regex.Pattern;
import java.util.stream.Collectors;

/**
 * With CORS on ({@code quarkus.http.cors.enabled}), answers in the OpenAI envelope the two requests Quarkus' CORS
 * filter refuses with an empty 403 (a reason phrase its only explanation): one from an origin it does not allow
 * ({@code cors_origin_not_allowed}), and one from an allowed origin with a method {@code quarkus.http.cors.methods}
 * does not list ({@code cors_method_not_allowed}). The filter ends such a response itself, so the decision is taken
 * here, just before it (order -301; the filter runs at -300), by the filter's own rules: an origin is allowed when
 * {@code origins} is {@code *} or {@code /.*&#47;}, lists it, matches one of its {@code /regex/} entries (through the
 * filter's own parser and matcher), or is the server's own origin; a method is checked only for an origin allowed
 * through the list and for a request that is not a preflight. Whatever it allows goes on to the filter, which then
 * answers the preflight and adds the headers as before. Thread-safe.
 */
@ApplicationScoped
public class CorsRefusals {
    /** Just before Quarkus' CORS filter, a {@code FilterBuildItem} of priority 300 mounted at order -300. */
    static final int ORDER = -301;

    @ConfigProperty(name = "quarkus.http.cors.enabled", defaultValue = "false")
    boolean enabled;

    @ConfigProperty(name = "quarkus.http.cors.origins")
    Optional<List<String>> origins;

    @ConfigProperty(name = "quarkus.http.cors.methods")
    Optional<List<String>> methods;

    /** Adds {@code Origin} to the response's {@code Vary} (all its lines, joined) unless it is there already. */
    static void varyOnOrigin(io.vertx.core.http.HttpServerResponse resp) {
        List<String> vary = resp.headers().getAll(HttpHeaders.VARY).stream()
                .flatMap(line -> java.util.Arrays.stream(line.split(","))).map(String::trim)
                .filter(v -> !v.isEmpty()).collect(Collectors.toList());
        if (vary.stream().noneMatch(v -> v.equalsIgnoreCase("origin") || v.equals("*"))) {
            vary.add(HttpHeaders.ORIGIN.toString());
            resp.headers().set(HttpHeaders.VARY, String.join(", ", vary));
        }
    }

    void mount(@Observes Router router) {
        if (!enabled) {
            return;
        }
        boolean anyOrigin = origins.isPresent() && origins.get().size() == 1
                && (origins.get().get(0).equals("*") || origins.get().get(0).equals("/.*/"));
        List<Pattern> patterns = anyOrigin ? List.of() : CORSFilter.parseAllowedOriginsRegex(origins);
        Set<HttpMethod> allowedMethods = CORSFilter.isConfiguredWithWildcard(methods) ? null
                : methods.get().stream().map(HttpMethod::valueOf).collect(Collectors.toUnmodifiableSet());
        router.route().order(ORDER).handler(ctx -> {
            // every answer depends on the origin (the filter echoes the caller's, even under '*'; a refusal; none
            // without one): a shared cache must not give one origin's answer to another (found by hunt22)
            ctx.addHeadersEndHandler(v -> varyOnOrigin(ctx.response()));
            String origin = ctx.request().getHeader(HttpHeaders.ORIGIN);
            if (origin == null) {
                ctx.next();
                return;
            }
            boolean listed = anyOrigin || origins.isPresent() && (origins.get().contains(origin)
                    || CORSFilter.isOriginAllowedByRegex(patterns, origin));
            if (!listed && !sameOrigin(ctx.request(), origin)) {
                JsonReplies.refuseUnread(ctx, new ApiError(403, "permission_error", "cors_origin_not_allowed",
                        "Requests from origin '" + origin + "' are not allowed: cross-origin calls are accepted from "
                                + "the origins in quarkus.http.cors.origins (QUARKUS_HTTP_CORS_ORIGINS).", null, null));
                return;
            }
            HttpMethod method = ctx.request().method();
            if (listed && allowedMethods != null && !preflight(ctx.request()) && !allowedMethods.contains(method)) {
                // from an allowed origin: the page may read why
                ctx.response().putHeader(HttpHeaders.ACCESS_CONTROL_ALLOW_ORIGIN, origin).putHeader(HttpHeaders.VARY,
                        HttpHeaders.ORIGIN);
                JsonReplies.refuseUnread(ctx, new ApiError(403, "permission_error", "cors_method_not_allowed",
                        "Cross-origin " + method + " requests are not allowed: the methods in quarkus.http.cors.methods "
                                + "(QUARKUS_HTTP_CORS_METHODS) are " + String.join(", ", methods.get()) + ".", null,
                        null));
                return;
            }
            ctx.next();
        });
    }

    /** As the filter tells one: an OPTIONS naming the method or headers of the request it precedes. */
    private static boolean preflight(HttpServerRequest req) {
        return req.method().equals(HttpMethod.OPTIONS)
                && (req.getHeader(HttpHeaders.ACCESS_CONTROL_REQUEST_METHOD) != null
                || req.getHeader(HttpHeaders.ACCESS_CONTROL_REQUEST_HEADERS) != null);
    }

    /**
     * The filter's same-origin rule: the origin is the request's scheme, {@code ://} and its Host header as sent, or
     * names the same host with the same port (a missing port being the scheme's default) and no path.
     */
    static boolean sameOrigin(HttpServerRequest req, String origin) {
        String scheme = req.scheme();
        if (scheme == null || !origin.startsWith(scheme + "://")) {
            return false;
        }
        String host = req.host();
        if (host != null && origin.length() == scheme.length() + 3 + host.length()
                && origin.startsWith(host, scheme.length() + 3)) {
            return true;
        }
        URI self;
        URI other;
        try {
            self = URI.create(req.absoluteURI());
            other = URI.create(origin);
        } catch (IllegalArgumentException | NullPointerException e) {
            return false;
        }
        if (!other.getPath().isEmpty() || self.getHost() == null || !self.getHost().equals(other.getHost())) {
            return false;
        }
        if (self.getPort() == other.getPort()) {
            return true;
        }
        if (self.getPort() != -1 && other.getPort() != -1) {
            return false;
        }
        int standard = "http".equals(self.getScheme()) ? 80 : "https".equals(self.getScheme()) ? 443 : -2;
        return (self.getPort() == standard || self.getPort() == -1)
                && (other.getPort() == standard || other.getPort() == -1);
    }
}
