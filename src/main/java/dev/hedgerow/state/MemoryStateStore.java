package dev.hedgerow.state;

import dev.hedgerow.time.Ticker;
import io.smallrye.mutiny.Uni;

import java.time.Duration;
import java.time.InstantSource;
import java.time.LocalDate;
import java.util.ArrayList;
import java.util.Collection;
import java.util.Collections;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Optional;
import java.util.Set;
import java.util.SortedMap;
import java.util.TreeMap;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ConcurrentMap;
import java.util.concurrent.ConcurrentSkipListMap;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicReference;
import java.util.concurrent.atomic.AtomicReferenceArray;
import java.util.function.Function;

/**
 * The embedded {@link StateStore} for a single process. It keeps what {@link RedisStateStore} keeps in Redis, with the
 * same rules (Kong breaker counting, TTL cooldowns, lease expiry, usage buckets, sliding hedge buckets), but held per
 * entity instead of per key: a route's health, leases, usage and blobs sit in one {@code RouteState}, an org's hedge
 * buckets, ledger and audit stream in one {@code OrgState}. Time comes only from the injected {@link Ticker}, so a
 * test moves a fake ticker to expire cooldowns, leases, probe slots and holds.
 *
 * <p>Thread-safe without a store-wide lock: the calls every request makes (snapshot, leases, usage, blobs, hedge
 * counts, ledger, rotation cursor) are lock-free (immutable values swapped by compare-and-set, concurrent maps), so
 * an event loop is never parked behind another thread that was preempted while holding a lock. A route's health
 * (breaker count, cooldown, probe slot, Retry-After hold) is one immutable value, so each health operation is atomic
 * as the Redis script is. Only rare calls (catalog, audit) take a lock, their own. Route, org and group entries are
 * created on first write and kept for the life of the store (one small object per catalog route, org and group);
 * what they hold expires as in Redis, dropped when touched. The other expiring keys (affinity, org blobs, locks) are
 * also swept every {@value #SWEEP_EVERY} writes. Every returned {@link Uni} is already completed.
 */
public final class MemoryStateStore implements StateStore {

    private static final int SWEEP_EVERY = 4096;
    /** An expiry instant that never comes; {@link #NONE} is one that has always passed (nothing stored). */
    private static final long NO_EXPIRY = Long.MAX_VALUE;
    private static final long NONE = Long.MIN_VALUE;

    private final Ticker ticker;
    private final StateTuning tuning;
    private final InstantSource clock;
    private final ConcurrentHashMap<String, RouteState> routes = new ConcurrentHashMap<>();
    private final ConcurrentHashMap<String, OrgState> orgs = new ConcurrentHashMap<>();
    private final ConcurrentHashMap<GroupKey, AtomicReference<Cursor>> cursors = new ConcurrentHashMap<>();
    /** Single expiring values under their {@link StateKeys} names: affinity, org blobs, locks. */
    private final ConcurrentHashMap<String, Timed> keys = new ConcurrentHashMap<>();
    private final AtomicInteger writesSinceSweep = new AtomicInteger();
    /** Catalog documents by org and every org ever listed; guarded by {@code catalogs}. */
    private final Map<String, VersionedDoc> catalogs = new HashMap<>();
    private final Set<String> orgIds = new LinkedHashSet<>();

    public MemoryStateStore(Ticker ticker) {
        this(ticker, StateTuning.DEFAULTS);
    }

    public MemoryStateStore(Ticker ticker, StateTuning tuning) {
        this(ticker, tuning, InstantSource.system());
    }

    /** @param clock stamps operator flags ({@link #putRouteFlag}), as Redis' clock does there */
    public MemoryStateStore(Ticker ticker, StateTuning tuning, InstantSource clock) {
        this.ticker = Objects.requireNonNull(ticker, "ticker");
        this.tuning = Objects.requireNonNull(tuning, "tuning");
        this.clock = Objects.requireNonNull(clock, "clock");
    }

    /**
     * A value and the ticker instant (nanos) it dies at. Compared by identity, so a compare-and-set or conditional
     * remove on a map only succeeds on the very value it read.
     */
    private static final class Timed {
        final Object value;
        final long expiresAt;

        Timed(Object value, long expiresAt) {
            this.value = value;
            this.expiresAt = expiresAt;
        }

        boolean live(long now) {
            return expiresAt > now;
        }
    }

