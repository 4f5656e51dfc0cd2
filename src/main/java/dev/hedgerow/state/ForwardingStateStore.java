package dev.hedgerow.state;

import io.smallrye.mutiny.Uni;

import java.time.Duration;
import java.time.LocalDate;
import java.util.Collection;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Optional;
import java.util.SortedMap;

/**
 * A store that passes every call to another: the base of decorators that change a few operations and leave the rest
 * alone ({@link CachingStateStore}, {@link BatchingStateStore}). Thread-safe when the inner store is.
 */
public abstract class ForwardingStateStore implements StateStore {
    protected final StateStore inner;

    protected ForwardingStateStore(StateStore inner) {
        this.inner = Objects.requireNonNull(inner, "inner");
    }

    /** The store behind this one. */
    public StateStore inner() {
        return inner;
    }

    @Override
    public Uni<Map<String, Long>> catalogVersions() {
        return inner.catalogVersions();
    }

    @Override
    public Uni<Optional<VersionedDoc>> orgCatalog(String orgId) {
        return inner.orgCatalog(orgId);
    }

    @Override
    public Uni<Optional<Long>> putOrgCatalog(String orgId, VersionedDoc doc, long expectedVersion) {
        return inner.putOrgCatalog(orgId, doc, expectedVersion);
    }

    @Override
    public Uni<Map<String, RouteSnapshot>> snapshot(Collection<String> routeIds, Duration usageWindow) {
        return inner.snapshot(routeIds, usageWindow);
    }

    @Override
    public Uni<BreakerState> recordFailure(String routeId, int maxFails, Duration failTimeout, Duration hold) {
        return inner.recordFailure(routeId, maxFails, failTimeout, hold);
    }

    @Override
    public Uni<BreakerState> recordSuccess(String routeId, int maxFails, Duration failTimeout) {
        return inner.recordSuccess(routeId, maxFails, failTimeout);
    }

    @Override
    public Uni<Boolean> tryAcquireProbe(String routeId, int maxFails, Duration ttl, String owner) {
        return inner.tryAcquireProbe(routeId, maxFails, ttl, owner);
    }

    @Override
    public Uni<Void> releaseProbe(String routeId, String owner) {
        return inner.releaseProbe(routeId, owner);
    }

    @Override
    public Uni<Void> renewProbe(String routeId, String owner, Duration ttl) {
        return inner.renewProbe(routeId, owner, ttl);
    }

    @Override
    public Uni<Long> cooldownRemainingMillis(String routeId) {
        return inner.cooldownRemainingMillis(routeId);
    }

    @Override
    public Uni<Void> resetHealth(String routeId) {
        return inner.resetHealth(routeId);
    }

    @Override
    public Uni<Void> putRouteBlobs(String routeId, List<RouteBlob> blobs) {
        return inner.putRouteBlobs(routeId, blobs);
    }

    @Override
    public Uni<Long> putRouteFlag(String routeId, String name, String value) {
        return inner.putRouteFlag(routeId, name, value);
    }

    @Override
    public Uni<Optional<Long>> restoreRouteFlag(String routeId, String name, String value, FlagTime when) {
        return inner.restoreRouteFlag(routeId, name, value, when);
    }

    @Override
    public Uni<Void> acquireLease(String routeId, String leaseId, Duration ttl) {
        return inner.acquireLease(routeId, leaseId, ttl);
    }

    @Override
    public Uni<Void> renewLease(String routeId, String leaseId, Duration ttl) {
        return inner.renewLease(routeId, leaseId, ttl);
    }

    @Override
    public Uni<Void> releaseLease(String routeId, String leaseId) {
        return inner.releaseLease(routeId, leaseId);
    }

    @Override
    public Uni<Void> addUsage(String routeId, UsageSample sample, Duration window) {
        return inner.addUsage(routeId, sample, window);
    }

    @Override
    public Uni<Long> nextCursors(String orgId, String alias, int n) {
        return inner.nextCursors(orgId, alias, n);
    }

    @Override
    public Uni<Boolean> hedgeBudget(String orgId, boolean spend, double ratio, int minPerWindow, Duration window) {
        return inner.hedgeBudget(orgId, spend, ratio, minPerWindow, window);
    }

    @Override
    public long unwrittenLeases(String routeId) {
        return inner.unwrittenLeases(routeId);
    }

    @Override
    public Uni<Void> refundHedge(String orgId, Duration window) {
        return inner.refundHedge(orgId, window);
    }

    @Override
    public Uni<Void> countRequests(String orgId, long n, Duration window) {
        return inner.countRequests(orgId, n, window);
    }

    @Override
    public Uni<String> appendAudit(String orgId, Map<String, String> event, int maxLen) {
        return inner.appendAudit(orgId, event, maxLen);
    }

    @Override
    public Uni<String> appendAuditOnce(String orgId, Map<String, String> event, int maxLen) {
        return inner.appendAuditOnce(orgId, event, maxLen);
    }

    @Override
    public Uni<List<AuditRecord>> readAudit(String orgId, int limit, AuditStreams streams) {
        return inner.readAudit(orgId, limit, streams);
    }

    @Override
    public Uni<Void> addLedger(String orgId, LocalDate day, String alias, LedgerEntry entry) {
        return inner.addLedger(orgId, day, alias, entry);
    }

    @Override
    public Uni<Boolean> addLedgerOnce(String orgId, LocalDate day, String alias, LedgerEntry entry, String writer,
                                      long seq) {
        return inner.addLedgerOnce(orgId, day, alias, entry, writer, seq);
    }

    @Override
    public Uni<SortedMap<LocalDate, Map<String, LedgerEntry>>> ledger(String orgId, LocalDate from, LocalDate to) {
        return inner.ledger(orgId, from, to);
    }

    @Override
    public Uni<Map<String, List<String>>> affinity(String orgId, List<String> prefixHashes) {
        return inner.affinity(orgId, prefixHashes);
    }

    @Override
    public Uni<Void> putAffinity(String orgId, List<String> prefixHashes, String routeId, Duration ttl) {
        return inner.putAffinity(orgId, prefixHashes, routeId, ttl);
    }

    @Override
    public Uni<Optional<String>> getOrgBlob(String orgId, String name) {
        return inner.getOrgBlob(orgId, name);
    }

    @Override
    public Uni<Void> putOrgBlob(String orgId, String name, String value, Duration ttl) {
        return inner.putOrgBlob(orgId, name, value, ttl);
    }

    @Override
    public Uni<Boolean> tryLock(String name, String owner, Duration ttl) {
        return inner.tryLock(name, owner, ttl);
    }

    @Override
    public Uni<Void> unlock(String name, String owner) {
        return inner.unlock(name, owner);
    }

    @Override
    public Uni<Long> lockRemainingMillis(String name) {
        return inner.lockRemainingMillis(name);
    }

    @Override
    public Uni<Boolean> ping() {
        return inner.ping();
    }
}
