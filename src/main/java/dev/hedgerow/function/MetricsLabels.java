package dev.hedgerow.function;

import io.micrometer.core.instrument.config.MeterFilter;
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
}
