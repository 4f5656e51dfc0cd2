package dev.hedgerow.state;

import dev.hedgerow.time.Ticker;
import io.smallrye.mutiny.Uni;

import java.time.Duration;
import java.util.ArrayList;
import java.util.Collection;
import java.util.HashMap;
import java.util.Iterator;
import java.util.LinkedHashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Optional;
import java.util.Set;
import java.util.TreeMap;
import java.util.function.Supplier;

/**
 * The embedded {@link StateStore} for a single process: a key/value map with per-key expiry that mirrors what
 * {@link RedisStateStore} keeps in Redis, under the same {@link StateKeys} names and with the same rules (Kong
 * breaker counting, TTL cooldowns, lease expiry, one-minute usage buckets, sliding hedge buckets). Time comes only
 * from the injected {@link Ticker}, so a test moves a fake ticker to expire cooldowns, leases, probe slots and holds.
 *
 * <p>Thread-safe: every operation runs under one lock (operations are a few map lookups, so contention is not an
 * issue for one process). Expired keys are dropped when touched and by a sweep every {@value #SWEEP_EVERY} writes.
 * Every returned {@link Uni} is already completed.
 */
public final class MemoryStateStore implements StateStore {

    private static final int SWEEP_EVERY = 4096;
    private static final long NO_EXPIRY = Long.MAX_VALUE;

    private final Ticker ticker;
    private final StateTuning tuning;
    private final Object lock = new Object();
    private final HashMap<String, Entry> data = new HashMap<>();
    private int writesSinceSweep;
    private long lastAuditMillis = -1;
    private long auditSeq;

    public MemoryStateStore(Ticker ticker) {
        this(ticker, StateTuning.DEFAULTS);
    }

    public MemoryStateStore(Ticker ticker, StateTuning tuning) {
        this.ticker = Objects.requireNonNull(ticker, "ticker");
        this.tuning = Objects.requireNonNull(tuning, "tuning");
    }

    /** A stored value and the ticker instant (nanos) it dies at. */
    private static final class Entry {
        Object value;
        long expiresAt;

        Entry(Object value, long expiresAt) {
            this.value = value;
            this.expiresAt = expiresAt;
        }
    }

    /**
     * Usage bucket contents (the Redis hash p, c, cost) and the ticker instant (nanos) the bucket dies at. A route's
     * buckets live together, bucket number to cell, under its usage prefix (Redis keeps one key per bucket), so a
     * snapshot reads a usage window with one lookup instead of one key per minute of the window.
     */
    private static final class UsageCell {
        long prompt;
        long completion;
        double cost;
        long expiresAt;
    }

    /** Hedge bucket contents (the Redis hash r, h). */
    private static final class HedgeCell {
        long requests;
        long hedges;
    }

    // ---- catalog ----------------------------------------------------------------------------------------------

    @Override
    public Uni<Map<String, Long>> catalogVersions() {
        return locked(() -> {
            Map<String, Long> out = new HashMap<>();
            Set<String> orgs = get(StateKeys.ORGS);
            if (orgs != null) {
                for (String org : orgs) {
                    Long v = get(StateKeys.catalogVersion(org));
                    if (v != null) {
                        out.put(org, v);
                    }
                }
            }
            return out;
        });
    }

    @Override
    public Uni<Optional<VersionedDoc>> orgCatalog(String orgId) {
        return locked(() -> Optional.ofNullable(get(StateKeys.catalog(orgId))));
    }

    @Override
    public Uni<Optional<Long>> putOrgCatalog(String orgId, VersionedDoc doc, long expectedVersion) {
        return locked(() -> {
            // Listed before the CAS, exactly as in Redis, where hr:orgs lives in another slot than the catalog.
            this.<Set<String>>getOrCreate(StateKeys.ORGS, LinkedHashSet::new, NO_EXPIRY).add(orgId);
            Long stored = get(StateKeys.catalogVersion(orgId));
            long current = stored == null ? 0 : stored;
            if (current != expectedVersion) {
                return Optional.empty();
            }
            long next = current + 1;
            put(StateKeys.catalog(orgId), new VersionedDoc(doc.json(), doc.sourceHash(), next), NO_EXPIRY);
            put(StateKeys.catalogVersion(orgId), next, NO_EXPIRY);
            return Optional.of(next);
        });
    }

    // ---- route health -----------------------------------------------------------------------------------------

    @Override
    public Uni<Map<String, RouteSnapshot>> snapshot(Collection<String> routeIds, Duration usageWindow) {
        return locked(() -> {
            Map<String, RouteSnapshot> out = new LinkedHashMap<>();
            for (String id : routeIds) {
                out.put(id, snapshotOf(id, usageWindow));
            }
            return out;
        });
    }

