package dev.hedgerow.state;

import dev.hedgerow.time.FakeTicker;
import io.smallrye.mutiny.Uni;
import org.junit.jupiter.api.Test;

import java.io.IOException;
import java.time.Duration;
import java.util.Collection;
import java.util.List;
import java.util.Map;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Route health the outage guard wrote to its local fallback store while the shared store did not answer is dropped
 * there once the shared store answers again, so the next outage does not start from the last one's verdicts (a route
 * that served in between would otherwise be kept out for the rest of an old cooldown, or an old Retry-After hold).
 * The end-to-end case, through the HTTP API over a Redis that is stopped and started, is ResetAcrossOutagesTest's.
 */
class ResilientLocalHealthTest {
    static final Duration MINUTE = Duration.ofSeconds(60);

    /** The shared store, refusing every call used here while {@link #up} is false, as an unreachable Redis does. */
    static class Shared extends ForwardingStateStore {
        volatile boolean up = true;
        /** Refusing every write while reads are answered, as a Redis at its memory limit ({@code noeviction}) does. */
        volatile boolean full;
        /** How a call fails while down. */
        volatile java.util.function.Supplier<Throwable> refusal = () -> new IOException("connection refused");

        Shared(StateStore inner) {
            super(inner);
        }

        /** The call, made only while up (the memory store applies a write when called, not when subscribed). */
        private <T> Uni<T> or(java.util.function.Supplier<Uni<T>> call) {
            return up ? call.get() : Uni.createFrom().failure(refusal.get());
        }

        /** A write: made only while up and not full. */
        private <T> Uni<T> orWrite(java.util.function.Supplier<Uni<T>> call) {
            return full ? Uni.createFrom().failure(new IOException("OOM command not allowed when used memory > "
                    + "'maxmemory'")) : or(call);
        }

        @Override
        public Uni<BreakerState> recordSuccess(String routeId, int maxFails, Duration failTimeout) {
            return orWrite(() -> super.recordSuccess(routeId, maxFails, failTimeout));
        }

        @Override
        public Uni<BreakerState> recordFailure(String routeId, int maxFails, Duration failTimeout, Duration hold) {
            return orWrite(() -> super.recordFailure(routeId, maxFails, failTimeout, hold));
        }

        @Override
        public Uni<Long> cooldownRemainingMillis(String routeId) {
            return or(() -> super.cooldownRemainingMillis(routeId));
        }

        @Override
        public Uni<Map<String, RouteSnapshot>> snapshot(Collection<String> routeIds, Duration usageWindow) {
            return or(() -> super.snapshot(routeIds, usageWindow));
        }

        @Override
        public Uni<String> appendAudit(String orgId, Map<String, String> event, int maxLen) {
            return or(() -> super.appendAudit(orgId, event, maxLen));
        }

        /** Audit writes that searched the stream for the event first. */
        final java.util.concurrent.atomic.AtomicInteger searchedAppends = new java.util.concurrent.atomic.AtomicInteger();

        @Override
        public Uni<String> appendAuditOnce(String orgId, Map<String, String> event, int maxLen) {
            return or(() -> {
                searchedAppends.incrementAndGet();
                return super.appendAuditOnce(orgId, event, maxLen);
            });
        }

        @Override
        public Uni<Void> putRouteBlobs(String routeId, List<RouteBlob> blobs) {
            return or(() -> super.putRouteBlobs(routeId, blobs));
        }

        @Override
        public Uni<Void> acquireLease(String routeId, String leaseId, Duration ttl) {
            return or(() -> super.acquireLease(routeId, leaseId, ttl));
        }

        /** Releases that reached this store. */
        final java.util.concurrent.atomic.AtomicInteger releases = new java.util.concurrent.atomic.AtomicInteger();

        @Override
        public Uni<Void> releaseLease(String routeId, String leaseId) {
            return or(() -> {
                releases.incrementAndGet();
                return super.releaseLease(routeId, leaseId);
            });
        }

        @Override
        public Uni<java.util.Optional<Long>> restoreRouteFlag(String routeId, String name, String value,
                                                             FlagTime when) {
            return or(() -> super.restoreRouteFlag(routeId, name, value, when));
        }

        @Override
        public Uni<Long> putRouteFlag(String routeId, String name, String value) {
            return or(() -> super.putRouteFlag(routeId, name, value));
        }

        /** Pings that reached this store (the guard let them through). */
        final java.util.concurrent.atomic.AtomicInteger pings = new java.util.concurrent.atomic.AtomicInteger();

