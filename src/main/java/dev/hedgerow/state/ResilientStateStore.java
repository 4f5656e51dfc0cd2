package dev.hedgerow.state;

import dev.hedgerow.time.Cancellable;
import dev.hedgerow.time.Scheduler;
import dev.hedgerow.time.Ticker;
import io.smallrye.faulttolerance.api.CircuitBreakerState;
import io.smallrye.faulttolerance.api.Guard;
import io.smallrye.mutiny.Multi;
import io.smallrye.mutiny.Uni;
import io.smallrye.mutiny.infrastructure.Infrastructure;
import io.smallrye.mutiny.subscription.UniEmitter;
import jakarta.enterprise.util.TypeLiteral;

import java.security.SecureRandom;
import java.time.Duration;
import java.time.LocalDate;
import java.time.temporal.ChronoUnit;
import java.util.ArrayList;
import java.util.Collection;
import java.util.Collections;
import java.util.Deque;
import java.util.HashMap;
import java.util.Iterator;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Optional;
import java.util.Set;
import java.util.SortedMap;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ConcurrentLinkedDeque;
import java.util.concurrent.ScheduledFuture;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.Function;
import java.util.function.Supplier;

/**
 * The shared store (Redis) behind a fault-tolerance guard, with a local {@link MemoryStateStore} to fall back on:
 * a Redis outage degrades the fleet to per-instance state but never fails a request (DESIGN.md, "State").
 *
 * <p>Every call to the shared store goes through one SmallRye Fault Tolerance {@link Guard} (programmatic API, so
 * this stays a plain class usable outside CDI): one circuit breaker for the whole store, since Redis is down as a
 * whole, not per key, around a timeout of this class's own ({@link #timed}) that is not fooled by a paused process. A call that fails, times out or is refused by the open breaker is answered by
 * the local store instead. The breaker's state is the degraded signal: {@link #degraded()} is true while it is open
 * or half-open. When Redis answers again the half-open trial calls succeed, the breaker closes and every call goes
 * back to shared state; what was written locally meanwhile (cursors, usage, leases) is simply left behind, as all of
 * it is rebuilt from traffic, but a lease's release the shared store did not take is sent again there
 * ({@link #releaseLease}). Route health written locally (failure counts, cooldowns, probe slots, Retry-After holds)
 * is dropped from the local store as soon as the shared store takes a health write of the route again (any answer is
 * not enough: a Redis at its memory limit answers reads and refuses writes, and until it takes them the local
 * cooldowns are laid over its snapshots, {@link #withLocalHealth}), or once it is no longer in force: from then on
 * the routes are
 * judged there, and a verdict left behind would be out of date, yet back in force at the next outage (a route that has
 * served since, kept out for the rest of a cooldown from the last one).
 *
 * <p>The catalog is the one thing traffic cannot rebuild, so this class keeps a mirror of every org catalog it has
 * read or written. During an outage catalog reads answer from the mirror (the instance keeps its orgs instead of
 * seeing an empty store), and when the store comes back without an org the mirror holds (a restarted Redis without
 * persistence), {@link #catalogVersions()} writes the org back before answering, so no instance ever drops an org
 * because Redis forgot it. A write-back is marked with the version the org had before the loss, and an instance
 * holding a later one (an edit the first instance to write back had not read yet) writes its own over it, counted in
 * {@link #restoredOrgs()}. An admin edit made during an outage is written to the mirror and kept as pending; before the
 * next catalog read from the shared store it is written there, compare-and-set, if the stored org is still the one
 * the edit was made on (by content: a Redis that restarted empty and was re-seeded by another instance holds the same
 * org under another version) or one this instance made on the way (a write the store did not answer in time may have
 * landed all the same), so the edit is neither lost nor reverted by this instance's next refresh. If another
 * edit reached the store meanwhile, that one wins: the pending edit is dropped, logged, and counted in
 * {@link #lostEdits()}, as two conflicting edits cannot both hold.
 *
 * <p>An operator's route flags ({@link RouteFlags}: a route's standing, the operator's verification verdict) are admin
 * edits too, written stamped with the time they were set ({@link StateStore#putRouteFlag}), and mirrored with their
 * stamps: this instance keeps each as the shared store last showed it (in a snapshot, or a write it took). One set
 * during an outage is kept as pending, never in the local store (a copy left there would be back in force at the next
 * outage, over every verdict given since), timed by this instance's ticker, and written to the shared store with the
 * pending catalog edits, stamped there as the store's clock less its age (and past the stamp this instance saw: it was
 * set after that one), unless another value set as late or later is there ({@link StateStore#restoreRouteFlag}): the
 * one set last wins, and a dropped one is counted in {@link #lostEdits()} and told to {@link #onLostEdit}. Snapshots answered locally show the flags as last seen, this outage's over them, so
 * a suspended route stays out of service through an outage. A flag is never deleted ({@link RouteFlags}), so a route
 * the shared store answers without a flag this instance saw there, or with one stamped earlier than the one it saw,
 * lost it (a Redis restarted without its data brought a suspended route back into service; found by hunt7; another
 * instance then wrote back the older flag it had last seen; hunt14): the snapshot is answered with the flag as this
 * instance saw it, and the flag written back unless one set as late is there, logged as a WARN and counted in
 * {@link #restoredFlags()}.
 *
 * <p>Audit events the shared stream could not take are kept too (every operator action; up to
 * {@value #MAX_PENDING_AUDIT} others, the oldest dropped first) and written there, oldest first and each with its own
 * {@code time}, after the pending edits and flags at the next catalog poll the store answers.
 *
 * <p>Thread-safe: the guard is thread-safe, the mirror is a concurrent map, counters are atomic.
 */
public final class ResilientStateStore implements StateStore {

    /**
     * Guard settings.
     *
     * @param timeout          longest wait for one Redis call before answering locally
     * @param window           calls in the breaker's rolling window (SmallRye's request volume threshold)
     * @param failureRatio     share of failed calls in the window that opens the breaker
     * @param openDelay        how long the breaker stays open before letting trial calls through (half-open)
     * @param successThreshold successful trial calls that close it again
     */
    public record Settings(Duration timeout, int window, double failureRatio, Duration openDelay,
                           int successThreshold) {
        /**
         * 1 s per call (Redis answers in well under a millisecond; the bound matters only when the network drops
         * packets, and it must cover a cold client's first connection); open after half of 8 calls failed; try Redis
         * again after 2 s; close after 2 successes.
         */
        public static final Settings DEFAULTS = new Settings(Duration.ofSeconds(1), 8, 0.5, Duration.ofSeconds(2), 2);

        public Settings {
            Objects.requireNonNull(timeout, "timeout");
            Objects.requireNonNull(openDelay, "openDelay");
            if (window < 1 || successThreshold < 1 || failureRatio <= 0 || failureRatio > 1) {
                throw new IllegalArgumentException("window and successThreshold >= 1, failureRatio in (0, 1]");
            }
        }
    }

    private static final TypeLiteral<Uni<Object>> UNI = new TypeLiteral<Uni<Object>>() {
    };

    /**
     * A timeout's timer firing this late means the process did not run meanwhile (paused: Lambda freezes an
     * environment between invocations, or a long GC pause), not that the store was slow.
     */
    static final Duration PAUSE = Duration.ofMillis(200);

    private final StateStore shared;
    private final StateStore local;
    private final Guard guard;
    private final Duration timeout;
    private final Scheduler scheduler;
    /** The breaker's window: this many failed calls in a row open it ({@link #warmUp}). */
    private final int window;
    private final Map<String, VersionedDoc> catalogMirror = new ConcurrentHashMap<>();
    /** Admin edits written only to the mirror (the shared store was unreachable), by org; see the class comment. */
    private final Map<String, PendingEdit> pendingEdits = new ConcurrentHashMap<>();
    private final AtomicLong lostEdits = new AtomicLong();
    /** Audit events the shared stream did not take, oldest first; see {@link #pendAudit}. */
    private final Deque<PendingAudit> pendingAudit = new ConcurrentLinkedDeque<>();
    private final AtomicInteger pendingAuditCount = new AtomicInteger();
    private final AtomicBoolean auditReplaying = new AtomicBoolean();
    private final AtomicLong droppedAudit = new AtomicLong();
    static final int MAX_PENDING_AUDIT = 10_000;
    /** The most audit events kept when operators' actions fill {@link #MAX_PENDING_AUDIT}. */
    static final int MAX_PENDING_OPERATOR_AUDIT = 2 * MAX_PENDING_AUDIT;
    /**
     * Lease and probe-slot releases the shared store has not taken yet; see {@link #releaseLease},
     * {@link #releaseProbe} and {@link #tryAcquireProbe}.
     */
    private final Set<PendingRelease> pendingReleases = ConcurrentHashMap.newKeySet();
    static final int MAX_PENDING_RELEASES = 10_000;
    private final AtomicLong droppedReleases = new AtomicLong();
    private final AtomicBoolean releasesResending = new AtomicBoolean();
    /** Operator flags set only locally during an outage, by route and name. */
    private final Map<FlagKey, PendingFlag> pendingFlags = new ConcurrentHashMap<>();
    /** Operator flags ({@link RouteFlags}) as the shared store last showed them, by route, then name. */
    private final Map<String, Map<String, Flag>> seenFlags = new ConcurrentHashMap<>();
    /**
     * The prober's verification verdict of each route as the shared store last showed it, laid over the local store's
     * snapshots during an outage (unless the local store has one of its own, given since): a route failing
     * verification served the wrong model to every client while Redis was down (found by hunt14). Never written
     * back: the prober gives it again, and it expires there.
     */
    private final Map<String, String> seenVerdicts = new ConcurrentHashMap<>();
    /** Flags being written back ({@link #restoreLost}), so that concurrent snapshots write each once. */
    private final Set<FlagKey> restoring = ConcurrentHashMap.newKeySet();
    private final AtomicLong restoredFlags = new AtomicLong();
    private final AtomicLong restoredOrgs = new AtomicLong();
    private volatile java.util.function.Consumer<LostEdit> lostEditListener = lost -> { };
    /** Times the operator flags set during an outage ({@link PendingFlag}). */
    private final Ticker ticker;
    /** Each (org, day, alias) line's writes to the shared ledger not confirmed yet; see {@link #addLedger}. */
    private final Map<LedgerKey, LedgerLine> ledgerLines = new ConcurrentHashMap<>();
    /** Routes whose health the local store took a write for since the shared store last answered (see the class). */
    private final Set<String> localHealth = ConcurrentHashMap.newKeySet();
    private final AtomicInteger heldLedgerLines = new AtomicInteger();
    /** This instance's name as a ledger writer, and its write numbers (see {@link StateStore#addLedgerOnce}). */
    private final String ledgerWriter = Long.toHexString(new SecureRandom().nextLong());
    private final AtomicLong ledgerSeq = new AtomicLong();
    private final System.Logger log = System.getLogger("dev.hedgerow.state");
    private final AtomicLong fallbacks = new AtomicLong();
    private final AtomicInteger callsInFlight = new AtomicInteger();
    private volatile CircuitBreakerState breaker = CircuitBreakerState.CLOSED;
    private volatile String lastFailure = "";