    private RouteSnapshot snapshotOf(String routeId, Duration window) {
        long cool = pttl(StateKeys.cool(routeId));
        Long fails = get(StateKeys.fails(routeId));
        boolean probe = exists(StateKeys.probe(routeId));
        long ra = pttl(StateKeys.retryAfter(routeId));
        int inflight = liveLeases(routeId).size();
        UsageSample usage = usageSum(routeId, window);
        Map<String, String> blobs = new HashMap<>();
        Set<String> names = get(StateKeys.routeBlobIndex(routeId));
        if (names != null) {
            for (Iterator<String> it = names.iterator(); it.hasNext(); ) {
                String name = it.next();
                String v = get(StateKeys.routeBlob(routeId, name));
                if (v == null) {
                    it.remove(); // the blob expired: drop its name from the index, as the Redis script does
                } else {
                    blobs.put(name, v);
                }
            }
        }
        return new RouteSnapshot(routeId, cool >= 0, Math.max(0, cool), fails == null ? 0 : fails, probe,
                Math.max(0, ra), inflight, usage, Map.copyOf(blobs));
    }

    @Override
    public Uni<BreakerState> recordFailure(String routeId, int maxFails, Duration failTimeout) {
        return locked(() -> {
            long ft = ttlMillis(failTimeout);
            Entry e = live(StateKeys.fails(routeId));
            long fails = (e == null ? 0 : (Long) e.value) + 1;
            put(StateKeys.fails(routeId), fails, expiryIn(ft + tuning.idleExpiry().toMillis()));
            put(StateKeys.lastFail(routeId), "1", expiryIn(ft));
            delete(StateKeys.probe(routeId));
            if (fails >= maxFails) {
                // Every failure at or above the threshold (a failed probe included) re-arms the full cooldown.
                put(StateKeys.cool(routeId), "1", expiryIn(ft));
            }
            return breaker(routeId, fails);
        });
    }

    @Override
    public Uni<BreakerState> recordSuccess(String routeId, int maxFails, Duration failTimeout) {
        return locked(() -> {
            delete(StateKeys.probe(routeId));
            // Kong: the counter resets only when no failure happened within fail_timeout (the marker is gone).
            if (!exists(StateKeys.lastFail(routeId))) {
                delete(StateKeys.fails(routeId));
            }
            Long fails = get(StateKeys.fails(routeId));
            return breaker(routeId, fails == null ? 0 : fails);
        });
    }

    private BreakerState breaker(String routeId, long fails) {
        long cool = pttl(StateKeys.cool(routeId));
        return new BreakerState(fails, cool >= 0, Math.max(0, cool));
    }

    @Override
    public Uni<Boolean> tryAcquireProbe(String routeId, int maxFails, Duration ttl, String owner) {
        Objects.requireNonNull(owner, "owner");
        return locked(() -> {
            if (exists(StateKeys.cool(routeId))) {
                return false;
            }
            Long fails = get(StateKeys.fails(routeId));
            if (fails == null || fails < maxFails || exists(StateKeys.probe(routeId))) {
                return false;
            }
            put(StateKeys.probe(routeId), owner, expiryIn(ttlMillis(ttl)));
            return true;
        });
    }

    @Override
    public Uni<Void> releaseProbe(String routeId, String owner) {
        return lockedVoid(() -> {
            String key = StateKeys.probe(routeId);
            if (owner.equals(get(key))) {
                delete(key);
            }
        });
    }

    @Override
    public Uni<Void> renewProbe(String routeId, String owner, Duration ttl) {
        return lockedVoid(() -> {
            String key = StateKeys.probe(routeId);
            if (owner.equals(get(key))) {
                put(key, owner, expiryIn(ttlMillis(ttl)));
            }
        });
    }

    @Override
    public Uni<Void> holdRetryAfter(String routeId, Duration wait) {
        return lockedVoid(() -> {
            long ms = wait == null ? 0 : wait.toMillis();
            // A shorter Retry-After never shortens a longer hold already in place.
            if (ms > 0 && pttl(StateKeys.retryAfter(routeId)) < ms) {
                put(StateKeys.retryAfter(routeId), "1", expiryIn(ms));
            }
        });
    }

    @Override
    public Uni<Long> cooldownRemainingMillis(String routeId) {
        return locked(() -> Math.max(0, pttl(StateKeys.cool(routeId))));
    }