        /** As Redis's: false, not a failure, when the store does not answer. */
        @Override
        public Uni<Boolean> ping() {
            pings.incrementAndGet();
            return up ? super.ping() : Uni.createFrom().item(false);
        }
    }

    final FakeTicker ticker = new FakeTicker();
    final Shared shared = new Shared(new MemoryStateStore(ticker, FakeTimeStoreContract.TUNING));
    final MemoryStateStore local = new MemoryStateStore(ticker, FakeTimeStoreContract.TUNING);
    // a window of 100 calls: the guard's breaker stays closed, every call here tries the shared store first
    final ResilientStateStore store = new ResilientStateStore(shared, local, ResilientLedgerTest.SETTINGS);

    static <T> T await(Uni<T> u) {
        return u.await().atMost(Duration.ofSeconds(5));
    }

    RouteSnapshot localSnapshot(String route) {
        return await(local.snapshot(List.of(route), MINUTE)).get(route);
    }

    @Test
    void aBreakerOpenedLocallyIsNotBackAtTheNextOutageOnceTheSharedStoreAnswered() {
        shared.up = false;
        await(store.recordFailure("acme/alpha", 1, MINUTE));
        assertTrue(await(store.cooldownRemainingMillis("acme/alpha")) > 0, "precondition: open in the outage");

        shared.up = true;
        assertTrue(await(store.snapshot(List.of("acme/alpha"), MINUTE)).get("acme/alpha").coolingDown(),
                "in force until its cooldown ends");
        ticker.advance(MINUTE.plusSeconds(1));
        await(store.snapshot(List.of("acme/alpha"), MINUTE));   // the read that finds it no longer in force

        shared.up = false;
        assertEquals(0L, await(store.cooldownRemainingMillis("acme/alpha")), "the next outage starts without it");
        assertEquals(0L, localSnapshot("acme/alpha").fails(), "its failure count is gone too");
    }

    /**
     * In an outage a failure with its provider's hold lands on the local store as on the shared one, count and hold
     * together; both are dropped there once the shared store answers.
     */
    @Test
    void aFailureAndItsHoldTakenLocallyAreDroppedOnceTheSharedStoreAnswers() {
        shared.up = false;
        await(store.recordFailure("acme/alpha", 5, MINUTE, Duration.ofMinutes(30)));
        RouteSnapshot s = localSnapshot("acme/alpha");
        assertEquals(1L, s.fails());
        assertTrue(s.retryAfterMillis() > MINUTE.toMillis(), "held " + s.retryAfterMillis());

        shared.up = true;
        await(store.recordSuccess("acme/beta", 5, MINUTE));
        assertTrue(localSnapshot("acme/alpha").retryAfterMillis() > 0, "another route's write drops nothing here");
        await(store.recordSuccess("acme/alpha", 5, MINUTE));
        assertEquals(0L, localSnapshot("acme/alpha").retryAfterMillis(), "dropped once the shared store takes the "
                + "route's health");
        assertEquals(0L, localSnapshot("acme/alpha").fails());
    }

    /**
     * Readiness pings the shared store during an outage too: a ping, answered or not, drops nothing (an answer is no
     * write: a Redis at its memory limit answers pings); the route's first health write the shared store takes does.
     */
    @Test
    void aPingDropsNothingAndTheRoutesHealthWriteTheSharedStoreTakesDropsTheOutagesVerdicts() {
        shared.up = false;
        await(store.recordFailure("acme/alpha", 1, MINUTE));

        assertFalse(await(store.ping()));
        assertTrue(localSnapshot("acme/alpha").coolingDown(), "kept for the rest of the outage");

        shared.up = true;
        assertTrue(await(store.ping()));
        assertTrue(localSnapshot("acme/alpha").coolingDown(), "a ping is no write");
        await(store.recordSuccess("acme/alpha", 1, MINUTE));
        assertFalse(localSnapshot("acme/alpha").coolingDown());
    }

    /**
     * An outage's failure count of a route nothing reads again (not cooling: under max_fails) is dropped at the first
     * catalog poll the shared store answers: it was in force at the next outage, which began with the route one
     * failure from its cooldown (review28).
     */
    @Test
    void aCatalogPollDropsLocalHealthNoLongerInForce() {
        shared.up = false;
        await(store.recordFailure("acme/alpha", 2, MINUTE));
        assertEquals(1L, localSnapshot("acme/alpha").fails(), "precondition: counted locally");
        shared.up = true;
        await(store.catalogVersions());
        assertEquals(0L, localSnapshot("acme/alpha").fails(), "dropped at the poll");
    }

