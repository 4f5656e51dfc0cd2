package dev.hedgerow.prober;

import io.smallrye.mutiny.Uni;

import java.time.Duration;

/**
 * Fetches a provider's Prometheus metrics text (a plain GET): the prober's one port besides the upstream client.
 * Implementations fail the {@code Uni} on a non-200 answer or after {@code timeout}. Thread-safe.
 */
@FunctionalInterface
public interface MetricsSource {
    Uni<String> fetch(String url, Duration timeout);
}