    /**
     * A route's breaker, probe slot and Retry-After hold (the Redis keys fails, lastfail, cool, probe, ra), each with
     * the instant it expires ({@link #NONE}: absent). Immutable: a health operation computes the next value and swaps
     * it in by compare-and-set.
     */
    private record Health(long fails, long failsUntil, long lastFailUntil, long coolUntil, String probeOwner,
                          long probeUntil, long holdUntil) {
        static final Health CLEAR = new Health(0, NONE, NONE, NONE, null, NONE, NONE);

        long fails(long now) {
            return failsUntil > now ? fails : 0;
        }

        boolean cooling(long now) {
            return coolUntil > now;
        }

        boolean probeTaken(long now) {
            return probeUntil > now;
        }

        boolean probeHeldBy(String owner, long now) {
            return probeTaken(now) && owner.equals(probeOwner);
        }

        Health withProbe(String owner, long until) {
            return new Health(fails, failsUntil, lastFailUntil, coolUntil, owner, until, holdUntil);
        }
    }

    /** Usage bucket contents (the Redis hash p, c, cost) and the instant the bucket dies at. Immutable. */
    private record UsageCell(long prompt, long completion, double cost, long expiresAt) {
        /** A cell taken out of its map: an add that finds it starts a new cell instead. */
        static final UsageCell DEAD = new UsageCell(0, 0, 0, NONE);
    }

    /** One hedge bucket (the Redis hash r, h) with its bucket number. Immutable. */
    private record HedgeCell(long bucket, long requests, long hedges) {
        /** {@code cell} (null, or an older bucket's: starts from zero) with more requests and hedges in {@code bucket}. */
        static HedgeCell add(HedgeCell cell, long bucket, long requests, long hedges) {
            return cell != null && cell.bucket == bucket
                    ? new HedgeCell(bucket, cell.requests + requests, cell.hedges + hedges)
                    : new HedgeCell(bucket, requests, hedges);
        }
    }

    private record Cursor(long value, long expiresAt) {
    }

    private record GroupKey(String orgId, String alias) {
    }

    private static final class RouteState {
        final AtomicReference<Health> health = new AtomicReference<>(Health.CLEAR);
        /** Lease id to the instant it expires (the Redis sorted set). */
        final ConcurrentHashMap<String, Long> leases = new ConcurrentHashMap<>();
        /** Bucket number to cell: a usage window is one sub-map. */
        final ConcurrentSkipListMap<Long, AtomicReference<UsageCell>> usage = new ConcurrentSkipListMap<>();
        final ConcurrentHashMap<String, Timed> blobs = new ConcurrentHashMap<>();
    }

    private static final class OrgState {
        /** Hedge window (ms) to its ring of {@link StateTuning#HEDGE_BUCKETS} buckets, indexed by bucket number. */
        final ConcurrentHashMap<Long, AtomicReferenceArray<HedgeCell>> hedges = new ConcurrentHashMap<>();
        /** UTC day to alias to that day's totals; days beyond the retention are dropped as new days come. */
        final ConcurrentSkipListMap<LocalDate, ConcurrentHashMap<String, AtomicReference<LedgerEntry>>> ledger =
                new ConcurrentSkipListMap<>();
        /** UTC day to {@code <writer>|<alias>} to the last write number applied (see addLedgerOnce); pruned alike. */
        final ConcurrentSkipListMap<LocalDate, ConcurrentHashMap<String, Long>> ledgerWriters =
                new ConcurrentSkipListMap<>();
        /**
         * The audit streams, oldest first: request events, and operators' ({@link AuditRecord#operators}). Both and
         * the id clock they share are guarded by {@code audit}.
         */
        final List<AuditRecord> audit = new ArrayList<>();
        final List<AuditRecord> adminAudit = new ArrayList<>();
        long lastAuditMillis = -1;
        long auditSeq;
    }

    // ---- catalog ----------------------------------------------------------------------------------------------

    @Override
    public Uni<Map<String, Long>> catalogVersions() {
        Map<String, Long> out = new HashMap<>();
        synchronized (catalogs) {
            for (String org : orgIds) {
                VersionedDoc doc = catalogs.get(org);
                if (doc != null) {
                    out.put(org, doc.version());
                }
            }
        }
        return done(out);
    }

    @Override
    public Uni<Optional<VersionedDoc>> orgCatalog(String orgId) {
        synchronized (catalogs) {
            return done(Optional.ofNullable(catalogs.get(orgId)));
        }
    }

