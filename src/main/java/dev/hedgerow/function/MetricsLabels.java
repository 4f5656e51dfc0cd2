package dev.hedgerow.function;

import io.micrometer.core.instrument.config.MeterFilter;
import io.smallrye.common.vertx.ContextLocals;
import io.smallrye.common.vertx.VertxContext;
import io.vertx.core.Context;
import io.vertx.core.Vertx;
import jakarta.enterprise.inject.Produces;
import jakarta.inject.Singleton;

import java.util.Set;

/**
 * Keeps the labels of Quarkus' own HTTP server metrics ({@code http_server_requests_seconds}) bounded: the binder tags
 * each request with its method as sent, so anyone, without a key, could add three series per made-up method (the
 * request line allows 64 KiB of one). A method HTTP does not define is tagged {@code OTHER}. Hedgerow's own series take
 * no label from the client ({@link GatewayMetrics}). Quarkus applies every {@link MeterFilter} bean to its registries.
 */
@Singleton
public class MetricsLabels {
    /** RFC 9110's methods and PATCH (RFC 5789). */
    static final Set<String> METHODS = Set.of("GET", "HEAD", "POST", "PUT", "DELETE", "CONNECT", "OPTIONS", "TRACE",
            "PATCH");

    @Produces
    @Singleton
    MeterFilter boundedMethods() {
        return MeterFilter.replaceTagValues("method", m -> METHODS.contains(m) ? m : "OTHER");
    }

    /** The {@code uri} label of a request refused before it was matched to a path Hedgerow serves. */
    public static final String REFUSED_ADMIN = "/admin/{refused}";
    public static final String URI_TOO_LONG = "/{uri-too-long}";
    /** An admin API preflight (OPTIONS) answered before matching. */
    public static final String ADMIN_PREFLIGHT = "/admin/{options}";

    /**
     * Tags the current request's {@code uri} with {@code template}: for a request answered before Quarkus matched it
     * to a resource, whose label was otherwise the path as sent. Any client could add a series per made-up path (an
     * admin path refused for its missing key, a path over 8 KiB refused as too long: up to 64 KiB a label), until
     * Quarkus' cap of 100 URI labels stopped real paths from getting theirs (found by hunt8; hunt27 found the same with
     * a POST to made-up dashboard files and an admin path refused for its method, content type or Accept). Quarkus' binder reads
     * the template from the request's context (its key {@code UrlPathTemplate}, which Quarkus REST sets on a match).
     */
    public static void uriTemplate(String template) {
        Context context = Vertx.currentContext();
        if (context != null && VertxContext.isDuplicatedContext(context)) {
            ContextLocals.put("UrlPathTemplate", template);
        }
    }
}
