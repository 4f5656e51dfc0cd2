package dev.hedgerow.state;

import dev.hedgerow.state.RedisScripts.LuaScript;
import io.smallrye.mutiny.Uni;
import io.vertx.mutiny.redis.client.Command;
import io.vertx.mutiny.redis.client.Redis;
import io.vertx.mutiny.redis.client.RedisConnection;
import io.vertx.mutiny.redis.client.Request;
import io.vertx.mutiny.redis.client.Response;
import io.vertx.redis.client.RedisClientType;

import java.math.BigDecimal;
import java.time.Duration;
import java.time.LocalDate;
import java.time.LocalTime;
import java.time.ZoneOffset;
import java.util.ArrayList;
import java.util.Collection;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Optional;
import java.util.SortedMap;
import java.util.TreeMap;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.Function;

/**
 * The fleet-wide {@link StateStore} on Redis or Redis Cluster, through the Vert.x Mutiny client. Non-blocking
 * throughout. Multi-key updates are Lua scripts ({@link RedisScripts}) sent as EVALSHA with a fallback to EVAL on
 * NOSCRIPT; each script's keys share one hash tag ({@link StateKeys}), so the same code runs on a standalone server
 * and on a cluster. Every expiry (cooldown, probe slot, Retry-After hold, lease, bucket) is a Redis TTL or the
 * server's {@code TIME} inside a script; this class never compares local clocks.
 *
 * <p>{@link #snapshot} is one round trip: on a standalone (or sentinel/replication) client the per-route scripts
 * go out as one pipelined {@code batch}; on a cluster client, where a batch must stay in one slot, they are sent
 * concurrently over one cluster connection (pipelined per node) and combined.
 *
 * <p>Construct with the client the app already has: {@code new RedisStateStore(redis, RedisClientType.STANDALONE)}
 * or {@code RedisClientType.CLUSTER}. The client's pool ({@code maxPoolSize}, {@code maxPoolWaiting}) bounds how
 * many operations may be in flight at once. Thread-safe: the store's only mutable state is two counters of learned
 * writes ({@link #learnedConflicts()}, {@link #learnedDropped()}).
 */
public final class RedisStateStore implements StateStore {

    private final Redis redis;
    private final boolean cluster;
    private final StateTuning tuning;
    private final AtomicLong learnedConflicts = new AtomicLong();
    private final AtomicLong learnedDropped = new AtomicLong();

    public RedisStateStore(Redis redis, RedisClientType type) {
        this(redis, type, StateTuning.DEFAULTS);
    }

    public RedisStateStore(Redis redis, RedisClientType type, StateTuning tuning) {
        this.redis = Objects.requireNonNull(redis, "redis");
        this.cluster = Objects.requireNonNull(type, "type") == RedisClientType.CLUSTER;
        this.tuning = Objects.requireNonNull(tuning, "tuning");
    }

    // ---- catalog ----------------------------------------------------------------------------------------------

    @Override
    public Uni<Map<String, Long>> catalogVersions() {
        return send(Request.cmd(Command.SMEMBERS).arg(StateKeys.ORGS)).flatMap(members -> {
            List<String> orgs = strings(members);
            if (orgs.isEmpty()) {
                return Uni.createFrom().item(Map.<String, Long>of());
            }
            Uni<List<Response>> versions;
            if (cluster) {
                // The Vert.x cluster client does split a cross-slot MGET per slot, but concatenates the partial
                // replies slot by slot, not in key order (seen on 4.5.27): read each version with its own GET.
                List<Request> gets = orgs.stream()
                        .map(o -> Request.cmd(Command.GET).arg(StateKeys.catalogVersion(o))).toList();
                versions = concurrently(gets);
            } else {
                Request mget = Request.cmd(Command.MGET);
                orgs.forEach(o -> mget.arg(StateKeys.catalogVersion(o)));
                versions = send(mget).map(RedisStateStore::items);
            }
            return versions.map(values -> {
                Map<String, Long> out = new HashMap<>();
                for (int i = 0; i < orgs.size(); i++) {
                    Response v = values.get(i);
                    if (v != null) {
                        out.put(orgs.get(i), v.toLong());
                    }
                }
                return out;
            });
        });
    }