    @Override
    public Uni<Optional<Long>> putOrgCatalog(String orgId, VersionedDoc doc, long expectedVersion) {
        synchronized (catalogs) {
            // Listed before the CAS, exactly as in Redis, where hr:orgs lives in another slot than the catalog.
            orgIds.add(orgId);
            VersionedDoc stored = catalogs.get(orgId);
            long current = stored == null ? 0 : stored.version();
            if (current != expectedVersion) {
                return done(Optional.empty());
            }
            long next = current + 1;
            catalogs.put(orgId, doc.withVersion(next));
            return done(Optional.of(next));
        }
    }

    // ---- route health -----------------------------------------------------------------------------------------

    @Override
    public Uni<Map<String, RouteSnapshot>> snapshot(Collection<String> routeIds, Duration usageWindow) {
        Map<String, RouteSnapshot> out = new LinkedHashMap<>();
        long now = ticker.nanos();
        for (String id : routeIds) {
            RouteState r = routes.get(id);
            out.put(id, r == null ? RouteSnapshot.empty(id) : snapshotOf(id, r, usageWindow, now));
        }
        return done(out);
    }

    private RouteSnapshot snapshotOf(String routeId, RouteState r, Duration window, long now) {
        Health h = r.health.get();
        Map<String, String> blobs = new HashMap<>();
        r.blobs.forEach((name, t) -> {
            if (t.live(now)) {
                blobs.put(name, (String) t.value);
            } else {
                r.blobs.remove(name, t);
            }
        });
        return new RouteSnapshot(routeId, h.cooling(now), remainingMillis(h.coolUntil, now), h.fails(now),
                h.probeTaken(now), remainingMillis(h.holdUntil, now), liveLeases(r, now),
                usageSum(r, window, now), Map.copyOf(blobs));
    }

    @Override
    public Uni<BreakerState> recordFailure(String routeId, int maxFails, Duration failTimeout, Duration hold) {
        long ft = ttlMillis(failTimeout);
        long holdMs = hold == null ? 0 : hold.toMillis();
        long now = ticker.nanos();
        Health after = stepHealth(route(routeId), h -> {
            long fails = h.fails(now) + 1;
            // Every failure at or above the threshold (a failed probe included) re-arms the full cooldown.
            long coolUntil = fails >= maxFails ? expiryIn(now, ft) : h.coolUntil;
            // A shorter hold never shortens a longer one already in place.
            long holdUntil = holdMs > 0 ? Math.max(h.holdUntil, expiryIn(now, holdMs)) : h.holdUntil;
            return new Health(fails, expiryIn(now, ft + tuning.idleExpiry().toMillis()), expiryIn(now, ft),
                    coolUntil, null, NONE, holdUntil);
        });
        return done(breaker(after, now, true));
    }

    @Override
    public Uni<BreakerState> recordSuccess(String routeId, int maxFails, Duration failTimeout) {
        long now = ticker.nanos();
        RouteState r = routes.get(routeId);
        if (r == null) {
            return done(breaker(Health.CLEAR, now, false));
        }
        Health after = stepHealth(r, h -> {
            // Kong: the counter resets only when no failure happened within fail_timeout (the marker is gone).
            boolean reset = h.lastFailUntil <= now;
            return new Health(reset ? 0 : h.fails, reset ? NONE : h.failsUntil, h.lastFailUntil, h.coolUntil,
                    null, NONE, h.holdUntil);
        });
        return done(breaker(after, now, false));
    }

    private static BreakerState breaker(Health h, long now, boolean withHold) {
        return new BreakerState(h.fails(now), h.cooling(now), remainingMillis(h.coolUntil, now),
                withHold ? remainingMillis(h.holdUntil, now) : 0);
    }

    @Override
    public Uni<Boolean> tryAcquireProbe(String routeId, int maxFails, Duration ttl, String owner) {
        Objects.requireNonNull(owner, "owner");
        RouteState r = routes.get(routeId);
        if (r == null) {
            return done(false); // no failure was ever counted
        }
        long now = ticker.nanos();
        long until = expiryIn(now, ttlMillis(ttl));
        Health after = stepHealth(r, h -> h.cooling(now) || h.fails(now) < maxFails || h.probeTaken(now)
                ? null : h.withProbe(owner, until));
        return done(after != null);
    }

    @Override
    public Uni<Void> releaseProbe(String routeId, String owner) {
        long now = ticker.nanos();
        stepHealthIfKnown(routeId, h -> h.probeHeldBy(owner, now) ? h.withProbe(null, NONE) : null);
        return done();
    }

    @Override
    public Uni<Void> renewProbe(String routeId, String owner, Duration ttl) {
        long now = ticker.nanos();
        long until = expiryIn(now, ttlMillis(ttl));
        stepHealthIfKnown(routeId, h -> h.probeHeldBy(owner, now) ? h.withProbe(owner, until) : null);
        return done();
    }

