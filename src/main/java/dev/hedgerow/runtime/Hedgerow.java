package dev.hedgerow.runtime;

import dev.hedgerow.audit.AuditLog;
import dev.hedgerow.catalog.CatalogService;
import dev.hedgerow.dispatch.Dispatcher;
import dev.hedgerow.routing.LearnedModels;
import dev.hedgerow.routing.Router;
import dev.hedgerow.routing.TokenCounter;
import dev.hedgerow.routing.PrefixHasher;
import dev.hedgerow.state.StateStore;
import dev.hedgerow.upstream.UpstreamClient;

import java.time.InstantSource;

/**
 * One gateway instance's core, assembled from plain parts (no framework types): the function edges call into
 * this. Several can run in one JVM (tests run two "instances" on one Redis this way). Thread-safe.
 *
 * <p>{@code models} is the instance's one {@link LearnedModels} (the prober must learn through the same instance as
 * live traffic, or each would chain its own copy); {@code upstream} is the provider client (the prober calls routes
 * directly).
 */
public record Hedgerow(StateStore store, CatalogService catalog, Router router, Dispatcher dispatcher,
                       AuditLog audit, TokenCounter tokens, PrefixHasher prefixes, InstantSource clock,
                       LearnedModels models, UpstreamClient upstream) {
}
