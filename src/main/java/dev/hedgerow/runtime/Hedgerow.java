package dev.hedgerow.runtime;

import dev.hedgerow.audit.AuditLog;
import dev.hedgerow.catalog.CatalogService;
import dev.hedgerow.dispatch.Dispatcher;
import dev.hedgerow.routing.Router;
import dev.hedgerow.routing.TokenCounter;
import dev.hedgerow.routing.PrefixHasher;
import dev.hedgerow.state.StateStore;

import java.time.InstantSource;

/**
 * One gateway instance's core, assembled from plain parts (no framework types): the function edges call into
 * this. Several can run in one JVM (tests run two "instances" on one Redis this way). Thread-safe.
 */
public record Hedgerow(StateStore store, CatalogService catalog, Router router, Dispatcher dispatcher,
                       AuditLog audit, TokenCounter tokens, PrefixHasher prefixes, InstantSource clock) {
}