    public ResilientStateStore(StateStore shared, StateStore local, Settings settings) {
        this(shared, local, settings, Ticker.system());
    }

    /** @param ticker times the operator flags set while the shared store does not answer ({@link PendingFlag}) */
    public ResilientStateStore(StateStore shared, StateStore local, Settings settings, Ticker ticker) {
        this(shared, local, settings, ticker, ResilientStateStore::onWorkerPool);
    }

    /**
     * @param ticker    times calls ({@link #timed}) and the operator flags set while the shared store does not answer
     * @param scheduler runs the calls' timeouts
     */
    public ResilientStateStore(StateStore shared, StateStore local, Settings settings, Ticker ticker,
                               Scheduler scheduler) {
        this.ticker = Objects.requireNonNull(ticker, "ticker");
        this.scheduler = Objects.requireNonNull(scheduler, "scheduler");
        this.shared = Objects.requireNonNull(shared, "shared");
        this.local = Objects.requireNonNull(local, "local");
        this.window = settings.window();
        this.timeout = settings.timeout();
        this.guard = Guard.create()
                .withDescription("hedgerow shared state")
                .withCircuitBreaker()
                .requestVolumeThreshold(settings.window())
                .failureRatio(settings.failureRatio())
                .delay(settings.openDelay().toMillis(), ChronoUnit.MILLIS)
                .successThreshold(settings.successThreshold())
                .onStateChange(this::breakerMoved)
                .done()
                .build();
    }

    /**
     * The guard's breaker moved: leaving shared state and coming back are logged once each (a WARN with why the
     * store did not answer, an INFO), not every half-open try of an outage. Nothing was logged either way, and the
     * readiness check's last failure was the open breaker's own refusal: a wrong password, an unknown host or a
     * closed port started an instance on local state for good without a line saying so (found by hunt7 and hunt8).
     */
    private void breakerMoved(CircuitBreakerState state) {
        CircuitBreakerState before = breaker;
        breaker = state;
        if (before == CircuitBreakerState.CLOSED && state != CircuitBreakerState.CLOSED) {
            log.log(System.Logger.Level.WARNING, "the shared state store does not answer ("
                    + (lastFailure.isEmpty() ? "no answer in time" : lastFailure)
                    + "): serving on this instance's local state until it does");
        } else if (before != CircuitBreakerState.CLOSED && state == CircuitBreakerState.CLOSED) {
            log.log(System.Logger.Level.INFO, "the shared state store answers again: back on shared state");
        }
    }

    /** True while the shared store is considered unreachable and calls are answered from local state. */
    public boolean degraded() {
        return breaker != CircuitBreakerState.CLOSED;
    }

    /** The guard's circuit breaker state: CLOSED (shared), OPEN (local only) or HALF_OPEN (trying Redis again). */
    public String breakerState() {
        return breaker.name();
    }

    /** How many calls were answered by the local store since start. */
    public long fallbacks() {
        return fallbacks.get();
    }

    /** Admin edits (catalogs, route flags) made during an outage and not yet written to the shared store. */
    public int pendingEdits() {
        return pendingEdits.size() + pendingFlags.size();
    }

    /** Admin edits made during an outage that lost to another edit stored meanwhile (see the class comment). */
    public long lostEdits() {
        return lostEdits.get();
    }

    /**
     * Tells {@code listener} of each admin edit made during an outage that is dropped, having lost to an edit stored
     * meanwhile (see the class comment): the app records it in the org's audit log, where the edit itself stood as
     * done (found by hunt14). Called once the shared store answers again.
     */
    public void onLostEdit(java.util.function.Consumer<LostEdit> listener) {
        this.lostEditListener = java.util.Objects.requireNonNull(listener, "listener");
    }

    /**
     * An admin edit made during an outage and dropped: its org, its route ("" for an edit of the org's catalog), and
     * what became of it, in a sentence.
     */
    public record LostEdit(String orgId, String route, String message) {
    }

    /** Operator flags the shared store had lost that this instance wrote back (see the class comment). */
    public long restoredFlags() {
        return restoredFlags.get();
    }

    /**
     * Orgs this instance wrote back over an older copy of them that another instance had written back first, after the
     * shared store lost them (see {@link #orgCatalog}).
     */
    public long restoredOrgs() {
        return restoredOrgs.get();
    }

    /** Learned writes the shared store found changed under them ({@link RedisStateStore#learnedConflicts()}). */
    public long learnedConflicts() {
        return shared instanceof RedisStateStore r ? r.learnedConflicts() : 0;
    }

    /** Learned steps the shared store gave up on ({@link RedisStateStore#learnedDropped()}). */
    public long learnedDropped() {
        return shared instanceof RedisStateStore r ? r.learnedDropped() : 0;
    }

    /** The most recent reason a call fell back, or "" if none did. */
    public String lastFailure() {
        return lastFailure;
    }

    private <T> Uni<T> call(Supplier<Uni<T>> onShared, Supplier<Uni<T>> onLocal) {
        return call(onShared, e -> onLocal.get());
    }

    /** As {@link #call(Supplier, Supplier)}, the fallback told why the shared store did not answer. */
    private <T> Uni<T> call(Supplier<Uni<T>> onShared, Function<Throwable, Uni<T>> onLocal) {
        return guarded(onShared, onLocal);
    }

    /** The shared store's call under the guard, or the local answer when it fails or the guard refuses it. */
    @SuppressWarnings("unchecked")
    private <T> Uni<T> guarded(Supplier<Uni<T>> onShared, Function<Throwable, Uni<T>> onLocal) {
        return Uni.createFrom().deferred(() -> {
            callsInFlight.incrementAndGet();
            CircuitBreakerState at = breaker;
            Uni<Object> guarded = guard.get(() -> (Uni<Object>) (Uni<?>) timed(onShared), UNI);
            return ((Uni<T>) (Uni<?>) guarded).onFailure().recoverWithUni(e -> {
                fallbacks.incrementAndGet();
                if (at != CircuitBreakerState.OPEN
                        && !isBreakerRefusal(e)) {
                    // a call the open breaker refused says nothing of the store: the cause that opened it is kept (a
                    // half-open breaker refuses the calls past its trial ones with that exception too; review16)
                    lastFailure = e.getClass().getSimpleName() + ": " + e.getMessage();
                }
                return onLocal.apply(e);
            }).onTermination().invoke(callsInFlight::decrementAndGet);
        });
    }

    /** The default timer: Mutiny's worker pool, whose scheduled executor its own timeouts use. */
    private static Cancellable onWorkerPool(Duration delay, Runnable task) {
        ScheduledFuture<?> f = Infrastructure.getDefaultWorkerPool().schedule(task, delay.toNanos(),
                TimeUnit.NANOSECONDS);
        return () -> f.cancel(false);
    }

    /**
     * {@code call}, failed with a {@link TimeoutException} when it has not answered within the timeout, unless the
     * timer fired {@link #PAUSE} or more late: then the process was paused, not the store slow, and the call gets the
     * timeout again from now. Lambda freezes an environment as soon as a response ends, with the request's last
     * writes often still waiting for Redis's replies; on thaw the timers fired before the event loop read the replies
     * already in the socket, each counted against the breaker, and half of 8 opened it: the instance served on local
     * state for at least 2 s after every such freeze, its degraded alert raised (found by hunt25). A store that is
     * really down still fails the call after one timeout of the process running.
     */
    private <T> Uni<T> timed(Supplier<Uni<T>> call) {
        return Uni.createFrom().<T>emitter(em -> new TimedCall<T>(em).start(call.get()));
    }

    /** One call under {@link #timed}: the first of its answer, its failure, its timeout or a cancel ends it. */
    private final class TimedCall<T> {
        private final UniEmitter<? super T> em;
        private final AtomicBoolean over = new AtomicBoolean();
        private volatile Cancellable timer = Cancellable.NONE;
        private volatile io.smallrye.mutiny.subscription.Cancellable subscription;
        private volatile long dueNanos;