    @Override
    public Uni<Optional<VersionedDoc>> orgCatalog(String orgId) {
        Request req = Request.cmd(Command.HMGET).arg(StateKeys.catalog(orgId)).arg("json").arg("source").arg("version")
                .arg("revision").arg("org_source").arg("restored_from");
        return send(req).map(r -> {
            if (r == null || r.get(0) == null || r.get(2) == null) {
                return Optional.empty();
            }
            String source = r.get(1) == null ? null : r.get(1).toString();
            long revision = r.get(3) == null ? 0 : r.get(3).toLong(); // none: stored before revisions, or no revision
            String orgSource = r.get(4) == null ? null : r.get(4).toString();
            long restoredFrom = r.get(5) == null ? 0 : r.get(5).toLong();
            return Optional.of(new VersionedDoc(r.get(0).toString(), source, orgSource, revision,
                    r.get(2).toLong(), restoredFrom));
        });
    }

    @Override
    public Uni<Optional<Long>> putOrgCatalog(String orgId, VersionedDoc doc, long expectedVersion) {
        // hr:orgs is in another slot than the org's keys, so it cannot join the script. Listing the org first
        // means a stored catalog is never missing from catalogVersions(); an org listed without a version is skipped.
        Uni<Response> list = send(Request.cmd(Command.SADD).arg(StateKeys.ORGS).arg(orgId));
        return list.flatMap(x -> eval(RedisScripts.CATALOG_CAS,
                        List.of(StateKeys.catalog(orgId), StateKeys.catalogVersion(orgId)),
                        Long.toString(expectedVersion), doc.json(),
                        doc.sourceHash() == null ? "" : doc.sourceHash(), doc.sourceHash() == null ? "0" : "1",
                        Long.toString(doc.revision()), doc.orgHash() == null ? "" : doc.orgHash(),
                        Long.toString(doc.restoredFrom())))
                .map(r -> r.toLong() < 0 ? Optional.<Long>empty() : Optional.of(r.toLong()));
    }

    // ---- route health -----------------------------------------------------------------------------------------

    @Override
    public Uni<Map<String, RouteSnapshot>> snapshot(Collection<String> routeIds, Duration usageWindow) {
        List<String> ids = List.copyOf(new LinkedHashSet<>(routeIds));
        if (ids.isEmpty()) {
            return Uni.createFrom().item(Map.of());
        }
        String bucketMs = Long.toString(tuning.usageBucketMillis());
        String buckets = Long.toString(tuning.usageBuckets(usageWindow));
        Function<Boolean, List<Request>> requests = bySha -> {
            List<Request> out = new ArrayList<>(ids.size());
            for (String id : ids) {
                out.add(evalRequest(RedisScripts.SNAPSHOT, bySha, snapshotKeys(id), bucketMs, buckets));
            }
            return out;
        };
        Uni<List<Response>> replies = cluster
                ? concurrently(requests.apply(true)).onFailure(RedisStateStore::isNoScript)
                        .recoverWithUni(() -> concurrently(requests.apply(false)))
                : redis.batch(requests.apply(true)).onFailure(RedisStateStore::isNoScript)
                        .recoverWithUni(() -> redis.batch(requests.apply(false)));
        return replies.map(list -> {
            Map<String, RouteSnapshot> out = new LinkedHashMap<>();
            for (int i = 0; i < ids.size(); i++) {
                out.put(ids.get(i), parseSnapshot(ids.get(i), list.get(i)));
            }
            return out;
        });
    }

    private static List<String> snapshotKeys(String id) {
        return List.of(StateKeys.cool(id), StateKeys.fails(id), StateKeys.probe(id), StateKeys.retryAfter(id),
                StateKeys.leases(id), StateKeys.usagePrefix(id), StateKeys.routeBlobIndex(id));
    }

    /**
     * Sends requests concurrently over one connection (a cluster connection keeps one pipelined connection per
     * node), so a many-route snapshot takes one connection from the pool instead of one per route.
     */
    private Uni<List<Response>> concurrently(List<Request> requests) {
        return redis.connect().flatMap(conn -> {
            List<Uni<Response>> sends = new ArrayList<>(requests.size());
            for (Request r : requests) {
                sends.add(conn.send(r));
            }
            return Uni.join().all(sends).andFailFast()
                    .onTermination().call(() -> closeQuietly(conn));
        });
    }

    private static Uni<Void> closeQuietly(RedisConnection conn) {
        return conn.close().onFailure().recoverWithNull();
    }

