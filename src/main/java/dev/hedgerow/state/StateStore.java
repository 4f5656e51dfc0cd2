package dev.hedgerow.state;

import io.smallrye.mutiny.Uni;

import java.time.Duration;
import java.time.LocalDate;
import java.util.Collection;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.SortedMap;

/**
 * The shared state of the fleet: everything one gateway instance must see of another's decisions. Two
 * implementations pass one contract suite: {@code RedisStateStore} (a real Redis or Redis Cluster) and
 * {@code MemoryStateStore} (the embedded default, one process).
 *
 * <p>Every operation is non-blocking. Keys are built only by {@link StateKeys}; every multi-key operation touches
 * keys of one hash tag (one cluster slot). Cooldowns, probe slots, retry-after holds, leases and capacity reports
 * are TTLs in the store, never clock comparisons between machines. Everything here may be lost and rebuilt from
 * traffic, except the catalog. Implementations are thread-safe.
 */
public interface StateStore {

    // ---- catalog -------------------------------------------------------------------------------------------

    /** Stored catalog version per org, for every org ever stored (one round trip where possible). */
    Uni<Map<String, Long>> catalogVersions();

    /** The org's stored catalog document, if any. */
    Uni<Optional<VersionedDoc>> orgCatalog(String orgId);

    /**
     * Compare-and-set of the org's catalog: writes {@code doc} as version {@code expectedVersion + 1} only when the
     * stored version is still {@code expectedVersion} (0 = never stored). Returns the new version, or empty when
     * another writer got there first. An org stored for the first time takes a version that no earlier life of the
     * store handed out (Redis: its clock in milliseconds; the memory store, whose life is the process's: 1): an
     * instance reloads an org when its version moves, and one still holding a version from before a Redis restart
     * without persistence must not take the org written back since (another instance's mirror, maybe with edits it
     * never saw) for the one it holds (found by hunt7: the fleet stayed split, each instance at "version 1").
     */
    Uni<Optional<Long>> putOrgCatalog(String orgId, VersionedDoc doc, long expectedVersion);

    // ---- route health: Kong-counted breaker, Trifrost cooldown and fleet-wide half-open probe -------------------

    /**
     * Everything ranking needs about these routes, in one batched read; usage is summed over the last
     * {@code usageWindow}. Unknown routes get an empty snapshot.
     */
    Uni<Map<String, RouteSnapshot>> snapshot(Collection<String> routeIds, Duration usageWindow);

    /**
     * Counts one failure: total failures (not consecutive) go up, the "last failure" marker lives for
     * {@code failTimeout}; at {@code maxFails} or more the route cools down for {@code failTimeout}. A probe slot
     * held for this route is released. The same as {@link #recordFailure(String, int, Duration, Duration)} with no
     * hold.
     */
    default Uni<BreakerState> recordFailure(String routeId, int maxFails, Duration failTimeout) {
        return recordFailure(routeId, maxFails, failTimeout, Duration.ZERO);
    }

    /**
     * Counts one failure as {@link #recordFailure(String, int, Duration)} does and, in the same atomic step, holds the
     * route out of rotation for {@code hold} (a provider's capacity refusal with a wait: an upstream 429's
     * Retry-After); a hold never shortens a longer one already in place, and a zero (or null) hold holds nothing. No
     * reader, on any instance, sees the failure counted without its hold: a route the provider just asked to be left
     * alone is never planned in between.
     */
    Uni<BreakerState> recordFailure(String routeId, int maxFails, Duration failTimeout, Duration hold);

    /**
     * Counts one success: the failure counter resets only when no failure happened within the last
     * {@code failTimeout} (Kong); a probe slot held for this route is released.
     */
    Uni<BreakerState> recordSuccess(String routeId, int maxFails, Duration failTimeout);

    /**
     * Takes the route's single half-open probe slot for {@code owner}: succeeds for exactly one caller fleet-wide
     * while the route is out of cooldown but still at {@code maxFails}. The slot expires after {@code ttl} so a dead
     * instance cannot hold it. {@code owner} must be unique per acquisition (a random id): it is what
     * {@link #releaseProbe} checks.
     */
    Uni<Boolean> tryAcquireProbe(String routeId, int maxFails, Duration ttl, String owner);