        TimedCall(UniEmitter<? super T> em) {
            this.em = em;
        }

        void start(Uni<T> call) {
            arm(ticker.nanos());
            em.onTermination(() -> {
                if (over.compareAndSet(false, true) && subscription != null) {
                    subscription.cancel();   // cancelled by its caller
                }
                timer.cancel();
            });
            subscription = call.subscribe().with(item -> {
                if (over.compareAndSet(false, true)) {
                    timer.cancel();
                    em.complete(item);
                }
            }, e -> {
                if (over.compareAndSet(false, true)) {
                    timer.cancel();
                    em.fail(e);
                }
            });
        }

        private void arm(long nowNanos) {
            dueNanos = nowNanos + timeout.toNanos();
            timer = scheduler.schedule(timeout, this::timerFired);
            if (over.get()) {
                timer.cancel();   // answered while this timer was being set
            }
        }

        private void timerFired() {
            long now = ticker.nanos();
            if (now - dueNanos >= PAUSE.toNanos()) {
                arm(now);   // late: the process was paused, the call gets its timeout again
            } else if (over.compareAndSet(false, true)) {
                // the call is left to land (a write sent may still reach the store: the outage guard's kept releases
                // count on it); only its answer is no longer waited for
                em.fail(new TimeoutException("hedgerow shared state timed out after " + timeout.toMillis() + " ms"));
            }
        }
    }

    /**
     * Whether a call failed because the breaker refused it (open, or half-open past its trial calls): SmallRye's
     * CircuitBreakerOpenException, a MicroProfile type the core does not import (ArchitectureTest), told by name.
     */
    private static boolean isBreakerRefusal(Throwable e) {
        return e.getClass().getSimpleName().equals("CircuitBreakerOpenException");
    }

    /**
     * Drops the route's health from the local store: once the shared store took a health write of the route, or once
     * the local health is no longer in force ({@link #forgotIfSpent}; see the class comment). Not any answer of the shared store: a Redis at its memory limit
     * ({@code noeviction}) answers reads, and some writes (a lease's release), and refuses the rest, and each answer
     * dropped the cooldowns its refused writes had left in the local store: a failing route took traffic every 2 s
     * instead of once per {@code fail_timeout} (found by hunt29-c). A route is forgotten before its reset is sent,
     * and a local write adds its route only once it is done, so a write racing this is dropped at the route's next
     * write instead of being left behind.
     */
    private void forgetLocalHealth(String routeId) {
        if (localHealth.remove(routeId)) {
            local.resetHealth(routeId).subscribe().with(v -> { }, t -> { });
        }
    }

    /** A health write on the local store, its route remembered once it is done (see {@link #forgetLocalHealth}). */
    private <T> Uni<T> localHealthWrite(String routeId, Uni<T> write) {
        return write.invoke(() -> localHealth.add(routeId));
    }

    /**
     * Calls made through this store and not answered yet (by the shared store, or the local one after a failure):
     * at shutdown, the writes still on their way, which the process waits for before it goes.
     */
    public int callsInFlight() {
        return callsInFlight.get();
    }

    // ---- catalog: mirrored, re-seeded when the shared store lost it ------------------------------------------------

    @Override
    public Uni<Map<String, Long>> catalogVersions() {
        resendHeldLedger();
        return call(() -> writePendingEdits().flatMap(v -> writePendingFlags())
                        .invoke(this::resendReleases).invoke(this::replayAudit)
                        .flatMap(v -> shared.catalogVersions()).invoke(this::forgetSpentLocalHealth)
                        .flatMap(this::reseedMissing),
                this::mirrorVersions);
    }

    private Uni<Map<String, Long>> reseedMissing(Map<String, Long> stored) {
        List<Map.Entry<String, VersionedDoc>> missing = catalogMirror.entrySet().stream()
                .filter(e -> !stored.containsKey(e.getKey())).toList();
        if (missing.isEmpty()) {
            return Uni.createFrom().item(stored);
        }
        List<Uni<Optional<Long>>> writes = missing.stream().map(e -> reseed(e.getKey(), e.getValue())).toList();
        return Uni.join().all(writes).andFailFast().flatMap(done -> shared.catalogVersions()).map(again -> {
            // the store may have lost its data again since the write (a second restart or FLUSHALL): an org it lacks
            // still is answered as the mirror holds it, and written back at the next poll. Answered without it, the
            // catalog dropped the org and its keys answered 401 until then (CI failed RedisOutageTest on this)
            Map<String, Long> out = new HashMap<>(again);
            missing.forEach(e -> out.putIfAbsent(e.getKey(), e.getValue().version()));
            return out;
        });
    }

    /**
     * Writes a mirrored org back: a CAS on version 0, so when several instances do it one wins, and the store gives it
     * a version no instance holds (see {@link StateStore#putOrgCatalog}), so every other instance reloads it. It is
     * marked with the version it had here ({@link VersionedDoc#writtenBack}): the instance that won may have held an
     * older copy than another (an edit made less than a poll before the loss), which that one then writes over it
     * ({@link #newerThanWrittenBack}).
     */
    private Uni<Optional<Long>> reseed(String orgId, VersionedDoc held) {
        return shared.putOrgCatalog(orgId, held.writtenBack(), 0);
    }

    /**
     * The stored org {@code stored} as this instance takes it: when another instance wrote it back after the store
     * lost it, from a copy older than this instance's mirror (an admin edit acknowledged here less than a poll before
     * the loss, which that instance had not read yet), this instance's copy is written over it, compare-and-set on the
     * written-back version, and the store read again. The edit was lost otherwise, every instance reloading the older
     * copy, with nothing said (found by hunt28-b: 2 of 5 restarts). Only a write-back no one edited since is replaced
     * (an edit clears the mark): an operator's edit of the older copy is a later edit, and holds.
     */
    private Uni<Optional<VersionedDoc>> newerThanWrittenBack(String orgId, Optional<VersionedDoc> stored) {
        VersionedDoc held = catalogMirror.get(orgId);
        if (stored.isEmpty() || stored.get().restoredFrom() <= 0 || held == null || held.version() <= 0
                || held.lineage() <= stored.get().restoredFrom() || held.json().equals(stored.get().json())) {
            return Uni.createFrom().item(stored);
        }
        long older = stored.get().restoredFrom();
        return shared.putOrgCatalog(orgId, held.writtenBack(), stored.get().version()).flatMap(written -> {
            if (written.isPresent()) {
                restoredOrgs.incrementAndGet();
                log.log(System.Logger.Level.WARNING, "org " + orgId + " was written back to the shared state store "
                        + "(a Redis restarted without its data?) from an older copy (version " + older + ") than this "
                        + "instance's (version " + held.lineage() + "): this one is written over it");
            }
            return shared.orgCatalog(orgId);
        });
    }

    private Uni<Map<String, Long>> mirrorVersions() {
        Map<String, Long> out = new HashMap<>();
        catalogMirror.forEach((org, doc) -> out.put(org, doc.version()));
        return Uni.createFrom().item(out);
    }

    /**
     * The stored org, or, when a restarted Redis lost it and the mirror holds it, the org written back first: an
     * admin edit made before the next {@link #catalogVersions()} poll re-seeds it must not find its org gone.
     */
    @Override
    public Uni<Optional<VersionedDoc>> orgCatalog(String orgId) {
        return call(() -> writePendingEdits().flatMap(v -> shared.orgCatalog(orgId)).flatMap(d -> {
                    VersionedDoc held = catalogMirror.get(orgId);
                    return d.isPresent() || held == null ? newerThanWrittenBack(orgId, d)
                            : reseed(orgId, held).flatMap(v -> shared.orgCatalog(orgId));
                }).map(d -> new Answer<>(d, true)),
                () -> Uni.createFrom().item(new Answer<>(Optional.ofNullable(catalogMirror.get(orgId)), false)))
                .map(a -> {
                    if (a.shared()) {
                        a.value().ifPresent(doc -> catalogMirror.put(orgId, doc));
                    }
                    return a.value();
                });
    }

    /**
     * What a guarded call answered, and whether the shared store did. The mirror takes a shared answer only once the
     * guard has passed it on: a read or write the guard gave up on may still complete on its connection, and its late
     * answer wrote the org as it was then into the mirror, over what the instance did meanwhile (a pending edit's
     * document), so the instance served an edit made elsewhere while its own was still to be judged (seen in
     * PartitionedEditTest; suspected by fixredis in session 29).
     */
    private record Answer<T>(T value, boolean shared) {
    }

    @Override
    public Uni<Optional<Long>> putOrgCatalog(String orgId, VersionedDoc doc, long expectedVersion) {
        return call(() -> shared.putOrgCatalog(orgId, doc, expectedVersion).map(v -> new Answer<>(v, true)),
                () -> Uni.createFrom().item(new Answer<>(putMirror(orgId, doc, expectedVersion), false)))
                .map(a -> {
                    if (a.shared()) {
                        a.value().ifPresent(version -> catalogMirror.put(orgId, doc.withVersion(version)));
                    }
                    return a.value();
                });
    }