    private static RouteSnapshot parseSnapshot(String routeId, Response r) {
        long cool = r.get(0).toLong();
        long fails = r.get(1).toLong();
        boolean probe = r.get(2).toLong() == 1;
        long ra = r.get(3).toLong();
        int inflight = r.get(4).toInteger();
        UsageSample usage = new UsageSample(r.get(5).toLong(), r.get(6).toLong(), Double.parseDouble(r.get(7).toString()));
        Map<String, String> blobs = new HashMap<>();
        for (int i = 8; i + 1 < r.size(); i += 2) {
            blobs.put(r.get(i).toString(), r.get(i + 1).toString());
        }
        // PTTL is -2 for a missing key; a present cooldown may report 0 ms in its last millisecond.
        return new RouteSnapshot(routeId, cool >= 0, Math.max(0, cool), fails, probe, Math.max(0, ra), inflight,
                usage, Map.copyOf(blobs));
    }

    @Override
    public Uni<BreakerState> recordFailure(String routeId, int maxFails, Duration failTimeout, Duration hold) {
        long ft = MemoryStateStore.ttlMillis(failTimeout);
        long holdMs = hold == null ? 0 : Math.max(0, hold.toMillis());
        // one script for the count and the hold: two would be two round trips, on two pooled connections perhaps,
        // and another instance could plan the route between them
        return eval(RedisScripts.RECORD_FAILURE, List.of(StateKeys.fails(routeId), StateKeys.lastFail(routeId),
                        StateKeys.probe(routeId), StateKeys.cool(routeId), StateKeys.retryAfter(routeId)),
                Integer.toString(maxFails), Long.toString(ft), Long.toString(ft + tuning.idleExpiry().toMillis()),
                Long.toString(holdMs))
                .map(RedisStateStore::breaker);
    }

    @Override
    public Uni<BreakerState> recordSuccess(String routeId, int maxFails, Duration failTimeout) {
        return eval(RedisScripts.RECORD_SUCCESS, breakerKeys(routeId)).map(RedisStateStore::breaker);
    }

    private static List<String> breakerKeys(String routeId) {
        return List.of(StateKeys.fails(routeId), StateKeys.lastFail(routeId), StateKeys.probe(routeId),
                StateKeys.cool(routeId));
    }

    /** {fails, PTTL(cool)} and, from a failure write, PTTL(ra): a negative PTTL is no key (or none left). */
    private static BreakerState breaker(Response r) {
        long cool = r.get(1).toLong();
        long hold = r.size() > 2 ? r.get(2).toLong() : 0;
        return new BreakerState(r.get(0).toLong(), cool >= 0, Math.max(0, cool), Math.max(0, hold));
    }

    @Override
    public Uni<Boolean> tryAcquireProbe(String routeId, int maxFails, Duration ttl, String owner) {
        Objects.requireNonNull(owner, "owner");
        return eval(RedisScripts.TRY_PROBE,
                List.of(StateKeys.cool(routeId), StateKeys.fails(routeId), StateKeys.probe(routeId)),
                Integer.toString(maxFails), Long.toString(MemoryStateStore.ttlMillis(ttl)), owner)
                .map(r -> r.toLong() == 1);
    }

    @Override
    public Uni<Void> releaseProbe(String routeId, String owner) {
        // compare-and-delete of one key (the route's hash tag): never frees a slot taken by another owner
        return eval(RedisScripts.DELETE_IF_OWNER, List.of(StateKeys.probe(routeId)), owner).replaceWithVoid();
    }

    @Override
    public Uni<Void> renewProbe(String routeId, String owner, Duration ttl) {
        return eval(RedisScripts.PEXPIRE_IF_OWNER, List.of(StateKeys.probe(routeId)), owner,
                Long.toString(MemoryStateStore.ttlMillis(ttl))).replaceWithVoid();
    }

    @Override
    public Uni<Long> cooldownRemainingMillis(String routeId) {
        return send(Request.cmd(Command.PTTL).arg(StateKeys.cool(routeId))).map(r -> Math.max(0, r.toLong()));
    }

    @Override
    public Uni<Void> resetHealth(String routeId) {
        // One DEL of five keys under one hash tag: legal on a cluster.
        return send(Request.cmd(Command.DEL).arg(StateKeys.cool(routeId)).arg(StateKeys.fails(routeId))
                .arg(StateKeys.lastFail(routeId)).arg(StateKeys.probe(routeId)).arg(StateKeys.retryAfter(routeId)))
                .replaceWithVoid();
    }

    // ---- blobs ------------------------------------------------------------------------------------------------

    @Override
    public Uni<Void> putRouteBlobs(String routeId, List<RouteBlob> blobs) {
        return putRouteBlobs(routeId, blobs, 1);
    }

