package dev.hedgerow.state;

import dev.hedgerow.time.FakeTicker;
import io.smallrye.mutiny.Uni;
import org.junit.jupiter.api.Test;

import java.io.IOException;
import java.lang.reflect.InvocationTargetException;
import java.lang.reflect.Proxy;
import java.time.Duration;
import java.time.Instant;
import java.time.InstantSource;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicReference;

import static org.junit.jupiter.api.Assertions.assertEquals;

/**
 * Operator flags across data losses and outages, with several instances ({@link ResilientStateStore}s) on one shared
 * store that can lose everything (a FLUSHALL: the store behind a proxy is swapped for an empty one) and whose clock the
 * test sets. Found by review16 in the first version of stamped flags; the end-to-end cases over HTTP and Redis are
 * PartitionedEditTest's.
 */
class FlagStampsTest {
    static final Duration MINUTE = Duration.ofSeconds(60);
    static final String ROUTE = "acme/alpha";
    final FakeTicker ticker = new FakeTicker();
    /** The shared store's clock (Redis' TIME), in ms. */
    final AtomicLong wall = new AtomicLong(1_800_000_000_000L);
    final InstantSource clock = () -> Instant.ofEpochMilli(wall.get());
    final AtomicReference<StateStore> redis = new AtomicReference<>(emptyStore());
    final StateStore shared = (StateStore) Proxy.newProxyInstance(StateStore.class.getClassLoader(),
            new Class<?>[]{StateStore.class}, (p, m, a) -> {
                try {
                    return m.invoke(redis.get(), a);
                } catch (InvocationTargetException e) {
                    throw e.getCause();
                }
            });

    MemoryStateStore emptyStore() {
        return new MemoryStateStore(ticker, FakeTimeStoreContract.TUNING, clock);
    }

    /** Redis loses all its data. */
    void flushAll() {
        redis.set(emptyStore());
    }

    /** Both clocks move on together. */
    void advance(Duration d) {
        ticker.advance(d);
        wall.addAndGet(d.toMillis());
    }

    static <T> T await(Uni<T> u) {
        return u.await().atMost(Duration.ofSeconds(5));
    }

    /** The shared store, refusing flag writes while {@link #up} is false, as an unreachable Redis does. */
    final class Cut extends ForwardingStateStore {
        final AtomicBoolean up = new AtomicBoolean(true);
        /** Set: the next write-back lands, and its answer never comes (a stall). */
        final AtomicBoolean landThenStall = new AtomicBoolean();
        /** Set: writes of blobs other than flags fail (their script timed out), flags' land. */
        final AtomicBoolean blobsFail = new AtomicBoolean();

        Cut() {
            super(shared);
        }

        private <T> Uni<T> or(java.util.function.Supplier<Uni<T>> call) {
            return up.get() ? call.get() : Uni.createFrom().failure(new IOException("connection refused"));
        }

        @Override
        public Uni<Long> putRouteFlag(String routeId, String name, String value) {
            return or(() -> super.putRouteFlag(routeId, name, value));
        }

        @Override
        public Uni<Void> putRouteBlobs(String routeId, List<RouteBlob> blobs) {
            // failing a little later, as a script that timed out does: the flag's write, sent with it, has landed
            return blobsFail.get() ? Uni.createFrom().voidItem().onItem().delayIt().by(Duration.ofMillis(20))
                    .onItem().<Void>failWith(x -> new IOException("timed out"))
                    : or(() -> super.putRouteBlobs(routeId, blobs));
        }

        @Override
        public Uni<Optional<Long>> restoreRouteFlag(String routeId, String name, String value, FlagTime when) {
            if (landThenStall.getAndSet(false)) {
                await(super.restoreRouteFlag(routeId, name, value, when));
                return Uni.createFrom().nothing();
            }
            return or(() -> super.restoreRouteFlag(routeId, name, value, when));
        }
    }

    ResilientStateStore instance(StateStore below) {
        return new ResilientStateStore(below, new MemoryStateStore(ticker, FakeTimeStoreContract.TUNING),
                ResilientLedgerTest.SETTINGS, ticker);
    }

    ResilientStateStore instance() {
        return instance(shared);
    }

    static void set(ResilientStateStore s, String standing) {
        await(s.putRouteBlob(ROUTE, "standing", standing, null));
    }

    static void read(ResilientStateStore s) {
        await(s.snapshot(List.of(ROUTE), MINUTE));
    }

    String stored() {
        return await(redis.get().snapshot(List.of(ROUTE), MINUTE)).get(ROUTE).blobs().get("standing");
    }