    /**
     * The stores' compare-and-set, on the mirror; a write that holds is pending until the shared store takes it.
     * Several edits during one outage are one pending edit: the latest document, made on the first's base, and the
     * documents before it, which are this instance's own: the shared store may hold any of them, as a write it did not
     * answer in time may have landed all the same (the first edit of an outage, made while it still looked up; a
     * pending edit's own write), and an org stored as one of them was not edited elsewhere. The version written is
     * negative, one no stored org can have (stored versions count up from 1): an edit stored elsewhere meanwhile may
     * have taken the version this one would have had, and the instance's catalog, which reloads an org when its
     * version moved, would then never take that other edit once this one is dropped.
     *
     * <p>A write the mirror refuses (made on another version) is still kept as the instance's own when an edit of the
     * org is pending: the shared store did not answer it either, and it may have landed there.
     */
    private Optional<Long> putMirror(String orgId, VersionedDoc doc, long expectedVersion) {
        long[] written = {0};
        catalogMirror.compute(orgId, (k, held) -> {
            long current = held == null ? 0 : held.version();
            if (current != expectedVersion) {
                pendingEdits.computeIfPresent(orgId, (o, pending) -> pending.alsoOwn(doc.json()));
                return held;
            }
            written[0] = -(Math.abs(current) + 1);
            VersionedDoc next = doc.withVersion(written[0]);
            // with no copy held, the write is the org's first here: this instance's publication of its file, as an
            // admin edit needs the org (a later write merged into it is an edit of it, and no longer only that)
            pendingEdits.merge(orgId, new PendingEdit(held == null ? null : held.json(), Set.of(), next, held == null),
                    (first, latest) -> first.alsoOwn(first.doc().json()).then(latest.doc()));
            return next;
        });
        return written[0] == 0 ? Optional.empty() : Optional.of(written[0]);
    }

    /**
     * An edit made on the mirror: the org's document it was made on ({@code null}: none), the documents this
     * instance made of it on the way there (see {@link #putMirror}), and the result.
     */
    private record PendingEdit(String baseJson, Set<String> ownJson, VersionedDoc doc, boolean publicationOnly) {
        /** The most documents made on the way that are kept: the latest ones. */
        static final int MAX_OWN = 16;

        PendingEdit alsoOwn(String json) {
            if (ownJson.contains(json)) {
                return this;
            }
            Set<String> own = new LinkedHashSet<>(ownJson);
            own.add(json);
            if (own.size() > MAX_OWN) {
                // the oldest steps go first: the one a write left in the store is one of the last few (review7: the
                // set grew with every edit of a long outage)
                own.remove(own.iterator().next());
            }
            return new PendingEdit(baseJson, Collections.unmodifiableSet(own), doc, publicationOnly);
        }

        PendingEdit then(VersionedDoc latest) {
            return new PendingEdit(baseJson, ownJson, latest, false);
        }

        /** Whether the shared store holding {@code storedJson} holds the org this edit was made on, or on the way. */
        boolean madeOn(String storedJson) {
            return Objects.equals(storedJson, baseJson) || ownJson.contains(storedJson);
        }
    }

    /** Writes every pending edit to the shared store (fails, and keeps them, if the store does not answer). */
    private Uni<Void> writePendingEdits() {
        if (pendingEdits.isEmpty()) {
            return Uni.createFrom().voidItem();
        }
        List<Uni<Void>> writes = pendingEdits.entrySet().stream()
                .map(e -> writePending(e.getKey(), e.getValue())).toList();
        return Uni.join().all(writes).andFailFast().replaceWithVoid();
    }

    private Uni<Void> writePending(String orgId, PendingEdit edit) {
        return shared.orgCatalog(orgId).flatMap(stored -> {
            String storedJson = stored.map(VersionedDoc::json).orElse(null);
            if (edit.doc().json().equals(storedJson)) {
                // already there: re-seeded from this mirror, or a write that timed out here landed after all
                pendingEdits.remove(orgId, edit);
                return Uni.createFrom().voidItem();
            }
            if (storedJson != null && !edit.madeOn(storedJson) && edit.doc().revision() > stored.get().revision()) {
                // a newer configuration file's publication made during the outage, not an admin edit: the store holds
                // an older file's org, which that instance's catalog finds at its next poll and publishes its file
                // again, under the usual rules (found by hunt7: it was dropped as an edit lost to another one)
                pendingEdits.remove(orgId, edit);
                log.log(System.Logger.Level.INFO, "the publication of org " + orgId + " from revision "
                        + edit.doc().revision() + " of the configuration file, made while the shared state store was "
                        + "unreachable, is left to the catalog's next poll, which publishes the file again");
                return Uni.createFrom().voidItem();
            }
            if (storedJson != null && edit.publicationOnly()) {
                // this instance's publication of its file and nothing more, made while the store was unreachable
                // before it had read the org (an instance started during an outage), and another instance's
                // publication is there: the file's publication rules judge it at the next poll, as they would have at
                // startup. It was dropped as an admin edit lost to another, and audited as one (an edit_dropped event
                // at every cold start during an outage; found by hunt29-a). An admin edit made on it since is one
                // (review29: it was dropped with nothing said)
                pendingEdits.remove(orgId, edit);
                log.log(System.Logger.Level.INFO, "the publication of org " + orgId + ", made while the shared state "
                        + "store was unreachable, found the org stored by another instance: left to the catalog's "
                        + "next poll");
                return Uni.createFrom().voidItem();
            }
            if (storedJson != null && !edit.madeOn(storedJson)) {
                pendingEdits.remove(orgId, edit);
                lostEdits.incrementAndGet();
                log.log(System.Logger.Level.WARNING, "an admin edit of org " + orgId + " made while the shared "
                        + "state store was unreachable is dropped: the org was edited elsewhere meanwhile, and that "
                        + "edit holds");
                lostEditListener.accept(new LostEdit(orgId, "", "An admin edit made on an instance that could not "
                        + "reach the shared state store was dropped when it could: the org was edited elsewhere "
                        + "meanwhile, and that edit holds. The events of that outage on that instance describe what was "
                        + "dropped."));
                return Uni.createFrom().voidItem();
            }
            // the stored org is the one this edit was made on, or one of this instance's own steps to it (a write
            // that timed out here and landed after all): the edit is written over it. The store writes expected + 1
            // whatever version the document carries
            VersionedDoc doc = edit.doc();
            return shared.putOrgCatalog(orgId, doc, stored.map(VersionedDoc::version).orElse(0L))
                    .invoke(v -> v.ifPresent(version -> {
                        // a write that lost the compare-and-set stays pending: the next read sees why
                        pendingEdits.remove(orgId, edit);
                        catalogMirror.put(orgId, doc.withVersion(version));
                    })).replaceWithVoid();
        });
    }

    // ---- everything else: shared when possible, local otherwise ------------------------------------------------------

    @Override
    public Uni<Map<String, RouteSnapshot>> snapshot(Collection<String> routeIds, Duration usageWindow) {
        return call(() -> shared.snapshot(routeIds, usageWindow).map(s -> new Answer<>(s, true)),
                () -> local.snapshot(routeIds, usageWindow).map(s -> new Answer<>(withFlagsHeld(s), false)))
                .flatMap(a -> a.shared() ? withLocalHealth(withFlagsKept(a.value()), usageWindow)
                        : Uni.createFrom().item(a.value()));
    }

    /** Drops the route's local health when it is no longer in force (no cooldown, no hold); true if it did. */
    private boolean forgotIfSpent(String routeId, RouteSnapshot mine) {
        if (mine.heldOut()) {
            return false;
        }
        forgetLocalHealth(routeId);
        return true;
    }

    /**
     * At a catalog poll the shared store answered: the local health no longer in force is dropped for every route, not
     * only those read since (an outage's failure count of a route nothing read again was in force at the next outage,
     * which then began with the route half-open; review28).
     */
    private void forgetSpentLocalHealth() {
        if (localHealth.isEmpty()) {
            return;
        }
        local.snapshot(List.copyOf(localHealth), Duration.ofMinutes(1)).subscribe().with(
                held -> held.forEach(this::forgotIfSpent), t -> { });
    }

    /**
     * The shared store's snapshots with the route health this instance wrote locally since the shared store last took
     * a write ({@link #localHealth}) laid over them while it is in force: a cooldown or a provider's hold the shared
     * store did not take (it refused the write: a Redis at its memory limit answers reads all the same) still keeps
     * the route out (hunt29-c). A route whose local health is no longer in force is dropped from the local store.
     */
    private Uni<Map<String, RouteSnapshot>> withLocalHealth(Map<String, RouteSnapshot> snapshots,
                                                           Duration usageWindow) {
        if (localHealth.isEmpty()) {
            return Uni.createFrom().item(snapshots);
        }
        List<String> ids = snapshots.keySet().stream().filter(localHealth::contains).toList();
        if (ids.isEmpty()) {
            return Uni.createFrom().item(snapshots);
        }
        return local.snapshot(ids, usageWindow).map(held -> {
            Map<String, RouteSnapshot> out = new HashMap<>(snapshots);
            held.forEach((routeId, mine) -> {
                if (forgotIfSpent(routeId, mine)) {
                    return;
                }
                RouteSnapshot s = out.get(routeId);
                out.put(routeId, new RouteSnapshot(routeId, s.coolingDown() || mine.coolingDown(),
                        Math.max(s.cooldownRemainingMillis(), mine.cooldownRemainingMillis()),
                        Math.max(s.fails(), mine.fails()), s.probeTaken(),
                        Math.max(s.retryAfterMillis(), mine.retryAfterMillis()), s.inflight(), s.usage(), s.blobs()));
            });
            return out;
        });
    }