    /**
     * Gives back a probe slot taken by {@code owner} whose probe came to no verdict (the client hung up, the route's
     * answer was a client error, the attempt lost a race, a bug), so the next request may probe the route at once
     * instead of after the slot's TTL. Compare-and-delete: a slot that is free, or held by another owner (taken
     * after {@code owner}'s expired), is left alone, so releasing is always harmless. A probe that did come to a
     * verdict reports it with {@link #recordSuccess} or {@link #recordFailure} instead, which free the slot
     * themselves.
     */
    Uni<Void> releaseProbe(String routeId, String owner);

    /**
     * Extends the probe slot {@code owner} holds to {@code ttl} from now, for a probe still running (a long stream
     * is judged when it ends, past the TTL it was taken with). A slot that is free or held by another owner is left
     * alone: a renewal never takes or steals a slot.
     */
    Uni<Void> renewProbe(String routeId, String owner, Duration ttl);

    /** Milliseconds until the route's cooldown ends (0 when it is not cooling down). */
    Uni<Long> cooldownRemainingMillis(String routeId);

    /** Clears every health record of the route (admin "reset"). */
    Uni<Void> resetHealth(String routeId);

    // ---- per-route named blobs: latency/TTFT models, capacity reports, verification, standing ------------------

    /** Stores a small named value for a route (e.g. "ttft", "ewma", "capacity"); {@code ttl} null = no expiry. */
    default Uni<Void> putRouteBlob(String routeId, String name, String value, Duration ttl) {
        return putRouteBlobs(routeId, List.of(new RouteBlob(name, value, ttl)));
    }

    /**
     * One named value of {@link #putRouteBlobs}; {@code ttl} null = no expiry.
     *
     * <p>A blob with a {@code step} is <b>learned</b>: {@code value} is {@code step} applied to {@code expected}, the
     * value (null: none) its writer last saw stored. A store that holds another value by the time the write lands
     * (another instance's, or another thread's, landed first) stores {@code step} applied to what it holds instead,
     * retried while that also changes under it (at most {@value #LEARNED_TRIES} tries on Redis; then the step is
     * dropped): learned models are a chain of steps, and a plain last-writer-wins write lost every observation of
     * the instance that wrote first (two instances on one Redis kept 11 of 20 samples, found by hunt10).
     * A store that holds none steps from none: taking the value as it was (to keep a writer's knowledge after a Redis
     * lost its data) counted an observation twice when a write stepped from another's landed before it.
     * {@code step} must be a pure function of its argument (it may run more than once, on any thread).
     */
    record RouteBlob(String name, String value, Duration ttl, String expected,
                     java.util.function.UnaryOperator<String> step) {
        public RouteBlob {
            java.util.Objects.requireNonNull(name, "name");
            java.util.Objects.requireNonNull(value, "value");
        }

        /** A plain value: written over whatever the store holds. */
        public RouteBlob(String name, String value, Duration ttl) {
            this(name, value, ttl, null, null);
        }

        /** Whether this is a learned value ({@code step} given). */
        public boolean learned() {
            return step != null;
        }

        /**
         * This learned blob as stored over {@code held} instead of {@code expected}: {@code step} applied to it
         * (null when the step leaves it as is, so there is nothing to write).
         */
        public RouteBlob over(String held) {
            String next = step.apply(held);
            return next == null || next.equals(held) ? null : new RouteBlob(name, next, ttl, held, step);
        }

        /**
         * Two writes of the same name merged into one, for a batch: a learned pair keeps both steps, so a store
         * holding neither value applies both, each once. One stepped from the other's value is chained in that order,
         * whichever was given first (two threads may queue their steps in the other order than they took them);
         * two stepped from other values are independent, and the later one is stepped from the earlier's value. A
         * plain write wins over what came before it.
         */
        public RouteBlob then(RouteBlob later) {
            if (!learned() || !later.learned()) {
                return later;
            }
            if (java.util.Objects.equals(expected, later.value) && !java.util.Objects.equals(later.expected, value)) {
                return later.chain(this, value);   // later was stepped first: this one was stepped from its value
            }
            String merged = java.util.Objects.equals(later.expected, value) ? later.value : later.step.apply(value);
            return chain(later, merged == null ? value : merged);
        }

        /** This step, then {@code next}'s, from this one's expected value to {@code value}. */
        private RouteBlob chain(RouteBlob next, String value) {
            java.util.function.UnaryOperator<String> first = step;
            java.util.function.UnaryOperator<String> second = next.step;
            return new RouteBlob(name, value, next.ttl, expected, held -> second.apply(first.apply(held)));
        }
    }