    /** One try; learned blobs Redis held something else for are stepped from it and sent again. */
    private Uni<Void> putRouteBlobs(String routeId, List<RouteBlob> blobs, int attempt) {
        if (blobs.isEmpty()) {
            return Uni.createFrom().voidItem();
        }
        List<String> keys = new ArrayList<>(blobs.size() + 1);
        keys.add(StateKeys.routeBlobIndex(routeId));
        String[] args = new String[blobs.size() * 5];
        Map<String, RouteBlob> byName = new HashMap<>();
        int i = 0;
        for (RouteBlob b : blobs) {
            byName.put(b.name(), b);
            keys.add(StateKeys.routeBlob(routeId, b.name()));
            args[i++] = b.name();
            args[i++] = b.value();
            args[i++] = Long.toString(MemoryStateStore.ttlMillis(b.ttl()));
            args[i++] = !b.learned() ? "p" : b.expected() == null ? "n" : "v";
            args[i++] = b.expected() == null ? "" : b.expected();
        }
        return eval(RedisScripts.PUT_ROUTE_BLOBS, keys, args).flatMap(stale -> {
            if (stale == null || stale.size() == 0) {
                return Uni.createFrom().voidItem();
            }
            learnedConflicts.addAndGet(stale.size() / 2);
            if (attempt >= LEARNED_TRIES) {
                learnedDropped.addAndGet(stale.size() / 2);
                return Uni.createFrom().voidItem();
            }
            List<RouteBlob> again = new ArrayList<>(stale.size() / 2);
            for (int j = 0; j + 1 < stale.size(); j += 2) {
                Response held = stale.get(j + 1);
                RouteBlob next = byName.get(stale.get(j).toString()).over(held == null ? null : held.toString());
                if (next != null) {
                    again.add(next);
                }
            }
            return putRouteBlobs(routeId, again, attempt + 1);
        });
    }

    /**
     * Learned writes (see {@link RouteBlob}) that found Redis holding another value than the one they were stepped
     * from, since start: each was stepped again from what Redis held, or dropped ({@link #learnedDropped()}). A
     * number that grows with traffic says instances (or this instance's event loops) learn from one route at once.
     */
    public long learnedConflicts() {
        return learnedConflicts.get();
    }

    /** Learned steps given up after {@value #LEARNED_TRIES} tries that each found Redis changed again, since start. */
    public long learnedDropped() {
        return learnedDropped.get();
    }

    @Override
    public Uni<Long> putRouteFlag(String routeId, String name, String value) {
        return eval(RedisScripts.PUT_ROUTE_FLAG, flagKeys(routeId, name), name, value,
                RouteFlags.stampName(name)).map(Response::toLong);
    }

    @Override
    public Uni<Optional<Long>> restoreRouteFlag(String routeId, String name, String value, FlagTime when) {
        return eval(RedisScripts.RESTORE_ROUTE_FLAG, flagKeys(routeId, name), name, value,
                RouteFlags.stampName(name), Long.toString(when.at()), Long.toString(when.ageMillis()))
                .map(r -> r == null || r.toLong() < 0 ? Optional.<Long>empty() : Optional.of(r.toLong()));
    }

    private static List<String> flagKeys(String routeId, String name) {
        return List.of(StateKeys.routeBlobIndex(routeId), StateKeys.routeBlob(routeId, name),
                StateKeys.routeBlob(routeId, RouteFlags.stampName(name)));
    }

    // ---- leases -----------------------------------------------------------------------------------------------

    @Override
    public Uni<Void> acquireLease(String routeId, String leaseId, Duration ttl) {
        return eval(RedisScripts.PUT_LEASE, List.of(StateKeys.leases(routeId)), leaseId,
                Long.toString(MemoryStateStore.ttlMillis(ttl)))
                .replaceWithVoid();
    }

    @Override
    public Uni<Void> renewLease(String routeId, String leaseId, Duration ttl) {
        // Renewing re-adds a lease that already expired: the request is evidently still running.
        return acquireLease(routeId, leaseId, ttl);
    }

    @Override
    public Uni<Void> releaseLease(String routeId, String leaseId) {
        return send(Request.cmd(Command.ZREM).arg(StateKeys.leases(routeId)).arg(leaseId)).replaceWithVoid();
    }

    // ---- usage ------------------------------------------------------------------------------------------------