    @Override
    public Uni<Void> resetHealth(String routeId) {
        return lockedVoid(() -> {
            delete(StateKeys.cool(routeId));
            delete(StateKeys.fails(routeId));
            delete(StateKeys.lastFail(routeId));
            delete(StateKeys.probe(routeId));
            delete(StateKeys.retryAfter(routeId));
        });
    }

    // ---- blobs ------------------------------------------------------------------------------------------------

    @Override
    public Uni<Void> putRouteBlobs(String routeId, List<RouteBlob> blobs) {
        return lockedVoid(() -> blobs.forEach(b -> putBlobLocked(routeId, b.name(), b.value(), b.ttl())));
    }

    private void putBlobLocked(String routeId, String name, String value, Duration ttl) {
        long ms = ttlMillis(ttl);
        put(StateKeys.routeBlob(routeId, name), value, ms == 0 ? NO_EXPIRY : expiryIn(ms));
        String indexKey = StateKeys.routeBlobIndex(routeId);
        Entry index = live(indexKey);
        if (index == null) {
            index = put(indexKey, new LinkedHashSet<String>(), ms == 0 ? NO_EXPIRY : expiryIn(ms));
        } else if (ms == 0) {
            index.expiresAt = NO_EXPIRY;
        } else {
            index.expiresAt = Math.max(index.expiresAt, expiryIn(ms)); // the index outlives its longest blob
        }
        @SuppressWarnings("unchecked") Set<String> names = (Set<String>) index.value;
        names.add(name);
    }

    // ---- leases -----------------------------------------------------------------------------------------------

    @Override
    public Uni<Void> acquireLease(String routeId, String leaseId, Duration ttl) {
        return lockedVoid(() -> {
            TreeMap<String, Long> leases = liveLeases(routeId);
            leases.put(leaseId, nowMillis() + ttlMillis(ttl));
            storeLeases(routeId, leases);
        });
    }

    @Override
    public Uni<Void> renewLease(String routeId, String leaseId, Duration ttl) {
        // Renewing re-adds a lease that already expired: the request is evidently still running.
        return acquireLease(routeId, leaseId, ttl);
    }

    @Override
    public Uni<Void> releaseLease(String routeId, String leaseId) {
        return lockedVoid(() -> {
            TreeMap<String, Long> leases = liveLeases(routeId);
            leases.remove(leaseId);
            storeLeases(routeId, leases);
        });
    }

    /** The route's leases with the expired ones removed (the "clean on read" of the Redis sorted set). */
    private TreeMap<String, Long> liveLeases(String routeId) {
        TreeMap<String, Long> leases = get(StateKeys.leases(routeId));
        if (leases == null) {
            return new TreeMap<>();
        }
        long now = nowMillis();
        leases.values().removeIf(expiry -> expiry <= now);
        return leases;
    }

    private void storeLeases(String routeId, TreeMap<String, Long> leases) {
        if (leases.isEmpty()) {
            delete(StateKeys.leases(routeId)); // an empty sorted set does not exist in Redis either
            return;
        }
        long longest = leases.values().stream().mapToLong(Long::longValue).max().orElseThrow();
        put(StateKeys.leases(routeId), leases, expiryIn(longest - nowMillis()));
    }

    // ---- usage ------------------------------------------------------------------------------------------------

    @Override
    public Uni<Void> addUsage(String routeId, UsageSample sample, Duration window) {
        return lockedVoid(() -> {
            long bucket = nowMillis() / tuning.usageBucketMillis();
            String key = StateKeys.usagePrefix(routeId);
            Entry entry = live(key);
            if (entry == null) {
                entry = put(key, new TreeMap<Long, UsageCell>(), NO_EXPIRY);
            }
            @SuppressWarnings("unchecked") TreeMap<Long, UsageCell> cells = (TreeMap<Long, UsageCell>) entry.value;
            long now = ticker.nanos();
            cells.values().removeIf(c -> c.expiresAt <= now);
            UsageCell cell = cells.computeIfAbsent(bucket, b -> new UsageCell());
            cell.prompt += sample.promptTokens();
            cell.completion += sample.completionTokens();
            cell.cost += sample.cost();
            // as PEXPIRE on the Redis bucket: the bucket lives one window (and one bucket) past its latest add
            cell.expiresAt = expiryIn(Math.max(1, window.toMillis()) + tuning.usageBucketMillis());
            long last = 0;
            for (UsageCell c : cells.values()) {
                last = Math.max(last, c.expiresAt);
            }
            entry.expiresAt = last;
        });
    }