    /** How many times Redis is asked to store a learned blob that keeps changing under it before its step is dropped. */
    int LEARNED_TRIES = 4;

    /**
     * Stores several named values of one route in one store call (one round trip and one script on Redis), each
     * with the route's blob index (which lives as long as its longest-lived blob); a name given twice keeps its last
     * value. Not atomic with respect to failure on every implementation, but never observed half-written by a
     * snapshot on Redis.
     */
    Uni<Void> putRouteBlobs(String routeId, List<RouteBlob> blobs);

    /**
     * Writes an operator flag ({@link RouteFlags}: a blob without a TTL) with the time it was set, its stamp: the
     * store's clock in milliseconds, or one past the flag's last stamp when that is not earlier (so a route's stamps
     * only grow whatever the clock does). The stamp is shown in snapshots as the blob
     * {@link RouteFlags#stampName}. Answers the stamp.
     */
    Uni<Long> putRouteFlag(String routeId, String name, String value);

    /**
     * Writes an operator flag ({@link RouteFlags}) set {@code when}, unless the route holds another value of that flag
     * stamped as late or later (a flag held without a stamp counts as stamped 0): a store that lost its data gets back
     * the latest flag an instance saw there, never over one set since, and an older flag another instance wrote back
     * is replaced by a later one. The same value held with an earlier stamp takes the later one. Answers the stamp the
     * route's flag holds afterwards (the one written, or that of the same value held as late), or empty when another
     * value set as late or later holds.
     */
    Uni<Optional<Long>> restoreRouteFlag(String routeId, String name, String value, FlagTime when);

    /**
     * When a flag being written back was set: at a stamp of the store's own clock ({@link #at}, as a snapshot showed
     * it), or {@code ageMillis} ago as the writer timed it (a flag set while the store was unreachable; its writer's
     * ticker measures the age, so no other clock is compared with the store's) but after the flag stamped
     * {@code at - 1}, the one its writer last saw.
     */
    record FlagTime(long at, long ageMillis) {
        static final long NO_AGE = -1;

        public static FlagTime at(long stamp) {
            return new FlagTime(stamp, NO_AGE);
        }

        public static FlagTime ago(long ageMillis, long notBefore) {
            return new FlagTime(notBefore, Math.max(0, ageMillis));
        }

        /** The stamp on a store whose clock reads {@code nowMillis}. */
        public long stampAt(long nowMillis) {
            return ageMillis == NO_AGE ? at : Math.max(at, nowMillis - ageMillis);
        }
    }

    // ---- leases (least connections): in-flight requests counted across instances, never leaking ---------------

    /** Registers an in-flight request on the route; the lease dies by itself after {@code ttl} unless renewed. */
    Uni<Void> acquireLease(String routeId, String leaseId, Duration ttl);

    Uni<Void> renewLease(String routeId, String leaseId, Duration ttl);

    Uni<Void> releaseLease(String routeId, String leaseId);

    // ---- usage over a sliding window (lowest usage) --------------------------------------------------------

    /** Adds usage to the route's current window bucket; windows are one-minute buckets summed over the window. */
    Uni<Void> addUsage(String routeId, UsageSample sample, Duration window);

    // ---- group rotation ------------------------------------------------------------------------------------