    /**
     * The shared store's snapshots with the operator flags mirrored: each flag shown is kept, and one this instance saw
     * and the store no longer holds (it lost it) is laid over the snapshot and written back ({@link #restoreLost}).
     */
    private Map<String, RouteSnapshot> withFlagsKept(Map<String, RouteSnapshot> snapshots) {
        Map<String, RouteSnapshot> out = snapshots;
        for (Map.Entry<String, RouteSnapshot> e : snapshots.entrySet()) {
            String routeId = e.getKey();
            RouteSnapshot s = e.getValue();
            String verdict = s.blobs().get(RouteFlags.PROBER_VERIFICATION);
            if (verdict == null) {
                if (seenVerdicts.containsKey(routeId)) {   // a plain read first: remove may lock the map's bin
                    seenVerdicts.remove(routeId);   // expired: none to hold through an outage
                }
            } else if (!verdict.equals(seenVerdicts.get(routeId))) {
                seenVerdicts.put(routeId, verdict);
            }
            Map<String, Flag> seen = seenFlags.get(routeId);
            Map<String, String> lost = null;
            for (String name : RouteFlags.NAMES) {
                String value = s.blobs().get(name);
                Flag mine = seen == null ? null : seen.get(name);
                long at = RouteFlags.stamp(s.blobs().get(RouteFlags.stampName(name)));
                if (mine != null && (value == null || mine.at > at)) {
                    boolean same = mine.value.equals(value);
                    // gone, or an older flag in its place (another instance wrote back the one it last saw, which
                    // this instance saw replaced; hunt14): this instance's is written back, and laid over unless the
                    // value is the same (then only its later stamp is written, so that a flag set in between, which
                    // another instance may write back, does not pass for later than this one; review16)
                    restoreLost(routeId, name, mine, !same);
                    if (!same) {
                        if (lost == null) {
                            lost = new HashMap<>();
                        }
                        lost.put(name, mine.value);
                    }
                } else if (value != null) {
                    sawFlag(routeId, name, new Flag(value, at));
                }
            }
            if (lost != null) {
                if (out == snapshots) {
                    out = new HashMap<>(snapshots);
                }
                out.put(routeId, s.withBlobs(lost));
            }
        }
        return out;
    }

    /**
     * Writes back a flag the shared store lost, unless it is being written back already or one set later is there.
     */
    private void restoreLost(String routeId, String name, Flag flag, boolean lost) {
        FlagKey key = new FlagKey(routeId, name);
        if (!restoring.add(key)) {
            return;
        }
        shared.restoreRouteFlag(routeId, name, flag.value, FlagTime.at(flag.at))
                .onTermination().invoke(() -> restoring.remove(key))
                .subscribe().with(held -> {
                    if (held.isPresent() && lost) {
                        restoredFlags.incrementAndGet();
                        log.log(System.Logger.Level.WARNING, "the shared state store had lost route " + routeId
                                + "'s operator flag " + name + " (a Redis restarted without its data?): written back"
                                + " as '" + flag.value + "', as this instance last saw it there");
                    }
                }, t -> { });
    }

    /**
     * Mirrors a flag the shared store took ({@link #withFlagsKept}), unless the mirror holds one stamped later: a
     * snapshot read before a write this instance made, answered after it, must not put the older flag back (and a
     * write-back of the same value with an older stamp must not lower this one's; review16).
     */
    private void sawFlag(String routeId, String name, Flag flag) {
        // every snapshot of a flagged route comes here: a plain read first, no write when nothing changed
        Map<String, Flag> seen = seenFlags.get(routeId);
        if (seen == null) {
            seen = seenFlags.computeIfAbsent(routeId, k -> new ConcurrentHashMap<>());
        }
        Flag held = seen.get(name);
        if (held == null || held.at < flag.at || held.at == flag.at && !held.value.equals(flag.value)) {
            // the same stamp with another value: written by a version before stamps, which leaves the stamp as it
            // was (or both 0): the one read last is the store's
            seen.merge(name, flag, (old, next) -> next.at >= old.at ? next : old);
        }
    }

    /** An operator flag's value and its stamp ({@link StateStore#putRouteFlag}; 0: set before stamps). */
    private record Flag(String value, long at) {
    }

    /**
     * An operator flag set during an outage: its value, the stamp of the flag this instance saw then plus one (it was
     * set after that one), and when it was set by this instance's ticker, so that the shared store stamps it with its
     * own clock less its age ({@link FlagTime#ago}): no instance's wall clock is compared with the store's (one running
     * a day ahead stamped a flag that beat every verdict of the next day; review16). Compared by identity, so that a
     * pending flag written late removes its own entry and never a newer one.
     */
    private static final class PendingFlag {
        final String value;
        final long notBefore;
        final long setNanos;

        PendingFlag(String value, long notBefore, long setNanos) {
            this.value = value;
            this.notBefore = notBefore;
            this.setNanos = setNanos;
        }

        FlagTime when(long nowNanos) {
            return FlagTime.ago((nowNanos - setNanos) / 1_000_000, notBefore);
        }
    }

    /**
     * The local store's snapshots with the operator flags in force: as the shared store last showed them, with those
     * set during this outage over them. The local store never holds a flag: a copy left there by an outage would be
     * back in force at the next one, over every verdict given since.
     */
    private Map<String, RouteSnapshot> withFlagsHeld(Map<String, RouteSnapshot> snapshots) {
        if (seenFlags.isEmpty() && pendingFlags.isEmpty() && seenVerdicts.isEmpty()) {
            return snapshots;
        }
        Map<String, RouteSnapshot> out = new HashMap<>(snapshots);
        out.replaceAll((routeId, s) -> {
            Map<String, String> held = heldFlags(routeId);
            String verdict = seenVerdicts.get(routeId);
            if (verdict != null && !s.blobs().containsKey(RouteFlags.PROBER_VERIFICATION)) {
                held.put(RouteFlags.PROBER_VERIFICATION, verdict);
            }
            return held.isEmpty() ? s : s.withBlobs(held);
        });
        return out;
    }

    /** A route's flags as the shared store last showed them, with those set during an outage over them. */
    private Map<String, String> heldFlags(String routeId) {
        Map<String, String> held = new HashMap<>();
        seenFlags.getOrDefault(routeId, Map.of()).forEach((name, flag) -> held.put(name, flag.value));
        for (String name : RouteFlags.NAMES) {
            PendingFlag pending = pendingFlags.get(new FlagKey(routeId, name));
            if (pending != null) {
                held.put(name, pending.value);
            }
        }
        return held;
    }

    @Override
    public Uni<BreakerState> recordFailure(String routeId, int maxFails, Duration failTimeout, Duration hold) {
        return call(() -> shared.recordFailure(routeId, maxFails, failTimeout, hold).invoke(() -> forgetLocalHealth(routeId)),
                () -> localHealthWrite(routeId, local.recordFailure(routeId, maxFails, failTimeout, hold)));
    }

    @Override
    public Uni<BreakerState> recordSuccess(String routeId, int maxFails, Duration failTimeout) {
        return call(() -> shared.recordSuccess(routeId, maxFails, failTimeout).invoke(() -> forgetLocalHealth(routeId)),
                () -> localHealthWrite(routeId, local.recordSuccess(routeId, maxFails, failTimeout)));
    }

    /**
     * The shared store's slot, or the local store's when it does not answer. A call sent and not answered in time may
     * still have taken the slot in the shared store, for an owner told the local answer: that slot stayed taken for
     * its whole TTL (up to 65 s), and every instance answered the half-open route's requests 503 "half-open probe in
     * flight" (hunt19). So its release is kept as a lease's is ({@link #releaseLease}) and sent once the store
     * answers: a release under the owner's unique token frees nothing else. One the breaker refused was never sent.
     */
    @Override
    public Uni<Boolean> tryAcquireProbe(String routeId, int maxFails, Duration ttl, String owner) {
        return call(() -> shared.tryAcquireProbe(routeId, maxFails, ttl, owner).invoke(() -> forgetLocalHealth(routeId)),
                e -> {
            if (!isBreakerRefusal(e)) {
                keepRelease(new ProbeRelease(routeId, owner));
            }
            return localHealthWrite(routeId, local.tryAcquireProbe(routeId, maxFails, ttl, owner));
        });
    }

    /**
     * Releases on the shared store and then on the local store as well: the slot may have been taken locally during
     * an outage that has ended since, and an owner's release is harmless where it holds nothing. A release the shared
     * store does not take is kept and sent again once it answers, as a lease's is ({@link #releaseLease}): a probe
     * that ended without a verdict during a short cut (its client hung up) held the route's one slot for the rest of
     * its TTL (hunt19).
     */
    @Override
    public Uni<Void> releaseProbe(String routeId, String owner) {
        return call(() -> shared.releaseProbe(routeId, owner), () -> {
            keepRelease(new ProbeRelease(routeId, owner));
            return Uni.createFrom().voidItem();
        }).chain(() -> local.releaseProbe(routeId, owner));
    }

    @Override
    public Uni<Void> renewProbe(String routeId, String owner, Duration ttl) {
        return call(() -> shared.renewProbe(routeId, owner, ttl), () -> local.renewProbe(routeId, owner, ttl));
    }

    @Override
    public Uni<Long> cooldownRemainingMillis(String routeId) {
        // as a snapshot: a cooldown the shared store did not take is in force all the same (withLocalHealth)
        return call(() -> shared.cooldownRemainingMillis(routeId).flatMap(ms -> !localHealth.contains(routeId)
                        ? Uni.createFrom().item(ms) : local.cooldownRemainingMillis(routeId).map(l -> Math.max(ms, l))),
                () -> local.cooldownRemainingMillis(routeId));
    }