    @Override
    public Uni<Void> addUsage(String routeId, UsageSample sample, Duration window) {
        long ttl = Math.max(1, window.toMillis()) + tuning.usageBucketMillis();
        return eval(RedisScripts.ADD_USAGE, List.of(StateKeys.usagePrefix(routeId)),
                Long.toString(sample.promptTokens()), Long.toString(sample.completionTokens()), decimal(sample.cost()),
                Long.toString(tuning.usageBucketMillis()), Long.toString(ttl))
                .replaceWithVoid();
    }

    // ---- group rotation ---------------------------------------------------------------------------------------

    @Override
    public Uni<Long> nextCursors(String orgId, String alias, int n) {
        return eval(RedisScripts.NEXT_CURSOR, List.of(StateKeys.cursor(orgId, alias)),
                Long.toString(tuning.idleExpiry().toMillis()), Integer.toString(Math.max(1, n)))
                .map(Response::toLong);
    }

    // ---- hedge budget -----------------------------------------------------------------------------------------

    @Override
    public Uni<Boolean> hedgeBudget(String orgId, boolean spend, double ratio, int minPerWindow, Duration window) {
        long windowMs = Math.max(1, window.toMillis());
        long width = StateTuning.hedgeBucketMillis(windowMs);
        return eval(RedisScripts.HEDGE_BUDGET, List.of(StateKeys.hedgePrefix(orgId, windowMs)),
                spend ? "1" : "0", decimal(ratio), Integer.toString(minPerWindow), Long.toString(width),
                Integer.toString(StateTuning.HEDGE_BUCKETS), Long.toString(windowMs + width))
                .map(r -> r.toLong() == 1);
    }

    @Override
    public Uni<Void> refundHedge(String orgId, Duration window) {
        long windowMs = Math.max(1, window.toMillis());
        long width = StateTuning.hedgeBucketMillis(windowMs);
        return eval(RedisScripts.HEDGE_REFUND, List.of(StateKeys.hedgePrefix(orgId, windowMs)), Long.toString(width))
                .replaceWithVoid();
    }

    @Override
    public Uni<Void> countRequests(String orgId, long n, Duration window) {
        long windowMs = Math.max(1, window.toMillis());
        long width = StateTuning.hedgeBucketMillis(windowMs);
        return eval(RedisScripts.HEDGE_COUNT, List.of(StateKeys.hedgePrefix(orgId, windowMs)),
                Long.toString(width), Long.toString(windowMs + width), Long.toString(Math.max(1, n)), "r")
                .replaceWithVoid();
    }

    // ---- audit, ledger, affinity, org blobs -------------------------------------------------------------------

    @Override
    public Uni<String> appendAudit(String orgId, Map<String, String> event, int maxLen) {
        if (event.isEmpty()) {
            return Uni.createFrom().failure(new IllegalArgumentException("an audit event needs at least one field"));
        }
        // Approximate trimming (~) lets Redis drop whole stream nodes: cheap, and keeps at least maxLen entries.
        if (AuditRecord.operators(event)) {
            // rare: its id above both streams' last (RedisScripts.APPEND_ADMIN_AUDIT), so the merged read orders it
            String[] args = new String[1 + 2 * event.size()];
            args[0] = Integer.toString(Math.max(0, maxLen));
            int i = 1;
            for (Map.Entry<String, String> e : event.entrySet()) {
                args[i++] = e.getKey();
                args[i++] = e.getValue();
            }
            return eval(RedisScripts.APPEND_ADMIN_AUDIT, List.of(StateKeys.adminAudit(orgId), StateKeys.audit(orgId)),
                    args).map(Response::toString);
        }
        Request req = Request.cmd(Command.XADD).arg(StateKeys.audit(orgId))
                .arg("MAXLEN").arg("~").arg(Math.max(0, maxLen)).arg("*");
        event.forEach((field, value) -> req.arg(field).arg(value));
        return send(req).map(Response::toString);
    }

    @Override
    public Uni<String> appendAuditOnce(String orgId, Map<String, String> event, int maxLen) {
        if (event.isEmpty()) {
            return Uni.createFrom().failure(new IllegalArgumentException("an audit event needs at least one field"));
        }
        boolean operators = AuditRecord.operators(event);
        String[] args = new String[3 + 2 * event.size()];
        args[0] = Integer.toString(Math.max(0, maxLen));
        args[1] = StateStore.auditOnceSince(event);
        args[2] = operators ? "1" : "0";
        int i = 3;
        for (Map.Entry<String, String> e : event.entrySet()) {
            args[i++] = e.getKey();
            args[i++] = e.getValue();
        }
        List<String> keys = operators ? List.of(StateKeys.adminAudit(orgId), StateKeys.audit(orgId))
                : List.of(StateKeys.audit(orgId), StateKeys.adminAudit(orgId));
        return eval(RedisScripts.APPEND_AUDIT_ONCE, keys, args).map(Response::toString);
    }