    /**
     * A Redis at its memory limit answers reads and refuses writes: a failure it refused is counted locally, and its
     * cooldown keeps the route out of the snapshots Redis answers until it ends. Each read Redis answered dropped it,
     * and a failing route took traffic every 2 s instead of once per fail_timeout (found by hunt29-c).
     */
    @Test
    void aCooldownTheSharedStoreRefusedKeepsTheRouteOutOfItsSnapshotsUntilItEnds() {
        shared.full = true;
        await(store.recordFailure("acme/alpha", 1, MINUTE));
        RouteSnapshot s = await(store.snapshot(List.of("acme/alpha", "acme/beta"), MINUTE)).get("acme/alpha");
        assertTrue(s.coolingDown(), "out, though the shared store never took the failure");
        assertEquals(1L, s.fails());
        assertFalse(await(shared.snapshot(List.of("acme/alpha"), MINUTE)).get("acme/alpha").coolingDown(),
                "precondition: the shared store answers without it");
        assertTrue(await(store.snapshot(List.of("acme/alpha"), MINUTE)).get("acme/alpha").coolingDown(),
                "still out at the next read");

        ticker.advance(MINUTE.plusSeconds(1));
        assertFalse(await(store.snapshot(List.of("acme/alpha"), MINUTE)).get("acme/alpha").coolingDown(),
                "back once the cooldown ended");
        assertEquals(0L, localSnapshot("acme/alpha").fails(), "and the local copy is dropped then");
    }

    // ---- operator flags set during an outage -----------------------------------------------------------------

    String sharedFlag(String route, String name) {
        return await(shared.snapshot(List.of(route), MINUTE)).get(route).blob(name).orElse(null);
    }

    /**
     * README: an admin edit made while Redis is unreachable takes effect on the instance at once and is written to
     * Redis when it answers again. A route suspended by its operator during an outage (a blob without a TTL) was
     * written only locally and lost once Redis answered: the route was back in service, on this instance too.
     */
    @Test
    void anOperatorFlagSetDuringAnOutageIsWrittenToTheSharedStoreWhenItAnswers() {
        shared.up = false;
        await(store.putRouteBlob("acme/alpha", "standing", "suspended", null));
        assertEquals("suspended", await(store.snapshot(List.of("acme/alpha"), MINUTE)).get("acme/alpha")
                .blob("standing").orElse(null), "precondition: in force locally during the outage");
        assertEquals(1, store.pendingEdits(), "pending, as a catalog edit made during an outage is");

        shared.up = true;
        await(store.catalogVersions());   // the poll that writes pending edits
        assertEquals("suspended", sharedFlag("acme/alpha", "standing"), "written to the shared store");
        assertEquals(0, store.pendingEdits());
        assertTrue(localSnapshot("acme/alpha").blob("standing").isEmpty(),
                "never in the local store, where it would be back in force at the next outage");
    }

    /** A verdict cleared during an outage (its neutral value written) is cleared on the shared store when it answers. */
    @Test
    void anOperatorFlagClearedDuringAnOutageIsClearedOnTheSharedStoreWhenItAnswers() {
        await(store.putRouteBlob("acme/alpha", "verification_operator", "fail", null));
        shared.up = false;
        await(store.putRouteBlob("acme/alpha", "verification_operator", "none", null));
        shared.up = true;
        assertEquals("fail", sharedFlag("acme/alpha", "verification_operator"), "precondition: still set there");
        await(store.catalogVersions());
        assertEquals("none", sharedFlag("acme/alpha", "verification_operator"));
    }

    /**
     * A flag set during an outage was set after the one the instance last saw: it replaces that one when the shared
     * store answers even within the same millisecond of the store's clock (its stamp is one past the seen one's).
     */
    @Test
    void aFlagSetDuringAnOutageReplacesTheOneSeenBeforeItInTheSameMillisecond() {
        java.time.InstantSource stopped = java.time.InstantSource.fixed(java.time.Instant.ofEpochMilli(1_000_000));
        Shared still = new Shared(new MemoryStateStore(ticker, FakeTimeStoreContract.TUNING, stopped));
        ResilientStateStore s = new ResilientStateStore(still, local, ResilientLedgerTest.SETTINGS, ticker);
        await(s.putRouteBlob("acme/alpha", "standing", "suspended", null));
        still.up = false;
        await(s.putRouteBlob("acme/alpha", "standing", "good", null));
        still.up = true;
        await(s.catalogVersions());
        assertEquals("good", await(still.snapshot(List.of("acme/alpha"), MINUTE)).get("acme/alpha").blobs()
                .get("standing"));
        assertEquals(0, s.lostEdits());
    }