    /**
     * The latest flag is 'suspended', seen by A; B last saw an older 'suspended', C the 'good' between them. After a
     * data loss B writes back its 'suspended'; A, reading the same value with an older stamp, lowered its copy's stamp
     * to it, so C's 'good' then passed for later and the fleet ended with it. A keeps its stamp and writes it.
     */
    @Test
    void theSameValueWrittenBackWithAnOlderStampDoesNotLowerTheLaterOne() {
        ResilientStateStore a = instance();
        ResilientStateStore b = instance();
        ResilientStateStore c = instance();
        set(a, "suspended");
        read(b);
        advance(Duration.ofSeconds(1));
        set(a, "good");
        read(c);
        advance(Duration.ofSeconds(1));
        set(a, "suspended");
        flushAll();
        read(b);   // B writes back its older 'suspended'
        read(a);   // the same value, with an older stamp
        read(c);   // C's 'good' is not later than A's 'suspended'
        read(a);
        read(b);
        read(c);
        assertEquals("suspended", stored(), "the latest flag any instance saw");
    }

    /**
     * A flag set during an outage whose write-back landed but was not answered in time (a stall) is sent again: the
     * store holds it already, which is not another instance's flag beating it (it was counted lost and audited so).
     */
    @Test
    void aPendingFlagWhoseWriteLandedUnansweredIsNotReportedLost() {
        Cut cut = new Cut();
        ResilientStateStore a = instance(cut);
        List<ResilientStateStore.LostEdit> dropped = new ArrayList<>();
        a.onLostEdit(dropped::add);
        set(a, "good");
        cut.up.set(false);
        set(a, "suspended");   // pending
        cut.up.set(true);
        cut.landThenStall.set(true);
        await(a.catalogVersions());   // lands, answered from the mirror when the guard gives up
        await(a.catalogVersions());   // sent again
        assertEquals("suspended", stored());
        assertEquals(0, a.pendingEdits());
        assertEquals(0, a.lostEdits(), "its own flag reported lost: " + dropped);
    }

    /**
     * A flag set during an outage is stamped by the shared store's clock less its age, as this instance's ticker
     * measured it: set before a flag set elsewhere meanwhile, it loses to it; set after, it wins. No instance's wall
     * clock is compared with the store's (one running a day ahead stamped a flag that beat every verdict of that day).
     */
    @Test
    void aFlagSetDuringAnOutageIsOrderedByWhenItWasSetAsTheInstanceTimedIt() {
        Cut cut = new Cut();
        ResilientStateStore a = instance(cut);
        ResilientStateStore b = instance();
        set(b, "good");
        read(a);
        cut.up.set(false);
        set(a, "suspended");   // A, cut off, first
        advance(Duration.ofSeconds(5));
        set(b, "drained");     // B five seconds later
        advance(Duration.ofSeconds(5));
        cut.up.set(true);
        await(a.catalogVersions());
        assertEquals("drained", stored(), "the flag set last holds");
        assertEquals(1, a.lostEdits());

        cut.up.set(false);
        advance(Duration.ofSeconds(1));
        set(b, "good");        // B first this time
        advance(Duration.ofSeconds(5));
        set(a, "suspended");   // A, cut off, five seconds later
        advance(Duration.ofSeconds(5));
        cut.up.set(true);
        await(a.catalogVersions());
        assertEquals("suspended", stored(), "the flag set last holds");
        assertEquals(1, a.lostEdits());
    }

    /**
     * A batch holding a flag and learned blobs (BatchingStateStore merges a route's writes) whose learned part failed
     * keeps as pending only what did not land: the flag, taken by the store, was kept too, and written at the next poll
     * over a flag set through another instance meanwhile (review16).
     */
    @Test
    void aFlagTheStoreTookIsNotKeptAsPendingWhenTheRestOfItsBatchFailed() {
        Cut cut = new Cut();
        ResilientStateStore a = instance(cut);
        ResilientStateStore b = instance();
        cut.blobsFail.set(true);
        await(a.putRouteBlobs(ROUTE, List.of(new StateStore.RouteBlob("standing", "suspended", null),
                new StateStore.RouteBlob("ewma", "e", MINUTE))));
        cut.blobsFail.set(false);
        assertEquals(0, a.pendingEdits(), "the flag landed: nothing of it waits");
        advance(Duration.ofSeconds(1));
        set(b, "good");
        await(a.catalogVersions());
        assertEquals("good", stored(), "the flag set later holds");
    }
}