    @Override
    public Uni<List<AuditRecord>> readAudit(String orgId, int limit, AuditStreams streams) {
        if (limit <= 0) {
            return Uni.createFrom().item(List.of());
        }
        Uni<List<AuditRecord>> none = Uni.createFrom().item(List.of());
        Uni<List<AuditRecord>> requests = streams.requests() ? auditStream(StateKeys.audit(orgId), limit) : none;
        Uni<List<AuditRecord>> operators = streams.operators() ? auditStream(StateKeys.adminAudit(orgId), limit)
                : none;
        return Uni.combine().all().unis(requests, operators).asTuple()
                .map(t -> AuditRecord.newestFirst(t.getItem1(), t.getItem2(), limit));
    }

    /** One audit stream's newest records first, at most {@code limit}. */
    private Uni<List<AuditRecord>> auditStream(String key, int limit) {
        return send(Request.cmd(Command.XREVRANGE).arg(key).arg("+").arg("-").arg("COUNT").arg(limit))
                .map(r -> {
                    List<AuditRecord> out = new ArrayList<>();
                    if (r != null) {
                        for (Response entry : r) {
                            out.add(new AuditRecord(entry.get(0).toString(), Map.copyOf(pairs(entry.get(1)))));
                        }
                    }
                    return out;
                });
    }

    @Override
    public Uni<Void> addLedger(String orgId, LocalDate day, String alias, LedgerEntry entry) {
        return addLedger(orgId, day, alias, entry, "", 0).replaceWithVoid();
    }

    @Override
    public Uni<Boolean> addLedgerOnce(String orgId, LocalDate day, String alias, LedgerEntry entry, String writer,
                                      long seq) {
        if (writer.isEmpty()) {
            throw new IllegalArgumentException("a writer is named");
        }
        return addLedger(orgId, day, alias, entry, writer + "|" + alias, seq);
    }

    private Uni<Boolean> addLedger(String orgId, LocalDate day, String alias, LedgerEntry entry, String mark,
                                   long seq) {
        UsageSample u = entry.usage();
        long expireAt = day.plusDays(LEDGER_RETENTION_DAYS).toEpochSecond(LocalTime.MIDNIGHT, ZoneOffset.UTC);
        return eval(RedisScripts.ADD_LEDGER, List.of(StateKeys.ledger(orgId, day), StateKeys.ledgerWriters(orgId, day)),
                alias, Long.toString(entry.requests()), Long.toString(u.promptTokens()),
                Long.toString(u.completionTokens()), decimal(u.cost()), Long.toString(expireAt), mark,
                Long.toString(seq), Long.toString(Duration.ofDays(LEDGER_WRITER_MEMORY_DAYS).toSeconds()))
                .map(r -> r.toInteger() == 1);
    }

    @Override
    public Uni<SortedMap<LocalDate, Map<String, LedgerEntry>>> ledger(String orgId, LocalDate from, LocalDate to) {
        List<LocalDate> days = from.isAfter(to) ? List.of() : from.datesUntil(to.plusDays(1)).toList();
        if (days.isEmpty()) {
            return Uni.createFrom().item(new TreeMap<>());
        }
        List<String> keys = days.stream().map(d -> StateKeys.ledger(orgId, d)).toList();
        return eval(RedisScripts.HGETALL_EACH, keys).map(r -> {
            SortedMap<LocalDate, Map<String, LedgerEntry>> out = new TreeMap<>();
            for (int i = 0; i < days.size(); i++) {
                Map<String, LedgerEntry> totals = ledgerDay(pairs(r.get(i)));
                if (!totals.isEmpty()) {
                    out.put(days.get(i), totals);
                }
            }
            return out;
        });
    }