    /** Increments and returns the group's rotation cursor (survives catalog and admin writes). */
    default Uni<Long> nextCursor(String orgId, String alias) {
        return nextCursors(orgId, alias, 1);
    }

    /**
     * Takes {@code n} (at least 1) consecutive positions of the group's rotation cursor in one step and returns the
     * last of them (the first is {@code last - n + 1}).
     */
    Uni<Long> nextCursors(String orgId, String alias, int n);

    // ---- per-org: hedge budget, audit stream, usage ledger, prefix affinity, caches ---------------------------

    /**
     * Reports whether a hedge may be spent in the org's sliding hedge window: hedges in window &lt;
     * max(minPerWindow, ratio × requests in window), checked and (with {@code spend} = true) taken in one atomic
     * step. It does not count a request: the dispatcher calls {@link #countRequest} once per primary request
     * (Finagle's retry budget: deposit per request, withdraw per hedge). The window is summed over
     * {@link StateTuning#HEDGE_BUCKETS} buckets of {@code window / 10}.
     */
    Uni<Boolean> hedgeBudget(String orgId, boolean spend, double ratio, int minPerWindow, Duration window);

    /**
     * Gives back one hedge {@link #hedgeBudget} spent that never started (the race was decided while the budget
     * answered): the current bucket's hedge count drops by one, so the window's sum is right again while the spend's
     * bucket is in it (a refund in a later bucket than its spend may count one hedge short for up to a tenth of the
     * window once the spend's bucket has left it).
     */
    Uni<Void> refundHedge(String orgId, Duration window);

    /** Counts one request toward the hedge budget's denominator. */
    default Uni<Void> countRequest(String orgId, Duration window) {
        return countRequests(orgId, 1, window);
    }

    /** Counts {@code n} (at least 1) requests toward the hedge budget's denominator, in one store call. */
    Uni<Void> countRequests(String orgId, long n, Duration window);

    /**
     * Lease acquires of the route this store accepted and has not written yet (a write-behind batch holds them), which
     * a snapshot read made now does not count: 0 for a store that writes as it is called.
     */
    default long unwrittenLeases(String routeId) {
        return 0;
    }

    /**
     * Appends an event (a flat string map) to the org's audit stream, trimmed to about {@code maxLen}. An event whose
     * {@code type} is {@code admin} (an operator's action) goes to a stream of its own, trimmed alike: the request
     * events any client key makes (a refusal costs it nothing) pushed every operator's action out of a shared one in
     * seconds (found by hunt8).
     */
    Uni<String> appendAudit(String orgId, Map<String, String> event, int maxLen);

    /**
     * As {@link #appendAudit}, unless the event's stream already holds the same event (every field equal, in the same
     * order) appended since {@link #AUDIT_ONCE_LOOKBACK} before its {@code time} (an ISO-8601 instant; without one, or
     * in a store whose ids do not count wall-clock time, any it holds): then nothing is appended and that entry's id
     * is the answer. For an event sent again after a call whose outcome is unknown (a timeout: it may have been written
     * all the same).
     */
    Uni<String> appendAuditOnce(String orgId, Map<String, String> event, int maxLen);

    /** How far before an event's own time {@link #appendAuditOnce} looks for it (clocks and late writes). */
    Duration AUDIT_ONCE_LOOKBACK = Duration.ofMinutes(1);

    /** The stream id {@link #appendAuditOnce} starts its search at, {@code <millis>-0}, or "-" for the oldest. */
    static String auditOnceSince(Map<String, String> event) {
        try {
            long ms = java.time.Instant.parse(event.getOrDefault("time", "")).toEpochMilli()
                    - AUDIT_ONCE_LOOKBACK.toMillis();
            return ms > 0 ? ms + "-0" : "-";
        } catch (java.time.format.DateTimeParseException e) {
            return "-";
        }
    }

    /** The org's newest audit events first, of both its streams, at most {@code limit}. */
    default Uni<List<AuditRecord>> readAudit(String orgId, int limit) {
        return readAudit(orgId, limit, AuditStreams.BOTH);
    }