    /** A flag written to the shared store after the outage supersedes the one set during it. */
    @Test
    void aLaterWriteOfTheSameFlagSupersedesThePendingOne() {
        shared.up = false;
        await(store.putRouteBlob("acme/alpha", "standing", "suspended", null));
        shared.up = true;
        await(store.putRouteBlob("acme/alpha", "standing", "active", null));
        await(store.catalogVersions());
        assertEquals("active", sharedFlag("acme/alpha", "standing"));
        assertEquals(0, store.pendingEdits());
        assertTrue(localSnapshot("acme/alpha").blob("standing").isEmpty(),
                "never in the local store, where it would be back in force at the next outage");
    }

    /**
     * A flag another instance set, seen here in a snapshot before the outage, is in force during it (the local store
     * never had it: a suspended route was back in service on every instance for the outage), and a flag set during the
     * outage is shown over it.
     */
    @Test
    void aFlagSeenBeforeAnOutageIsInForceDuringItWithTheOutagesOwnOverIt() {
        await(shared.putRouteBlob("acme/alpha", "standing", "suspended", null));
        await(shared.putRouteBlob("acme/alpha", "verification_operator", "fail:wrong model", null));
        await(store.snapshot(List.of("acme/alpha", "acme/beta"), MINUTE));
        shared.up = false;
        await(store.putRouteBlob("acme/alpha", "verification_operator", "pass", null));
        await(store.putRouteBlob("acme/beta", "standing", "suspended", null));

        Map<String, RouteSnapshot> out = await(store.snapshot(List.of("acme/alpha", "acme/beta", "acme/gamma"), MINUTE));

        assertEquals(Map.of("standing", "suspended", "verification_operator", "pass"), out.get("acme/alpha").blobs());
        assertEquals(Map.of("standing", "suspended"), out.get("acme/beta").blobs());
        assertEquals(Map.of(), out.get("acme/gamma").blobs());
    }

    /** Learned models (blobs with a TTL) written locally during an outage are traffic's, rebuilt: not pending. */
    @Test
    void aLearnedModelWrittenDuringAnOutageIsNotPending() {
        shared.up = false;
        await(store.putRouteBlob("acme/alpha", "ttft", "model", Duration.ofDays(7)));
        assertEquals(0, store.pendingEdits());
        shared.up = true;
        await(store.catalogVersions());
        assertEquals(null, sharedFlag("acme/alpha", "ttft"));
    }

    // ---- leases across an outage --------------------------------------------------------------------------

    int inflight(StateStore s, String route) {
        return await(s.snapshot(List.of(route), MINUTE)).get(route).inflight();
    }

    /**
     * A lease taken on the shared store and released while it does not answer is released there once it does: it was
     * counted in flight by every instance for the rest of its TTL (90 s in dispatch; hunt7).
     */
    @Test
    void aLeaseReleasedDuringAnOutageIsReleasedOnTheSharedStoreWhenItAnswers() {
        await(store.acquireLease("acme/alpha", "l1", MINUTE));
        await(store.acquireLease("acme/alpha", "l2", MINUTE));
        shared.up = false;
        await(store.releaseLease("acme/alpha", "l1"));
        shared.up = true;
        assertEquals(2, inflight(shared, "acme/alpha"), "precondition: the release did not reach it");
        await(store.catalogVersions());   // the poll that writes what waits
        assertEquals(1, inflight(shared, "acme/alpha"), "l1 released there, l2 still in flight");
        int sent = shared.releases.get();
        await(store.catalogVersions());
        assertEquals(sent, shared.releases.get(), "sent once");
    }