    private UsageSample usageSum(String routeId, Duration window) {
        TreeMap<Long, UsageCell> cells = get(StateKeys.usagePrefix(routeId));
        if (cells == null) {
            return UsageSample.ZERO;
        }
        long bucket = nowMillis() / tuning.usageBucketMillis();
        long n = tuning.usageBuckets(window);
        long now = ticker.nanos();
        long p = 0;
        long c = 0;
        double cost = 0;
        for (UsageCell cell : cells.subMap(bucket - n + 1, true, bucket, true).values()) {
            if (cell.expiresAt > now) {
                p += cell.prompt;
                c += cell.completion;
                cost += cell.cost;
            }
        }
        return new UsageSample(p, c, cost);
    }

    // ---- group rotation ---------------------------------------------------------------------------------------

    @Override
    public Uni<Long> nextCursors(String orgId, String alias, int n) {
        return locked(() -> {
            String key = StateKeys.cursor(orgId, alias);
            Long v = get(key);
            long next = (v == null ? 0 : v) + Math.max(1, n);
            put(key, next, expiryIn(tuning.idleExpiry().toMillis()));
            return next;
        });
    }

    // ---- hedge budget -----------------------------------------------------------------------------------------

    @Override
    public Uni<Boolean> hedgeBudget(String orgId, boolean spend, double ratio, int minPerWindow, Duration window) {
        return locked(() -> {
            long windowMs = Math.max(1, window.toMillis());
            long width = StateTuning.hedgeBucketMillis(windowMs);
            long bucket = nowMillis() / width;
            long requests = 0;
            long hedges = 0;
            for (long b = bucket - StateTuning.HEDGE_BUCKETS + 1; b <= bucket; b++) {
                HedgeCell cell = get(StateKeys.hedgeBucket(orgId, windowMs, b));
                if (cell != null) {
                    requests += cell.requests;
                    hedges += cell.hedges;
                }
            }
            boolean allowed = hedges < Math.max(minPerWindow, ratio * requests);
            if (allowed && spend) {
                hedgeCell(orgId, windowMs, width, bucket).hedges++;
            }
            return allowed;
        });
    }

    @Override
    public Uni<Void> countRequests(String orgId, long n, Duration window) {
        return lockedVoid(() -> {
            long windowMs = Math.max(1, window.toMillis());
            long width = StateTuning.hedgeBucketMillis(windowMs);
            hedgeCell(orgId, windowMs, width, nowMillis() / width).requests += Math.max(1, n);
        });
    }

    private HedgeCell hedgeCell(String orgId, long windowMs, long width, long bucket) {
        String key = StateKeys.hedgeBucket(orgId, windowMs, bucket);
        HedgeCell cell = getOrCreate(key, HedgeCell::new, NO_EXPIRY);
        live(key).expiresAt = expiryIn(windowMs + width);
        return cell;
    }

    // ---- audit, ledger, affinity, org blobs -------------------------------------------------------------------

    @Override
    public Uni<String> appendAudit(String orgId, Map<String, String> event, int maxLen) {
        if (event.isEmpty()) {
            return Uni.createFrom().failure(new IllegalArgumentException("an audit event needs at least one field"));
        }
        return locked(() -> {
            // Stream ids as Redis makes them: <millis>-<sequence>, strictly increasing.
            long ms = Math.max(nowMillis(), lastAuditMillis);
            auditSeq = ms == lastAuditMillis ? auditSeq + 1 : 0;
            lastAuditMillis = ms;
            String id = ms + "-" + auditSeq;
            List<AuditRecord> stream = getOrCreate(StateKeys.audit(orgId), ArrayList::new, NO_EXPIRY);
            stream.add(new AuditRecord(id, Map.copyOf(event)));
            int excess = stream.size() - Math.max(0, maxLen);
            if (excess > 0) {
                stream.subList(0, excess).clear();
            }
            return id;
        });
    }

    @Override
    public Uni<List<AuditRecord>> readAudit(String orgId, int limit) {
        return locked(() -> {
            List<AuditRecord> stream = get(StateKeys.audit(orgId));
            List<AuditRecord> out = new ArrayList<>();
            if (stream != null) {
                for (int i = stream.size() - 1; i >= 0 && out.size() < limit; i--) {
                    out.add(stream.get(i));
                }
            }
            return out;
        });
    }

    @Override
    public Uni<Void> addLedger(String orgId, String alias, UsageSample sample) {
        return lockedVoid(() -> {
            Map<String, UsageSample> ledger = getOrCreate(StateKeys.ledger(orgId), HashMap::new, NO_EXPIRY);
            ledger.merge(alias, sample, UsageSample::plus);
        });
    }