    @Override
    public Uni<Long> cooldownRemainingMillis(String routeId) {
        RouteState r = routes.get(routeId);
        return done(r == null ? 0L : remainingMillis(r.health.get().coolUntil, ticker.nanos()));
    }

    @Override
    public Uni<Void> resetHealth(String routeId) {
        stepHealthIfKnown(routeId, h -> Health.CLEAR);
        return done();
    }

    /**
     * Swaps the route's health for {@code step}'s answer by compare-and-set, retrying on a concurrent change; a null
     * answer leaves it as it is. Returns the health stored, or null when {@code step} declined.
     */
    private static Health stepHealth(RouteState r, Function<Health, Health> step) {
        while (true) {
            Health before = r.health.get();
            Health after = step.apply(before);
            if (after == null || r.health.compareAndSet(before, after)) {
                return after;
            }
        }
    }

    private void stepHealthIfKnown(String routeId, Function<Health, Health> step) {
        RouteState r = routes.get(routeId);
        if (r != null) {
            stepHealth(r, step);
        }
    }

    // ---- blobs ------------------------------------------------------------------------------------------------

    @Override
    public Uni<Void> putRouteBlobs(String routeId, List<RouteBlob> blobs) {
        RouteState r = route(routeId);
        long now = ticker.nanos();
        for (RouteBlob b : blobs) {
            long ms = ttlMillis(b.ttl());
            long expiresAt = ms == 0 ? NO_EXPIRY : expiryIn(now, ms);
            if (!b.learned()) {
                r.blobs.put(b.name(), new Timed(b.value(), expiresAt));
                continue;
            }
            // a learned value is stepped from what is held (compare-and-set: no step runs under the map's lock)
            for (RouteBlob w = b; w != null; ) {
                Timed held = r.blobs.get(b.name());
                String value = held != null && held.live(now) ? (String) held.value : null;
                if (!Objects.equals(value, w.expected())) {
                    w = w.over(value);
                } else if (held == null ? r.blobs.putIfAbsent(b.name(), new Timed(w.value(), expiresAt)) == null
                        : r.blobs.replace(b.name(), held, new Timed(w.value(), expiresAt))) {
                    break;
                }
            }
        }
        return done();
    }

    @Override
    public Uni<Long> putRouteFlag(String routeId, String name, String value) {
        RouteState r = route(routeId);
        synchronized (r) {   // the flag and its stamp change together (a Redis script does both at once)
            long at = Math.max(clock.millis(), heldStamp(r, name) + 1);
            r.blobs.put(name, new Timed(value, NO_EXPIRY));
            r.blobs.put(RouteFlags.stampName(name), new Timed(Long.toString(at), NO_EXPIRY));
            return Uni.createFrom().item(at);
        }
    }

    @Override
    public Uni<Optional<Long>> restoreRouteFlag(String routeId, String name, String value, FlagTime when) {
        RouteState r = route(routeId);
        long at = when.stampAt(clock.millis());
        synchronized (r) {
            Timed held = r.blobs.get(name);
            long heldAt = heldStamp(r, name);
            if (held != null && held.live(ticker.nanos()) && heldAt >= at) {
                return Uni.createFrom().item(value.equals(held.value) ? Optional.of(heldAt) : Optional.empty());
            }
            r.blobs.put(name, new Timed(value, NO_EXPIRY));
            r.blobs.put(RouteFlags.stampName(name), new Timed(Long.toString(at), NO_EXPIRY));
            return Uni.createFrom().item(Optional.of(at));
        }
    }

    /** The stamp of a route's flag (0: none). */
    private static long heldStamp(RouteState r, String name) {
        Timed t = r.blobs.get(RouteFlags.stampName(name));
        return t == null ? 0 : RouteFlags.stamp((String) t.value);
    }

    // ---- leases -----------------------------------------------------------------------------------------------

    @Override
    public Uni<Void> acquireLease(String routeId, String leaseId, Duration ttl) {
        route(routeId).leases.put(leaseId, expiryIn(ticker.nanos(), ttlMillis(ttl)));
        return done();
    }

    @Override
    public Uni<Void> renewLease(String routeId, String leaseId, Duration ttl) {
        // Renewing re-adds a lease that already expired: the request is evidently still running.
        return acquireLease(routeId, leaseId, ttl);
    }

    @Override
    public Uni<Void> releaseLease(String routeId, String leaseId) {
        RouteState r = routes.get(routeId);
        if (r != null) {
            r.leases.remove(leaseId);
        }
        return done();
    }