    /** One day's ledger hash ({@code <alias>:n|p|c|cost}) as totals per alias. */
    private static Map<String, LedgerEntry> ledgerDay(Map<String, String> fields) {
        Map<String, long[]> counts = new HashMap<>();
        Map<String, Double> costs = new HashMap<>();
        fields.forEach((field, value) -> {
            int colon = field.lastIndexOf(':');
            String alias = field.substring(0, colon);
            switch (field.substring(colon + 1)) {
                case "n" -> counts.computeIfAbsent(alias, a -> new long[3])[0] = Long.parseLong(value);
                case "p" -> counts.computeIfAbsent(alias, a -> new long[3])[1] = Long.parseLong(value);
                case "c" -> counts.computeIfAbsent(alias, a -> new long[3])[2] = Long.parseLong(value);
                default -> costs.put(alias, Double.parseDouble(value));
            }
        });
        Map<String, LedgerEntry> out = new HashMap<>();
        for (String alias : union(counts.keySet(), costs.keySet())) {
            long[] n = counts.getOrDefault(alias, new long[3]);
            out.put(alias, new LedgerEntry(n[0], new UsageSample(n[1], n[2], costs.getOrDefault(alias, 0.0))));
        }
        return Map.copyOf(out);
    }

    @Override
    public Uni<Map<String, List<String>>> affinity(String orgId, List<String> prefixHashes) {
        if (prefixHashes.isEmpty()) {
            return Uni.createFrom().item(Map.of());
        }
        List<String> keys = prefixHashes.stream().map(h -> StateKeys.affinity(orgId, h)).toList(); // one slot
        return eval(RedisScripts.AFFINITY, keys).map(r -> {
            Map<String, List<String>> out = new LinkedHashMap<>();
            for (int i = 0; i < prefixHashes.size(); i++) {
                Response routes = r.get(i);
                if (routes != null && routes.size() > 0) {
                    List<String> ids = new ArrayList<>(routes.size());
                    routes.forEach(id -> ids.add(id.toString()));
                    out.put(prefixHashes.get(i), List.copyOf(ids));
                }
            }
            return out;
        });
    }

    @Override
    public Uni<Void> putAffinity(String orgId, List<String> prefixHashes, String routeId, Duration ttl) {
        if (prefixHashes.isEmpty()) {
            return Uni.createFrom().voidItem();
        }
        List<String> keys = prefixHashes.stream().map(h -> StateKeys.affinity(orgId, h)).toList();
        return eval(RedisScripts.PUT_AFFINITY, keys, routeId, Long.toString(MemoryStateStore.ttlMillis(ttl)))
                .replaceWithVoid();
    }

    @Override
    public Uni<Optional<String>> getOrgBlob(String orgId, String name) {
        return send(Request.cmd(Command.GET).arg(StateKeys.orgBlob(orgId, name)))
                .map(r -> Optional.ofNullable(r).map(Response::toString));
    }

    @Override
    public Uni<Void> putOrgBlob(String orgId, String name, String value, Duration ttl) {
        Request set = Request.cmd(Command.SET).arg(StateKeys.orgBlob(orgId, name)).arg(value);
        long ms = MemoryStateStore.ttlMillis(ttl);
        if (ms > 0) {
            set.arg("PX").arg(ms);
        }
        return send(set).replaceWithVoid();
    }

    // ---- coordination -----------------------------------------------------------------------------------------

    @Override
    public Uni<Boolean> tryLock(String name, String owner, Duration ttl) {
        return send(Request.cmd(Command.SET).arg(StateKeys.lock(name)).arg(owner).arg("NX")
                .arg("PX").arg(MemoryStateStore.ttlMillis(ttl)))
                .map(Objects::nonNull); // nil when another owner holds it
    }

    @Override
    public Uni<Void> unlock(String name, String owner) {
        return eval(RedisScripts.DELETE_IF_OWNER, List.of(StateKeys.lock(name)), owner).replaceWithVoid();
    }

    @Override
    public Uni<Long> lockRemainingMillis(String name) {
        // PTTL: -2 when the key is gone, -1 when it has no TTL (a lock always has one)
        return send(Request.cmd(Command.PTTL).arg(StateKeys.lock(name))).map(r -> Math.max(0, r.toLong()));
    }

    /**
     * Why this client cannot work with the server it reached, or "" when it can: a cluster client given a server with
     * cluster support off, or a single-server client given a node of a Redis Cluster (which answers most keys with
     * MOVED). Either way every instance would keep its own state, degraded, while ready (found by hunt21). "" when
     * the server does not say ({@code INFO cluster} refused).
     */
    public Uni<String> modeMismatch() {
        return send(Request.cmd(Command.INFO).arg("cluster")).map(r -> {
            String info = r == null ? "" : r.toString();
            boolean enabled = info.contains("cluster_enabled:1");
            if (!info.contains("cluster_enabled:")) {
                return "";
            }
            if (cluster && !enabled) {
                return NOT_A_CLUSTER;
            }
            if (!cluster && enabled) {
                return "REDIS_URL (redis.url) names a node of a Redis Cluster, but HEDGEROW_REDIS_CLUSTER "
                        + "(hedgerow.redis.cluster) is not true: set it, as a single-server client gets MOVED for most keys";
            }
            return "";
        }).onFailure().recoverWithItem(e -> cluster && String.valueOf(e.getMessage()).contains(
                "cluster support disabled") ? NOT_A_CLUSTER : "");
    }