    @Override
    public Uni<Map<String, UsageSample>> ledger(String orgId) {
        return locked(() -> {
            Map<String, UsageSample> ledger = get(StateKeys.ledger(orgId));
            return ledger == null ? Map.of() : Map.copyOf(ledger);
        });
    }

    @Override
    public Uni<Map<String, String>> affinity(String orgId, List<String> prefixHashes) {
        return locked(() -> {
            Map<String, String> out = new LinkedHashMap<>();
            for (String h : prefixHashes) {
                String route = get(StateKeys.affinity(orgId, h));
                if (route != null) {
                    out.put(h, route);
                }
            }
            return out;
        });
    }

    @Override
    public Uni<Void> putAffinity(String orgId, List<String> prefixHashes, String routeId, Duration ttl) {
        return lockedVoid(() -> {
            long ms = ttlMillis(ttl);
            for (String h : prefixHashes) {
                put(StateKeys.affinity(orgId, h), routeId, ms == 0 ? NO_EXPIRY : expiryIn(ms));
            }
        });
    }

    @Override
    public Uni<Optional<String>> getOrgBlob(String orgId, String name) {
        return locked(() -> Optional.ofNullable(get(StateKeys.orgBlob(orgId, name))));
    }

    @Override
    public Uni<Void> putOrgBlob(String orgId, String name, String value, Duration ttl) {
        return lockedVoid(() -> {
            long ms = ttlMillis(ttl);
            put(StateKeys.orgBlob(orgId, name), value, ms == 0 ? NO_EXPIRY : expiryIn(ms));
        });
    }

    // ---- coordination -----------------------------------------------------------------------------------------

    @Override
    public Uni<Boolean> tryLock(String name, String owner, Duration ttl) {
        return locked(() -> {
            String key = StateKeys.lock(name);
            if (exists(key)) {
                return false;
            }
            put(key, owner, expiryIn(ttlMillis(ttl)));
            return true;
        });
    }

    @Override
    public Uni<Void> unlock(String name, String owner) {
        return lockedVoid(() -> {
            String key = StateKeys.lock(name);
            if (owner.equals(get(key))) {
                delete(key);
            }
        });
    }

    @Override
    public Uni<Boolean> ping() {
        return Uni.createFrom().item(true);
    }

    // ---- the expiring map -------------------------------------------------------------------------------------

    private <T> Uni<T> locked(Supplier<T> op) {
        T result;
        synchronized (lock) {
            result = op.get();
        }
        return Uni.createFrom().item(result);
    }

    private Uni<Void> lockedVoid(Runnable op) {
        synchronized (lock) {
            op.run();
        }
        return Uni.createFrom().voidItem();
    }

    private long nowMillis() {
        return ticker.millis();
    }

    private long expiryIn(long millis) {
        return ticker.nanos() + Math.max(1, millis) * 1_000_000L;
    }

    /** A TTL in whole milliseconds; 0 means none (null), anything positive is at least 1 ms, as for Redis PX. */
    static long ttlMillis(Duration ttl) {
        return ttl == null ? 0 : Math.max(1, ttl.toMillis());
    }

    private Entry live(String key) {
        Entry e = data.get(key);
        if (e != null && e.expiresAt <= ticker.nanos()) {
            data.remove(key);
            return null;
        }
        return e;
    }

    @SuppressWarnings("unchecked")
    private <T> T get(String key) {
        Entry e = live(key);
        return e == null ? null : (T) e.value;
    }

    @SuppressWarnings("unchecked")
    private <T> T getOrCreate(String key, Supplier<T> create, long expiresAt) {
        Entry e = live(key);
        if (e == null) {
            e = put(key, create.get(), expiresAt);
        }
        return (T) e.value;
    }

    private boolean exists(String key) {
        return live(key) != null;
    }

    /** Remaining life in ms like Redis PTTL: -2 when absent, -1 when it never expires. */
    private long pttl(String key) {
        Entry e = live(key);
        if (e == null) {
            return -2;
        }
        return e.expiresAt == NO_EXPIRY ? -1 : (e.expiresAt - ticker.nanos()) / 1_000_000L;
    }

    private Entry put(String key, Object value, long expiresAt) {
        Entry e = new Entry(value, expiresAt);
        data.put(key, e);
        if (++writesSinceSweep >= SWEEP_EVERY) {
            writesSinceSweep = 0;
            long now = ticker.nanos();
            data.values().removeIf(x -> x.expiresAt <= now);
        }
        return e;
    }

    private void delete(String key) {
        data.remove(key);
    }
}