    /** Counts the route's live leases, dropping the expired ones (the "clean on read" of the Redis sorted set). */
    private static int liveLeases(RouteState r, long now) {
        int live = 0;
        for (Map.Entry<String, Long> e : r.leases.entrySet()) {
            if (e.getValue() > now) {
                live++;
            } else {
                r.leases.remove(e.getKey(), e.getValue()); // unless renewed meanwhile
            }
        }
        return live;
    }

    // ---- usage ------------------------------------------------------------------------------------------------

    @Override
    public Uni<Void> addUsage(String routeId, UsageSample sample, Duration window) {
        RouteState r = route(routeId);
        long now = ticker.nanos();
        long bucket = usageBucket(now);
        // as PEXPIRE on the Redis bucket: the bucket lives one window (and one bucket) past its latest add
        long expiresAt = expiryIn(now, Math.max(1, window.toMillis()) + tuning.usageBucketMillis());
        while (true) {
            AtomicReference<UsageCell> ref = r.usage.computeIfAbsent(bucket,
                    b -> new AtomicReference<>(new UsageCell(0, 0, 0, expiresAt)));
            UsageCell cell = ref.get();
            if (cell == UsageCell.DEAD) {
                r.usage.remove(bucket, ref); // swept under us: start the bucket again
                continue;
            }
            UsageCell next = new UsageCell(cell.prompt + sample.promptTokens(),
                    cell.completion + sample.completionTokens(), cell.cost + sample.cost(), expiresAt);
            if (ref.compareAndSet(cell, next)) {
                break;
            }
        }
        dropExpiredUsage(r, now);
        return done();
    }

    /** Drops the oldest buckets while they are expired (a later one expiring first is dropped when it reaches the head). */
    private static void dropExpiredUsage(RouteState r, long now) {
        for (Map.Entry<Long, AtomicReference<UsageCell>> head = r.usage.firstEntry(); head != null;
             head = r.usage.firstEntry()) {
            AtomicReference<UsageCell> ref = head.getValue();
            UsageCell cell = ref.get();
            if (cell != UsageCell.DEAD && (cell.expiresAt > now || !ref.compareAndSet(cell, UsageCell.DEAD))) {
                return; // live, or just added to: keep it
            }
            r.usage.remove(head.getKey(), ref);
        }
    }

    private long usageBucket(long nowNanos) {
        return nowNanos / 1_000_000L / tuning.usageBucketMillis();
    }

    private UsageSample usageSum(RouteState r, Duration window, long now) {
        long bucket = usageBucket(now);
        long n = tuning.usageBuckets(window);
        long p = 0;
        long c = 0;
        double cost = 0;
        for (AtomicReference<UsageCell> ref : r.usage.subMap(bucket - n + 1, true, bucket, true).values()) {
            UsageCell cell = ref.get();
            if (cell.expiresAt > now) {
                p += cell.prompt;
                c += cell.completion;
                cost += cell.cost;
            }
        }
        return p == 0 && c == 0 && cost == 0 ? UsageSample.ZERO : new UsageSample(p, c, cost);
    }

    // ---- group rotation ---------------------------------------------------------------------------------------

    @Override
    public Uni<Long> nextCursors(String orgId, String alias, int n) {
        AtomicReference<Cursor> ref = getOrCreate(cursors, new GroupKey(orgId, alias),
                k -> new AtomicReference<>(new Cursor(0, NONE)));
        long now = ticker.nanos();
        long expiresAt = expiryIn(now, tuning.idleExpiry().toMillis());
        while (true) {
            Cursor c = ref.get();
            Cursor next = new Cursor((c.expiresAt > now ? c.value : 0) + Math.max(1, n), expiresAt);
            if (ref.compareAndSet(c, next)) {
                return done(next.value);
            }
        }
    }

    // ---- hedge budget -----------------------------------------------------------------------------------------

    @Override
    public Uni<Boolean> hedgeBudget(String orgId, boolean spend, double ratio, int minPerWindow, Duration window) {
        HedgeSlot at = hedgeSlot(orgId, window);
        while (true) {
            HedgeCell current = at.cell(); // read first: the spend below succeeds only if it is unchanged
            long requests = 0;
            long hedges = 0;
            for (int i = 0; i < StateTuning.HEDGE_BUCKETS; i++) {
                HedgeCell cell = i == at.slot ? current : at.ring.get(i);
                if (cell != null && cell.bucket > at.bucket - StateTuning.HEDGE_BUCKETS && cell.bucket <= at.bucket) {
                    requests += cell.requests;
                    hedges += cell.hedges;
                }
            }
            boolean allowed = hedges < Math.max(minPerWindow, ratio * requests);
            if (!allowed || !spend || at.add(current, 0, 1)) {
                return done(allowed);
            }
        }
    }