    @Override
    public Uni<Void> resetHealth(String routeId) {
        // the local copy too, whichever answered: a breaker it kept from an earlier outage would be back at the next
        return call(() -> shared.resetHealth(routeId), () -> local.resetHealth(routeId))
                .call(() -> local.resetHealth(routeId));
    }

    /**
     * Operator flags ({@link RouteFlags}) go to the shared store stamped ({@link StateStore#putRouteFlag}), the rest
     * as they are; during an outage the flags are kept as pending, stamped with this instance's clock, and the rest
     * go to the local store.
     */
    @Override
    public Uni<Void> putRouteBlobs(String routeId, List<RouteBlob> blobs) {
        if (blobs.stream().noneMatch(b -> RouteFlags.NAMES.contains(b.name()))) {
            // every request's learned models come this way: no flag, nothing to split or keep
            return call(() -> shared.putRouteBlobs(routeId, blobs), () -> local.putRouteBlobs(routeId, blobs));
        }
        List<RouteBlob> flags = new ArrayList<>(1);
        List<RouteBlob> rest = new ArrayList<>(blobs.size());
        for (RouteBlob b : blobs) {
            (RouteFlags.NAMES.contains(b.name()) ? flags : rest).add(b);
        }
        // a flag the shared store took is not kept as pending when the rest (a batch's learned blobs) failed: kept, it
        // was written over a flag set through another instance meanwhile (review16)
        Set<String> landed = ConcurrentHashMap.newKeySet();
        return call(() -> {
            List<Uni<Void>> writes = new ArrayList<>(flags.size() + 1);
            if (!rest.isEmpty()) {
                writes.add(shared.putRouteBlobs(routeId, rest));
            }
            for (RouteBlob f : flags) {
                writes.add(shared.putRouteFlag(routeId, f.name(), f.value()).invoke(at -> {
                    landed.add(f.name());
                    tookFlag(routeId, f.name(), f.value(), at);
                }).replaceWithVoid());
            }
            return writes.isEmpty() ? Uni.createFrom().voidItem() : Uni.join().all(writes).andFailFast()
                    .replaceWithVoid();
        }, () -> {
            for (RouteBlob f : flags) {
                if (!landed.contains(f.name())) {
                    pendFlag(routeId, f.name(), f.value());
                }
            }
            return rest.isEmpty() ? Uni.createFrom().voidItem() : local.putRouteBlobs(routeId, rest);
        });
    }

    /**
     * As {@link #putRouteBlobs} writes a flag (the admin API writes them that way). During an outage the stamp is not
     * known yet: answers the least it will be (one past the stamp this instance saw).
     */
    @Override
    public Uni<Long> putRouteFlag(String routeId, String name, String value) {
        return call(() -> shared.putRouteFlag(routeId, name, value).invoke(at -> tookFlag(routeId, name, value, at)),
                () -> Uni.createFrom().item(() -> pendFlag(routeId, name, value)));
    }

    /** The shared store took a flag, stamped {@code at}: mirrored, and one pending of it superseded where it counts. */
    private void tookFlag(String routeId, String name, String value, long at) {
        sawFlag(routeId, name, new Flag(value, at));
        pendingFlags.remove(new FlagKey(routeId, name));
    }

    /**
     * Keeps a flag set during an outage as pending, set now by this instance's ticker and after the flag it last saw
     * ({@link PendingFlag}). Answers the least stamp it will take.
     */
    private long pendFlag(String routeId, String name, String value) {
        Flag seen = seenFlags.getOrDefault(routeId, Map.of()).get(name);
        long notBefore = seen == null ? 0 : seen.at + 1;
        pendingFlags.put(new FlagKey(routeId, name), new PendingFlag(value, notBefore, ticker.nanos()));
        return notBefore;
    }

    /** An operator flag of a route ({@link RouteFlags}). */
    private record FlagKey(String routeId, String name) {
    }

    /**
     * Writes every operator flag set during an outage to the shared store, each unless one set later is there (set
     * through another instance meanwhile: that one holds, and this one is dropped, logged and counted as a lost edit).
     * Fails, and keeps the rest, if the store does not answer.
     */
    private Uni<Void> writePendingFlags() {
        if (pendingFlags.isEmpty()) {
            return Uni.createFrom().voidItem();
        }
        List<Uni<Void>> writes = pendingFlags.entrySet().stream()
                .map(e -> writePendingFlag(e.getKey(), e.getValue())).toList();
        return Uni.join().all(writes).andFailFast().replaceWithVoid();
    }

    private Uni<Void> writePendingFlag(FlagKey k, PendingFlag flag) {
        return shared.restoreRouteFlag(k.routeId(), k.name(), flag.value, flag.when(ticker.nanos())).invoke(held -> {
            if (!pendingFlags.remove(k, flag)) {
                return;   // set again meanwhile: that write decides
            }
            if (held.isPresent()) {
                // written, or the same value held (this instance's own write that landed after all, or another's)
                sawFlag(k.routeId(), k.name(), new Flag(flag.value, held.get()));
                return;
            }
            lostEdits.incrementAndGet();
            log.log(System.Logger.Level.WARNING, "route " + k.routeId() + "'s operator flag " + k.name() + " '"
                    + flag.value + "', set while the shared state store was unreachable, is dropped: it was set "
                    + "later elsewhere, and that holds");
            int slash = k.routeId().indexOf('/');
            lostEditListener.accept(new LostEdit(slash < 0 ? k.routeId() : k.routeId().substring(0, slash),
                    slash < 0 ? "" : k.routeId().substring(slash + 1), "The route's " + k.name() + " '"
                    + flag.value + "', set on an instance that could not reach the shared state store, was dropped "
                    + "when it could: it was set later through another instance, and that holds."));
        }).replaceWithVoid();
    }

    /**
     * On the shared store, mirrored; refused while it does not answer (this store writes back what it saw itself, in
     * {@link #withFlagsKept}: nothing calls this from above, so an outage keeps no pending write-back of it).
     */
    @Override
    public Uni<Optional<Long>> restoreRouteFlag(String routeId, String name, String value, FlagTime when) {
        return call(() -> shared.restoreRouteFlag(routeId, name, value, when).invoke(held -> held.ifPresent(
                at -> sawFlag(routeId, name, new Flag(value, at)))), () -> Uni.createFrom().item(Optional.empty()));
    }

    @Override
    public Uni<Void> acquireLease(String routeId, String leaseId, Duration ttl) {
        return call(() -> shared.acquireLease(routeId, leaseId, ttl), () -> local.acquireLease(routeId, leaseId, ttl));
    }

    @Override
    public Uni<Void> renewLease(String routeId, String leaseId, Duration ttl) {
        return call(() -> shared.renewLease(routeId, leaseId, ttl), () -> local.renewLease(routeId, leaseId, ttl));
    }

    /**
     * Releases on the shared store, and on the local one as well (a lease taken there during an outage that has ended
     * since would be counted at the next). A release the shared store does not take is kept (up to
     * {@value #MAX_PENDING_RELEASES}) and sent again once it answers a catalog poll ({@link #resendReleases}): a lease taken just
     * before an outage stayed in Redis for the rest of its 90 s TTL, counted in flight by every instance's
     * least-connections ranking and health view (hunt7).
     */
    @Override
    public Uni<Void> releaseLease(String routeId, String leaseId) {
        return call(() -> shared.releaseLease(routeId, leaseId), () -> {
            keepRelease(new LeaseRelease(routeId, leaseId));
            return Uni.createFrom().voidItem();
        }).call(() -> local.releaseLease(routeId, leaseId));
    }

    /** Keeps a release for {@link #resendReleases}, or counts it dropped past {@value #MAX_PENDING_RELEASES}. */
    private void keepRelease(PendingRelease r) {
        if (pendingReleases.size() < MAX_PENDING_RELEASES) {
            pendingReleases.add(r);
        } else {
            droppedReleases.incrementAndGet(); // that lease or slot stays taken until its TTL ends
        }
    }

    /** A release the shared store has not taken yet. */
    private sealed interface PendingRelease {
        Uni<Void> sendTo(StateStore store);
    }

    /** A lease of a route. */
    private record LeaseRelease(String routeId, String leaseId) implements PendingRelease {
        @Override
        public Uni<Void> sendTo(StateStore store) {
            return store.releaseLease(routeId, leaseId);
        }
    }

    /** A route's half-open probe slot, under its owner's token. */
    private record ProbeRelease(String routeId, String owner) implements PendingRelease {
        @Override
        public Uni<Void> sendTo(StateStore store) {
            return store.releaseProbe(routeId, owner);
        }
    }

    /**
     * Sends the releases kept during an outage to the shared store, 16 at a time, in the background (one round at a
     * time; a release the store does not take stops it, and the rest wait for the next poll); one of a lease that has
     * expired since does nothing. Each release is a call of its own under the guard: sent inside the catalog poll's
     * one guarded call, thousands of them outlasted its timeout, so after a long outage every poll timed out, counted
     * as a failure of Redis, and sent only part of them (RedisOutageTest timed out under load).
     */
    private void resendReleases() {
        // not while half-open: the breaker lets its trial calls through and refuses the rest, which ended the round
        if (pendingReleases.isEmpty() || breaker != CircuitBreakerState.CLOSED
                || !releasesResending.compareAndSet(false, true)) {
            return;
        }
        Multi.createFrom().iterable(List.copyOf(pendingReleases))
                .onItem().transformToUni(k -> guarded(() -> k.sendTo(shared),
                        e -> Uni.createFrom().<Void>failure(e)).invoke(() -> pendingReleases.remove(k)))
                .merge(16).collect().last()
                .subscribe().with(v -> releasesResending.set(false), t -> releasesResending.set(false));
    }