    /**
     * The releases kept during an outage are sent once the breaker has closed, not while it is half-open: it lets its
     * trial calls through and refuses the rest, which ended the round after one release and wrote the breaker's own
     * refusal over the outage's cause in readiness (review16).
     */
    @Test
    void releasesKeptDuringAnOutageWaitForTheBreakerToClose() {
        Shared shared = new Shared(this.shared.inner()) {
            @Override
            public Uni<Void> releaseLease(String routeId, String leaseId) {
                // answered a little later, on another thread, as Redis answers: the round's releases overlap
                return super.releaseLease(routeId, leaseId).onItem().delayIt().by(Duration.ofMillis(5));
            }
        };
        ResilientStateStore s = new ResilientStateStore(shared, local,
                new ResilientStateStore.Settings(Duration.ofMillis(500), 2, 0.5, Duration.ofMillis(50), 2), ticker);
        for (int i = 0; i < 40; i++) {
            await(s.acquireLease("acme/alpha", "l" + i, MINUTE));
        }
        shared.up = false;
        for (int i = 0; i < 40; i++) {
            await(s.releaseLease("acme/alpha", "l" + i));
        }
        assertTrue(s.degraded(), "precondition: the breaker opened");
        String cause = s.lastFailure();
        shared.up = true;
        dev.hedgerow.testsupport.Eventually.eventually(() -> {
            await(s.catalogVersions());
            return !s.degraded();
        }, "the breaker closes");
        dev.hedgerow.testsupport.Eventually.eventually(() -> {
            await(s.catalogVersions());
            return s.pendingReleases() == 0;
        }, "every release is sent");
        assertEquals(0, inflight(shared, "acme/alpha"));
        assertEquals(cause, s.lastFailure(), "the outage's cause is kept, not a half-open refusal");
    }

    /** A lease taken locally during an outage and released once the shared store answers is released locally too. */
    @Test
    void aLeaseTakenDuringAnOutageIsNotCountedAtTheNext() {
        shared.up = false;
        await(store.acquireLease("acme/alpha", "l1", MINUTE));
        shared.up = true;
        await(store.releaseLease("acme/alpha", "l1"));
        assertEquals(0, inflight(local, "acme/alpha"));
    }

    // ---- audit events written during an outage ------------------------------------------------------------

    /**
     * README: every change an operator makes through the admin API is one admin audit event. One made during an
     * outage was written only to the instance's local stream and never reached the shared one, so no instance could
     * say who made it once Redis answered. Kept events are written there, oldest first, with their own time.
     */
    @Test
    void auditEventsWrittenDuringAnOutageReachTheSharedStreamWhenItAnswers() {
        shared.up = false;
        await(store.appendAudit("acme", Map.of("type", "admin", "action", "drain", "time", "t1"), 100));
        await(store.appendAudit("acme", Map.of("type", "request", "status", "200", "time", "t2"), 100));
        assertEquals(2, store.pendingAudit());
        shared.up = true;
        await(store.catalogVersions());
        List<AuditRecord> out = await(shared.readAudit("acme", 10));
        assertEquals(List.of("t1", "t2"), out.stream().map(r -> r.fields().get("time")).sorted().toList(), out.toString());
        assertEquals(0, store.pendingAudit());
        await(store.catalogVersions());
        assertEquals(2, await(shared.readAudit("acme", 10)).size(), "each is written once");
        assertEquals(2, shared.searchedAppends.get(), "a write that failed so may have landed: searched for first");
    }

    /**
     * An event whose write was never sent (no connection could be made; the same for a call the guard's open breaker
     * refused) cannot be in the stream: its replay appends it without searching the stream for it, a scan of up to
     * 10 000 entries per event that made a 10 000-event backlog take three minutes (hunt27).
     */
    @Test
    void anEventNeverSentIsReplayedWithoutASearch() {
        shared.refusal = () -> new java.net.ConnectException("Connection refused");
        shared.up = false;
        await(store.appendAudit("acme", Map.of("type", "admin", "action", "drain", "time", "t1"), 100));
        await(store.appendAudit("acme", Map.of("type", "request", "status", "200", "time", "t2"), 100));
        shared.up = true;
        await(store.catalogVersions());
        assertEquals(0, store.pendingAudit());
        assertEquals(2, await(shared.readAudit("acme", 10)).size(), "each is written once");
        assertEquals(0, shared.searchedAppends.get(), "no search");
    }

    /**
     * Operators' actions are kept past the cap on other events, but not without bound: past twice that cap the oldest
     * event goes, counted as dropped (hunt27: 12 000 admin calls during an outage were all kept).
     */
    @Test
    void operatorsEventsKeptDuringAnOutageAreBounded() {
        shared.up = false;
        int extra = 5;
        for (int i = 0; i < ResilientStateStore.MAX_PENDING_OPERATOR_AUDIT + extra; i++) {
            await(store.appendAudit("acme", Map.of("type", "admin", "action", "reset", "time", "t" + i), 100));
        }
        assertEquals(ResilientStateStore.MAX_PENDING_OPERATOR_AUDIT, store.pendingAudit());
        assertEquals(extra, store.droppedAudit());
    }
}