    @Override
    public Uni<Void> refundHedge(String orgId, Duration window) {
        HedgeSlot now = hedgeSlot(orgId, window);
        // from the bucket the hedge was spent in: the current one, or the one before when the refund crossed into a
        // new bucket (taken from the new one, the spend's bucket left the window first and the refund's -1 stayed in
        // it, one hedge more allowed; found by hunt21); nothing when neither holds a hedge
        for (HedgeSlot at : List.of(now, now.previous())) {
            while (true) {
                HedgeCell cell = at.cell();
                if (cell == null || cell.bucket != at.bucket || cell.hedges <= 0) {
                    break;
                }
                if (at.add(cell, 0, -1)) {
                    return done();
                }
            }
        }
        return done();
    }

    @Override
    public Uni<Void> countRequests(String orgId, long n, Duration window) {
        HedgeSlot at = hedgeSlot(orgId, window);
        long add = Math.max(1, n);
        while (!at.add(at.cell(), add, 0)) {
            // another call changed the cell meanwhile: add to its value
        }
        return done();
    }

    /** The org's ring of hedge buckets for a window, the current bucket's number and its slot in the ring. */
    private record HedgeSlot(AtomicReferenceArray<HedgeCell> ring, long bucket, int slot) {
        HedgeCell cell() {
            return ring.get(slot);
        }

        /** The bucket before this one. */
        HedgeSlot previous() {
            return new HedgeSlot(ring, bucket - 1, (int) Math.floorMod(bucket - 1, (long) ring.length()));
        }

        /**
         * Adds to the current bucket by compare-and-set from {@code expected}; false when the slot changed meanwhile.
         * A newer bucket in the slot means this call is a whole window late: nothing to count in, and true.
         */
        boolean add(HedgeCell expected, long requests, long hedges) {
            return expected != null && expected.bucket > bucket
                    || ring.compareAndSet(slot, expected, HedgeCell.add(expected, bucket, requests, hedges));
        }
    }

    private HedgeSlot hedgeSlot(String orgId, Duration window) {
        long windowMs = Math.max(1, window.toMillis());
        AtomicReferenceArray<HedgeCell> ring = getOrCreate(org(orgId).hedges, windowMs,
                w -> new AtomicReferenceArray<>(StateTuning.HEDGE_BUCKETS));
        long bucket = ticker.millis() / StateTuning.hedgeBucketMillis(windowMs);
        return new HedgeSlot(ring, bucket, (int) Math.floorMod(bucket, (long) StateTuning.HEDGE_BUCKETS));
    }

    // ---- audit, ledger, affinity, org blobs -------------------------------------------------------------------

    @Override
    public Uni<String> appendAudit(String orgId, Map<String, String> event, int maxLen) {
        if (event.isEmpty()) {
            return Uni.createFrom().failure(new IllegalArgumentException("an audit event needs at least one field"));
        }
        OrgState org = org(orgId);
        synchronized (org.audit) {
            // Stream ids as Redis makes them: <millis>-<sequence>, strictly increasing.
            long ms = Math.max(ticker.millis(), org.lastAuditMillis);
            org.auditSeq = ms == org.lastAuditMillis ? org.auditSeq + 1 : 0;
            org.lastAuditMillis = ms;
            String id = ms + "-" + org.auditSeq;
            List<AuditRecord> stream = AuditRecord.operators(event) ? org.adminAudit : org.audit;
            stream.add(new AuditRecord(id, Map.copyOf(event)));
            int excess = stream.size() - Math.max(0, maxLen);
            if (excess > 0) {
                stream.subList(0, excess).clear();
            }
            return done(id);
        }
    }

    /** Looks at every event the stream holds: its ids count this process's ticker, not the event's clock. */
    @Override
    public Uni<String> appendAuditOnce(String orgId, Map<String, String> event, int maxLen) {
        OrgState org = org(orgId);
        synchronized (org.audit) {
            for (AuditRecord r : AuditRecord.operators(event) ? org.adminAudit : org.audit) {
                if (r.fields().equals(event)) {
                    return done(r.id());
                }
            }
            return appendAudit(orgId, event, maxLen);
        }
    }