    @Override
    public Uni<Void> addUsage(String routeId, UsageSample sample, Duration window) {
        return call(() -> shared.addUsage(routeId, sample, window), () -> local.addUsage(routeId, sample, window));
    }

    @Override
    public Uni<Long> nextCursors(String orgId, String alias, int n) {
        return call(() -> shared.nextCursors(orgId, alias, n), () -> local.nextCursors(orgId, alias, n));
    }

    @Override
    public Uni<Boolean> hedgeBudget(String orgId, boolean spend, double ratio, int minPerWindow, Duration window) {
        return call(() -> shared.hedgeBudget(orgId, spend, ratio, minPerWindow, window),
                () -> local.hedgeBudget(orgId, spend, ratio, minPerWindow, window));
    }

    @Override
    public Uni<Void> refundHedge(String orgId, Duration window) {
        return call(() -> shared.refundHedge(orgId, window), () -> local.refundHedge(orgId, window));
    }

    @Override
    public Uni<Void> countRequests(String orgId, long n, Duration window) {
        return call(() -> shared.countRequests(orgId, n, window), () -> local.countRequests(orgId, n, window));
    }

    @Override
    public Uni<String> appendAudit(String orgId, Map<String, String> event, int maxLen) {
        return call(() -> shared.appendAudit(orgId, event, maxLen), e -> {
            pendAudit(new PendingAudit(orgId, event, maxLen, mayHaveLanded(e)));
            return local.appendAudit(orgId, event, maxLen);
        });
    }

    /** As {@link #appendAudit}: what the shared stream may hold already is no concern of the local store. */
    @Override
    public Uni<String> appendAuditOnce(String orgId, Map<String, String> event, int maxLen) {
        return call(() -> shared.appendAuditOnce(orgId, event, maxLen), e -> {
            pendAudit(new PendingAudit(orgId, event, maxLen, mayHaveLanded(e)));
            return local.appendAuditOnce(orgId, event, maxLen);
        });
    }

    /**
     * Whether a write that failed so may have been applied all the same: not when it was never sent (the guard's
     * breaker refused it, or no connection could be made), else yes (a timeout, a connection lost under it).
     */
    private static boolean mayHaveLanded(Throwable e) {
        return !isBreakerRefusal(e) && !(e instanceof java.net.ConnectException);
    }

    /**
     * An audit event the shared stream did not take, to be written there when it answers; {@code mayHaveLanded}: its
     * write's outcome is unknown, so its replay looks for it first.
     */
    private record PendingAudit(String orgId, Map<String, String> event, int maxLen, AtomicBoolean mayHaveLanded) {
        PendingAudit(String orgId, Map<String, String> event, int maxLen, boolean mayHaveLanded) {
            this(orgId, event, maxLen, new AtomicBoolean(mayHaveLanded));
        }

        boolean admin() {
            return "admin".equals(event.get("type"));
        }
    }

    /**
     * Keeps an event for the shared stream: any event up to {@link #MAX_PENDING_AUDIT} in all; past that an operator's
     * action still (the admin API's record of who changed what) and another's in place of the oldest other one, up to
     * {@link #MAX_PENDING_OPERATOR_AUDIT} in all, past which the oldest event goes, whatever it is: a script calling
     * the admin API through a long outage grew the heap without bound (found by hunt27).
     */
    private void pendAudit(PendingAudit p) {
        pendingAudit.addLast(p);
        int count = pendingAuditCount.incrementAndGet();
        if (count <= MAX_PENDING_AUDIT) {
            return;
        }
        for (Iterator<PendingAudit> it = pendingAudit.iterator(); it.hasNext(); ) {
            if (!it.next().admin()) {
                it.remove();
                pendingAuditCount.decrementAndGet();
                droppedAudit.incrementAndGet();
                return;
            }
        }
        if (count > MAX_PENDING_OPERATOR_AUDIT && pendingAudit.pollFirst() != null) {
            pendingAuditCount.decrementAndGet();
            droppedAudit.incrementAndGet();
        }
    }

    /**
     * Writes the audit events kept during an outage to the shared stream, oldest first, one at a time (each keeps its
     * own {@code time}); one replay at a time, stopping at the first the store does not take (the rest wait for the
     * next poll). Each is written once: an event whose call timed out may have landed late, and was in the stream
     * twice after its replay (hunt19), so its replay looks for it first ({@link StateStore#appendAuditOnce}); one that
     * was never sent (most of an outage's: its breaker refuses them) is appended as it is. Each search scans up to
     * 10 000 entries of the stream: searched for every event, a 10 000-event backlog took three minutes to replay and
     * slowed Redis for everyone meanwhile (found by hunt27).
     */
    private void replayAudit() {
        if (pendingAudit.isEmpty() || !auditReplaying.compareAndSet(false, true)) {
            return;
        }
        Multi.createFrom().iterable(List.copyOf(pendingAudit))
                .onItem().transformToUniAndConcatenate(p -> guarded(() -> p.mayHaveLanded().get()
                        ? shared.appendAuditOnce(p.orgId(), p.event(), p.maxLen())
                        : shared.appendAudit(p.orgId(), p.event(), p.maxLen()),
                        e -> {
                            if (mayHaveLanded(e)) {
                                p.mayHaveLanded().set(true);   // this replay's own write may land late
                            }
                            return Uni.createFrom().<String>failure(e);
                        }).invoke(() -> {
                            if (pendingAudit.remove(p)) {
                                pendingAuditCount.decrementAndGet();
                            }
                        }))
                .collect().last()
                .subscribe().with(v -> auditReplaying.set(false), t -> auditReplaying.set(false));
    }

    /** Audit events kept during an outage and not yet in the shared stream. */
    public int pendingAudit() {
        return pendingAuditCount.get();
    }

    /** Audit events dropped because too many were kept ({@link #pendAudit}). */
    public long droppedAudit() {
        return droppedAudit.get();
    }

    /** Lease and probe-slot releases the shared store did not take, waiting to be sent again. */
    public int pendingReleases() {
        return pendingReleases.size();
    }

    /**
     * Lease and probe-slot releases not kept for sending again, past {@value #MAX_PENDING_RELEASES} waiting: each of
     * those leases or slots stays in the shared store until its TTL ends.
     */
    public long droppedReleases() {
        return droppedReleases.get();
    }

    @Override
    public Uni<List<AuditRecord>> readAudit(String orgId, int limit, AuditStreams streams) {
        return call(() -> shared.readAudit(orgId, limit, streams), () -> local.readAudit(orgId, limit, streams));
    }

    /**
     * Billed usage is not rebuilt from traffic, so every ledger write reaches the shared store exactly once, however
     * it fails: each (org, day, alias) line sends one numbered write at a time ({@link StateStore#addLedgerOnce}),
     * and a write the store did not confirm, refused or timed out alike, is sent again with the same number before
     * anything newer, once the store answers (at the next ledger write or catalog poll). The store skips a number it
     * applied before, so a write that timed out after landing is not added twice. Usage billed meanwhile waits
     * behind it, merged into the line's next write. The local store gets every entry too, so that the ledger read
     * during an outage shows what this instance billed.
     *
     * <p>The returned {@code Uni} completes when the write holding this entry was confirmed or kept for later.
     */
    @Override
    public Uni<Void> addLedger(String orgId, LocalDate day, String alias, LedgerEntry entry) {
        LedgerKey key = new LedgerKey(orgId, day, alias);
        return local.addLedger(orgId, day, alias, entry).onFailure().recoverWithNull()
                .chain(() -> Uni.createFrom().<Void>emitter(em -> {
                    LedgerLine line;
                    do {
                        line = ledgerLines.computeIfAbsent(key, LedgerLine::new);
                    } while (!line.take(entry, em));
                    resendHeldLedger();
                    line.send();
                }));
    }

    /**
     * Passed to the shared store under the guard; a caller that numbers its own writes sends one again when this
     * fails, so a failure is not answered locally.
     */
    @Override
    public Uni<Boolean> addLedgerOnce(String orgId, LocalDate day, String alias, LedgerEntry entry, String writer,
                                      long seq) {
        return call(() -> shared.addLedgerOnce(orgId, day, alias, entry, writer, seq), e -> Uni.createFrom().failure(e));
    }

    private record LedgerKey(String orgId, LocalDate day, String alias) {
    }

    /**
     * One (org, day, alias) line's writes to the shared ledger: at most one numbered write out at a time; usage
     * billed meanwhile is merged into the next. Guarded by its own monitor; the store is called outside it.
     */
    private final class LedgerLine {
        final LedgerKey key;
        /** Billed, not yet in a numbered write, and who waits for it. */
        LedgerEntry unsent;
        List<UniEmitter<? super Void>> unsentWaiters = new ArrayList<>();
        /** The numbered write not yet confirmed (sent again as it is until it is), its number, who waits for it. */
        LedgerEntry numbered;
        long seq;
        List<UniEmitter<? super Void>> numberedWaiters = List.of();
        /** A send is under way. */
        boolean sending;
        /** The last send of {@link #numbered} failed: it is held for the store's return. */
        boolean held;
        /** Removed from the map once idle: a writer that finds it closed takes a new line. */
        boolean closed;