    /** The org's newest audit events first, of the streams named, at most {@code limit}. */
    Uni<List<AuditRecord>> readAudit(String orgId, int limit, AuditStreams streams);

    /**
     * An org's audit streams: the requests' (refusals and requests with a trail) and the operators' (admin actions),
     * kept apart so that a flood of requests cannot push operators' actions out.
     */
    enum AuditStreams {
        BOTH, REQUESTS, OPERATORS;

        /** The stream events of this {@code type} are in ({@code admin}: the operators'), or BOTH for any type. */
        public static AuditStreams of(String type) {
            return type == null ? BOTH : AuditRecord.OWN_STREAM_TYPE.equals(type) ? OPERATORS : REQUESTS;
        }

        boolean requests() {
            return this != OPERATORS;
        }

        boolean operators() {
            return this != REQUESTS;
        }
    }

    /** How long the ledger keeps a day (a year and a month, so a year-over-year comparison still finds it). */
    int LEDGER_RETENTION_DAYS = 400;

    /**
     * Adds billed requests to the org's ledger: {@code entry} is added to the alias's totals for {@code day} (a UTC
     * date). A day is kept {@value #LEDGER_RETENTION_DAYS} days.
     */
    Uni<Void> addLedger(String orgId, LocalDate day, String alias, LedgerEntry entry);

    /** How long the ledger remembers a writer's last write number for a day: see {@link #addLedgerOnce}. */
    int LEDGER_WRITER_MEMORY_DAYS = 7;

    /**
     * As {@link #addLedger}, but a write sent again is added once: {@code writer} (one instance) numbers its writes
     * to each (org, day, alias) in increasing {@code seq}, sends the next only after the store confirmed the one
     * before, and sends a write whose answer it never got again with the same number. A write numbered at or below
     * the last one applied for that writer there is skipped. The last number is remembered at least
     * {@value #LEDGER_WRITER_MEMORY_DAYS} days after the writer's latest write to that day.
     *
     * @return true if the entry was added, false if the write had been applied before
     */
    Uni<Boolean> addLedgerOnce(String orgId, LocalDate day, String alias, LedgerEntry entry, String writer, long seq);

    /**
     * The org's ledger from {@code from} to {@code to}, both included: per day (ascending) the totals of each alias
     * that billed anything that day. Days and aliases with nothing billed are absent.
     */
    Uni<SortedMap<LocalDate, Map<String, LedgerEntry>>> ledger(String orgId, LocalDate from, LocalDate to);

    /**
     * The route ids that served each prefix hash within their TTL, the latest to expire first (hashes no route
     * holds are left out). Every route that served a prefix is kept, not only the last: a prompt prefix many
     * requests share (a system prompt) is cached by every route that served it, and routing chooses among them.
     */
    Uni<Map<String, List<String>>> affinity(String orgId, List<String> prefixHashes);

    /** Adds the route to those that served each prefix hash, for {@code ttl} from now (renewed if it was there). */
    Uni<Void> putAffinity(String orgId, List<String> prefixHashes, String routeId, Duration ttl);

    /** A small org-scoped cache (e.g. description embeddings). */
    Uni<Optional<String>> getOrgBlob(String orgId, String name);

    Uni<Void> putOrgBlob(String orgId, String name, String value, Duration ttl);

    // ---- coordination --------------------------------------------------------------------------------------

    /** A fleet-wide lock that expires after {@code ttl} (e.g. one prober round at a time). */
    Uni<Boolean> tryLock(String name, String owner, Duration ttl);

    Uni<Void> unlock(String name, String owner);

    /**
     * Milliseconds until the lock {@code name} expires, whoever holds it; 0 when it is free. A lock taken and never
     * released works as a fleet-wide mark that lasts its TTL (the prober's minimum interval between rounds), and
     * this says how much of it is left, by the store's own clock.
     */
    Uni<Long> lockRemainingMillis(String name);

    /** Liveness of the store itself (a PING). */
    Uni<Boolean> ping();
}