    @Override
    public Uni<List<AuditRecord>> readAudit(String orgId, int limit, AuditStreams streams) {
        OrgState org = orgs.get(orgId);
        if (org == null) {
            return done(List.of());
        }
        synchronized (org.audit) {
            return done(AuditRecord.newestFirst(streams.requests() ? newestOf(org.audit, limit) : List.of(),
                    streams.operators() ? newestOf(org.adminAudit, limit) : List.of(), limit));
        }
    }

    /** The last {@code limit} records of a stream kept oldest first, newest first. */
    private static List<AuditRecord> newestOf(List<AuditRecord> oldestFirst, int limit) {
        List<AuditRecord> out = new ArrayList<>();
        for (int i = oldestFirst.size() - 1; i >= 0 && out.size() < limit; i--) {
            out.add(oldestFirst.get(i));
        }
        return out;
    }

    @Override
    public Uni<Void> addLedger(String orgId, LocalDate day, String alias, LedgerEntry entry) {
        add(org(orgId), day, alias, entry);
        return done();
    }

    @Override
    public Uni<Boolean> addLedgerOnce(String orgId, LocalDate day, String alias, LedgerEntry entry, String writer,
                                      long seq) {
        OrgState org = org(orgId);
        boolean[] added = {false};
        // the marks are kept as long as their day (at least the contract's LEDGER_WRITER_MEMORY_DAYS)
        org.ledgerWriters.headMap(oldestKept(org)).clear();
        // the writer's mark and the add are one step: a write racing its own resend is added once
        getOrCreate(org.ledgerWriters, day, d -> new ConcurrentHashMap<>()).compute(writer + "|" + alias,
                (k, last) -> {
                    if (last != null && seq <= last) {
                        return last;
                    }
                    add(org, day, alias, entry);
                    added[0] = true;
                    return seq;
                });
        return done(added[0]);
    }

    private static void add(OrgState org, LocalDate day, String alias, LedgerEntry entry) {
        var ledger = org.ledger;
        getOrCreate(getOrCreate(ledger, day, d -> new ConcurrentHashMap<>()), alias,
                a -> new AtomicReference<>(LedgerEntry.ZERO)).accumulateAndGet(entry, LedgerEntry::plus);
        ledger.headMap(oldestKept(org)).clear();
    }

    /**
     * The oldest day the ledger keeps: as Redis expires a day {@code LEDGER_RETENTION_DAYS} after it, counted here from
     * the newest day billed (no wall clock).
     */
    private static LocalDate oldestKept(OrgState org) {
        return org.ledger.isEmpty() ? LocalDate.MIN : org.ledger.lastKey().minusDays(LEDGER_RETENTION_DAYS - 1);
    }

    @Override
    public Uni<SortedMap<LocalDate, Map<String, LedgerEntry>>> ledger(String orgId, LocalDate from, LocalDate to) {
        SortedMap<LocalDate, Map<String, LedgerEntry>> out = new TreeMap<>();
        OrgState org = orgs.get(orgId);
        if (org == null || from.isAfter(to)) {
            return done(out);
        }
        org.ledger.subMap(from, true, to, true).forEach((day, aliases) -> {
            Map<String, LedgerEntry> totals = new HashMap<>();
            aliases.forEach((alias, ref) -> {
                LedgerEntry total = ref.get();
                if (total != LedgerEntry.ZERO) { // (an alias whose first add is still under way)
                    totals.put(alias, total);
                }
            });
            if (!totals.isEmpty()) {
                out.put(day, Map.copyOf(totals));
            }
        });
        return done(out);
    }

    @Override
    public Uni<Map<String, List<String>>> affinity(String orgId, List<String> prefixHashes) {
        Map<String, List<String>> out = new LinkedHashMap<>();
        long now = ticker.nanos();
        for (String h : prefixHashes) {
            List<String> routes = liveRoutes(live(StateKeys.affinity(orgId, h), now), now).entrySet().stream()
                    .sorted(Map.Entry.<String, Long>comparingByValue().reversed()).map(Map.Entry::getKey).toList();
            if (!routes.isEmpty()) {
                out.put(h, routes);
            }
        }
        return done(out);
    }

    @Override
    public Uni<Void> putAffinity(String orgId, List<String> prefixHashes, String routeId, Duration ttl) {
        long now = ticker.nanos();
        long expiresAt = expiryOrNever(ttl);
        for (String h : prefixHashes) {
            keys.compute(StateKeys.affinity(orgId, h), (k, held) -> {
                Map<String, Long> routes = new HashMap<>(liveRoutes(held == null ? null : held.value, now));
                routes.put(routeId, expiresAt);
                return new Timed(Map.copyOf(routes), Collections.max(routes.values())); // dies with its last route
            });
            countWrite();
        }
        return done();
    }