        LedgerLine(LedgerKey key) {
            this.key = key;
        }

        synchronized boolean take(LedgerEntry entry, UniEmitter<? super Void> waiter) {
            if (closed) {
                return false;
            }
            unsent = unsent == null ? entry : unsent.plus(entry);
            unsentWaiters.add(waiter);
            return true;
        }

        /** Sends the held write, or numbers and sends what is unsent, unless a send is under way. */
        void send() {
            LedgerEntry entry;
            long n;
            synchronized (this) {
                if (sending || closed) {
                    return;
                }
                if (numbered == null) {
                    if (unsent == null) {
                        return;
                    }
                    numbered = unsent;
                    numberedWaiters = unsentWaiters;
                    seq = ledgerSeq.incrementAndGet();
                    unsent = null;
                    unsentWaiters = new ArrayList<>();
                }
                sending = true;
                entry = numbered;
                n = seq;
            }
            LedgerKey k = key;
            call(() -> shared.addLedgerOnce(k.orgId(), k.day(), k.alias(), entry, ledgerWriter, n).replaceWith(true),
                    e -> Uni.createFrom().item(false))
                    .subscribe().with(confirmed -> {
                        if (settled(confirmed)) {
                            send();
                        }
                    }, t -> settled(false));
        }

        /**
         * The numbered write was confirmed or not. Its waiters are answered either way, and, when it is held, those
         * of the usage queued behind it: all of it is kept for the store's return. True if more is to be sent now.
         */
        private boolean settled(boolean confirmed) {
            List<UniEmitter<? super Void>> waiters = new ArrayList<>();
            boolean more;
            synchronized (this) {
                sending = false;
                waiters.addAll(numberedWaiters);
                numberedWaiters = List.of();
                if (!confirmed) {
                    waiters.addAll(unsentWaiters);
                    unsentWaiters = new ArrayList<>();
                }
                if (confirmed) {
                    numbered = null;
                }
                if (held != !confirmed) {
                    held = !confirmed;
                    heldLedgerLines.addAndGet(confirmed ? -1 : 1);
                }
                more = confirmed && unsent != null;
                if (confirmed && unsent == null) {
                    closed = true;
                    ledgerLines.remove(key, this);
                }
            }
            waiters.forEach(w -> w.complete(null));
            return more;
        }

        synchronized boolean held() {
            return held;
        }

        /** The line and what of it the shared store has not confirmed, for an operator's log. */
        synchronized String describe() {
            LedgerEntry e = numbered == null ? unsent : unsent == null ? numbered : numbered.plus(unsent);
            if (e == null) {
                e = LedgerEntry.ZERO;
            }
            return key.orgId() + " " + key.day() + " " + key.alias() + ": " + e.requests() + " request(s), "
                    + e.usage().promptTokens() + " prompt and " + e.usage().completionTokens() + " completion tokens";
        }
    }

    /** Billed usage the shared store has not confirmed yet: the (org, day, alias) lines waiting for it. */
    public int pendingLedger() {
        return heldLedgerLines.get();
    }

    /** Each held ledger line, described (org, day, line, what it bills): what a shutdown now would lose. */
    public List<String> pendingLedgerLines() {
        return ledgerLines.values().stream().filter(LedgerLine::held).map(LedgerLine::describe).sorted().toList();
    }

    /** Sends every held ledger write again (each send runs on its own; nothing waits for it). */
    private void resendHeldLedger() {
        if (heldLedgerLines.get() > 0) {
            ledgerLines.values().stream().filter(LedgerLine::held).forEach(LedgerLine::send);
        }
    }

    @Override
    public Uni<SortedMap<LocalDate, Map<String, LedgerEntry>>> ledger(String orgId, LocalDate from, LocalDate to) {
        return call(() -> shared.ledger(orgId, from, to), () -> local.ledger(orgId, from, to));
    }

    @Override
    public Uni<Map<String, List<String>>> affinity(String orgId, List<String> prefixHashes) {
        return call(() -> shared.affinity(orgId, prefixHashes), () -> local.affinity(orgId, prefixHashes));
    }

    @Override
    public Uni<Void> putAffinity(String orgId, List<String> prefixHashes, String routeId, Duration ttl) {
        return call(() -> shared.putAffinity(orgId, prefixHashes, routeId, ttl),
                () -> local.putAffinity(orgId, prefixHashes, routeId, ttl));
    }

    @Override
    public Uni<Optional<String>> getOrgBlob(String orgId, String name) {
        return call(() -> shared.getOrgBlob(orgId, name), () -> local.getOrgBlob(orgId, name));
    }

    @Override
    public Uni<Void> putOrgBlob(String orgId, String name, String value, Duration ttl) {
        return call(() -> shared.putOrgBlob(orgId, name, value, ttl), () -> local.putOrgBlob(orgId, name, value, ttl));
    }

    @Override
    public Uni<Boolean> tryLock(String name, String owner, Duration ttl) {
        return call(() -> shared.tryLock(name, owner, ttl), () -> local.tryLock(name, owner, ttl));
    }

    @Override
    public Uni<Void> unlock(String name, String owner) {
        return call(() -> shared.unlock(name, owner), () -> local.unlock(name, owner));
    }

    @Override
    public Uni<Long> lockRemainingMillis(String name) {
        return call(() -> shared.lockRemainingMillis(name), () -> local.lockRemainingMillis(name));
    }

    /**
     * Opens the shared store's connections before any guarded call, pinging it outside the guard until it answers or
     * {@code max} has passed; answers why it did not answer ("" if it did); never fails. An instance's first call to
     * Redis pays for the connection: the TCP connect, the TLS handshake (on a cold JVM, its TLS stack's start too),
     * and on a Redis Cluster the slot map and a connection to every master. Measured on a TLS cluster, 0.7–1.1 s: past
     * the guard's 1 s timeout, so a cold start's first call (the catalog's publish) was answered from local state and
     * counted against the breaker as a Redis failure. The app calls this once at startup, before it publishes.
     * <p>
     * A refused connection (nothing listening) is tried again every {@link #WARM_UP_RETRY} within {@code max} (a Redis
     * started alongside the instance, as pods of one deployment are, is waited for); a refused password or certificate
     * is not, as it will not change (review19). A store that has not answered by then opens the
     * breaker at once: otherwise each of the startup's calls waited out the guard's timeout until the breaker had seen
     * enough of them fail, and an instance started against an unreachable Redis took 13 s to be ready (Lambda gives
     * an environment's start 10 s).
     */
    public Uni<String> warmUp(Duration max) {
        long deadline = ticker.nanos() + max.toNanos();
        return Uni.createFrom().deferred(shared::ping)
                .flatMap(up -> up ? Uni.createFrom().item(true) : Uni.createFrom().<Boolean>failure(
                        new IllegalStateException(pingFailure())))
                .onFailure(e -> refused() && ticker.nanos() + WARM_UP_RETRY.toNanos() - deadline < 0).retry()
                .withBackOff(WARM_UP_RETRY, WARM_UP_RETRY).indefinitely()
                .ifNoItem().after(max).fail()
                .map(up -> "")
                .onFailure().recoverWithItem(e -> e instanceof io.smallrye.mutiny.TimeoutException
                        ? "no answer to a ping within " + max.toMillis() + " ms" : e.getMessage())
                .call(why -> why.isEmpty() ? Uni.createFrom().voidItem() : openBreaker(why));
    }

    /** Why the shared store cannot serve with its settings ({@link RedisStateStore#modeMismatch}), or "". */
    public Uni<String> modeMismatch() {
        return shared instanceof RedisStateStore r ? r.modeMismatch() : Uni.createFrom().item("");
    }

    /** Whether the shared store's last ping found nothing listening (a Redis not started yet, not a refused login). */
    private boolean refused() {
        return shared instanceof RedisStateStore r && r.lastPingRefused();
    }

    /** How often {@link #warmUp} asks again a store that refused it. */
    static final Duration WARM_UP_RETRY = Duration.ofMillis(200);

    /** Why the shared store's last ping failed, as readiness says it. */
    private String pingFailure() {
        String why = shared instanceof RedisStateStore r ? r.lastPingFailure() : "";
        return "the shared state store did not answer a ping" + (why.isEmpty() ? "" : " (" + why + ")");
    }

    /**
     * Opens the breaker now, for a store that did not answer at startup ({@link #warmUp}): fails the breaker's whole
     * window of calls with {@code why}, which it keeps as the last failure, without sending anything.
     */
    private Uni<Void> openBreaker(String why) {
        lastFailure = why;
        return Multi.createFrom().range(0, window)
                .onItem().transformToUniAndConcatenate(i -> guard.get(
                        () -> Uni.createFrom().failure(new IllegalStateException(why)), UNI)
                        .onFailure().recoverWithNull())
                .collect().last().replaceWithVoid();
    }

    /** Whether the shared store answered (false while it is down or the breaker is open); never fails. */
    @Override
    public Uni<Boolean> ping() {
        // Redis's ping answers false when Redis does not: for the guard that is a failed call (a success would count
        // towards closing it, so readiness polls alone closed it during an outage); an answer leaves the local route
        // health as it is (see forgetLocalHealth)
        return guarded(() -> shared.ping().map(up -> {
            if (!up) {
                throw new IllegalStateException(pingFailure());
            }
            return true;
        }), e -> Uni.createFrom().item(false));
    }
}