    /** {@link #modeMismatch}: a cluster client (whose first call, CLUSTER SLOTS, such a server refuses) on one server. */
    private static final String NOT_A_CLUSTER = "the Redis server has cluster support disabled, but "
            + "HEDGEROW_REDIS_CLUSTER=true (hedgerow.redis.cluster) asks for a Redis Cluster: unset it for a single Redis "
            + "server";

    @Override
    public Uni<Boolean> ping() {
        return send(Request.cmd(Command.PING)).map(r -> r != null && "PONG".equalsIgnoreCase(r.toString()))
                .onFailure().recoverWithItem(e -> {
                    lastPingFailure = e.getClass().getSimpleName() + ": " + e.getMessage();
                    lastPingRefused = refused(e);
                    return false;
                });
    }

    private volatile String lastPingFailure = "";
    private volatile boolean lastPingRefused;

    /**
     * Whether the last ping that failed found no server listening (a refused connection): one starting up may be
     * there a moment later, where a refused password or certificate will not change.
     */
    public boolean lastPingRefused() {
        return lastPingRefused;
    }

    private static boolean refused(Throwable e) {
        for (Throwable t = e; t != null; t = t.getCause() == t ? null : t.getCause()) {
            if (t instanceof java.net.ConnectException) {
                return true;
            }
        }
        return false;
    }

    /**
     * Why the last ping that failed did ("" if none did): a ping answers false rather than failing, and readiness,
     * whose probes are pings, said only that Redis "did not answer a ping" where a refused certificate or password was
     * the cause (found by the TLS cluster test).
     */
    public String lastPingFailure() {
        return lastPingFailure;
    }

    // ---- plumbing ---------------------------------------------------------------------------------------------

    private Uni<Response> send(Request request) {
        return redis.send(request);
    }

    /** EVALSHA, falling back to EVAL (which also caches the script on that node) when the node lacks it. */
    private Uni<Response> eval(LuaScript script, List<String> keys, String... args) {
        return send(evalRequest(script, true, keys, args))
                .onFailure(RedisStateStore::isNoScript)
                .recoverWithUni(() -> send(evalRequest(script, false, keys, args)));
    }

    private static Request evalRequest(LuaScript script, boolean bySha, List<String> keys, String... args) {
        Request req = bySha
                ? Request.cmd(Command.EVALSHA).arg(script.sha())
                : Request.cmd(Command.EVAL).arg(script.text());
        req.arg(keys.size());
        keys.forEach(req::arg);
        for (String a : args) {
            req.arg(a);
        }
        return req;
    }

    private static boolean isNoScript(Throwable t) {
        String m = t.getMessage();
        return m != null && m.contains("NOSCRIPT");
    }

    /** A plain decimal (Redis and Lua both read it; avoids exponent forms like 1.0E-4). */
    private static String decimal(double d) {
        return BigDecimal.valueOf(d).toPlainString();
    }

    private static List<String> strings(Response r) {
        List<String> out = new ArrayList<>();
        if (r != null) {
            for (Response item : r) {
                out.add(item.toString());
            }
        }
        return out;
    }

    /** The elements of an array reply, nil elements as null. */
    private static List<Response> items(Response r) {
        List<Response> out = new ArrayList<>(r.size());
        for (int i = 0; i < r.size(); i++) {
            out.add(r.get(i));
        }
        return out;
    }

    /** Field/value pairs from a RESP2 flat array or a RESP3 map. */
    private static Map<String, String> pairs(Response r) {
        Map<String, String> out = new LinkedHashMap<>();
        if (r == null) {
            return out;
        }
        if (r.isMap()) {
            for (String k : r.getKeys()) {
                out.put(k, r.get(k).toString());
            }
        } else {
            for (int i = 0; i + 1 < r.size(); i += 2) {
                out.put(r.get(i).toString(), r.get(i + 1).toString());
            }
        }
        return out;
    }

    private static <T> LinkedHashSet<T> union(Collection<T> a, Collection<T> b) {
        LinkedHashSet<T> out = new LinkedHashSet<>(a);
        out.addAll(b);
        return out;
    }
}