    /** An affinity key's routes (route id to expiry) that have not expired. */
    @SuppressWarnings("unchecked")
    private static Map<String, Long> liveRoutes(Object held, long now) {
        if (!(held instanceof Map<?, ?> routes)) {
            return Map.of();
        }
        Map<String, Long> out = new HashMap<>();
        ((Map<String, Long>) routes).forEach((route, at) -> {
            if (at > now) {
                out.put(route, at);
            }
        });
        return out;
    }

    @Override
    public Uni<Optional<String>> getOrgBlob(String orgId, String name) {
        return done(Optional.ofNullable((String) live(StateKeys.orgBlob(orgId, name), ticker.nanos())));
    }

    @Override
    public Uni<Void> putOrgBlob(String orgId, String name, String value, Duration ttl) {
        put(StateKeys.orgBlob(orgId, name), new Timed(value, expiryOrNever(ttl)));
        return done();
    }

    // ---- coordination -----------------------------------------------------------------------------------------

    @Override
    public Uni<Boolean> tryLock(String name, String owner, Duration ttl) {
        String key = StateKeys.lock(name);
        long now = ticker.nanos();
        Timed mine = new Timed(owner, expiryIn(now, ttlMillis(ttl)));
        while (true) {
            Timed held = keys.get(key);
            if (held != null && held.live(now)) {
                return done(false);
            }
            if (held == null ? keys.putIfAbsent(key, mine) == null : keys.replace(key, held, mine)) {
                return done(true);
            }
        }
    }

    @Override
    public Uni<Void> unlock(String name, String owner) {
        String key = StateKeys.lock(name);
        Timed held = keys.get(key);
        if (held != null && owner.equals(held.value)) {
            keys.remove(key, held);
        }
        return done();
    }

    @Override
    public Uni<Long> lockRemainingMillis(String name) {
        Timed held = keys.get(StateKeys.lock(name));
        return done(held == null ? 0L : remainingMillis(held.expiresAt, ticker.nanos()));
    }

    @Override
    public Uni<Boolean> ping() {
        return done(true);
    }

    // ---- entities and expiring values -------------------------------------------------------------------------

    private RouteState route(String routeId) {
        return getOrCreate(routes, routeId, id -> new RouteState());
    }

    private OrgState org(String orgId) {
        return getOrCreate(orgs, orgId, id -> new OrgState());
    }

    /** The key's value, made on first use; a plain read first, as computeIfAbsent may lock the bin even on a hit. */
    private static <K, V> V getOrCreate(ConcurrentMap<K, V> map, K key, Function<K, V> create) {
        V v = map.get(key);
        return v != null ? v : map.computeIfAbsent(key, create);
    }

    /** The key's value while it lives; an expired one is dropped (unless replaced meanwhile). */
    private Object live(String key, long now) {
        Timed t = keys.get(key);
        if (t == null) {
            return null;
        }
        if (!t.live(now)) {
            keys.remove(key, t);
            return null;
        }
        return t.value;
    }

    private void put(String key, Timed value) {
        keys.put(key, value);
        countWrite();
    }

    /** Counts a write; every {@code SWEEP_EVERY} writes, drops the expired keys. */
    private void countWrite() {
        if (writesSinceSweep.incrementAndGet() % SWEEP_EVERY == 0) {
            long now = ticker.nanos();
            keys.values().removeIf(t -> !t.live(now)); // removes only the value it tested
        }
    }

    private static <T> Uni<T> done(T item) {
        return Uni.createFrom().item(item);
    }

    private static Uni<Void> done() {
        return Uni.createFrom().voidItem();
    }

    private long expiryOrNever(Duration ttl) {
        long ms = ttlMillis(ttl);
        return ms == 0 ? NO_EXPIRY : expiryIn(ticker.nanos(), ms);
    }

    private static long expiryIn(long now, long millis) {
        return now + Math.max(1, millis) * 1_000_000L;
    }

    /** Whole milliseconds from {@code now} to {@code until}, 0 once passed (as PTTL, floored at 0). */
    private static long remainingMillis(long until, long now) {
        return until > now ? (until - now) / 1_000_000L : 0;
    }

    /** A TTL in whole milliseconds; 0 means none (null), anything positive is at least 1 ms, as for Redis PX. */
    static long ttlMillis(Duration ttl) {
        return ttl == null ? 0 : Math.max(1, ttl.toMillis());
    }
}
