package dev.hedgerow.state;

import dev.hedgerow.time.FakeScheduler;
import dev.hedgerow.time.FakeTicker;
import io.smallrye.mutiny.Uni;
import org.junit.jupiter.api.Test;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.atomic.AtomicReference;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * The guard's timeout against a paused process, on fake time: Lambda freezes an environment as soon as a response
 * ends, with its last writes still waiting for Redis's replies, and on thaw the timeouts fired before the event loop
 * read the replies already there: each counted against the breaker, which opened (found by hunt25). A timer that fires
 * late says the process was paused, and the call gets the timeout again; one that fires on time fails the call.
 */
class ResilientPauseTest {
    /** 1 s per call; opens after 2 failed calls of 2. */
    static final ResilientStateStore.Settings SETTINGS =
            new ResilientStateStore.Settings(Duration.ofSeconds(1), 2, 1.0, Duration.ofSeconds(2), 2);

    final FakeTicker ticker = new FakeTicker();
    final FakeScheduler scheduler = new FakeScheduler(ticker);
    /** Replies the shared store owes, answered by hand. */
    final List<CompletableFuture<Long>> owed = new ArrayList<>();
    final StateStore shared = new ForwardingStateStore(new MemoryStateStore(ticker)) {
        @Override
        public Uni<Long> cooldownRemainingMillis(String routeId) {
            CompletableFuture<Long> f = new CompletableFuture<>();
            owed.add(f);
            return Uni.createFrom().completionStage(f);
        }
    };
    final ResilientStateStore store = new ResilientStateStore(shared, new MemoryStateStore(ticker), SETTINGS, ticker,
            scheduler);

    /** A call's answer, or its failure, as it comes. */
    static final class Outcome {
        final AtomicReference<Long> item = new AtomicReference<>();
        final AtomicReference<Throwable> failure = new AtomicReference<>();
    }

    Outcome call() {
        Outcome o = new Outcome();
        store.cooldownRemainingMillis("acme/a").subscribe().with(o.item::set, o.failure::set);
        return o;
    }

    /** The process is paused for {@code d}: no timer runs meanwhile, then those due run late. */
    void pause(Duration d) {
        ticker.advance(d);
        scheduler.advance(Duration.ZERO);
    }

    @Test
    void callsWaitingAcrossAPauseAreAnsweredByTheSharedStoreAndTheBreakerStaysClosed() {
        Outcome first = call();
        Outcome second = call();
        pause(Duration.ofSeconds(5));
        assertNull(first.item.get());
        assertNull(first.failure.get(), "not failed at the thaw: the replies may be in the socket");
        owed.forEach(f -> f.complete(7L));
        assertEquals(7L, first.item.get(), "the shared store's answer, not the local store's 0");
        assertEquals(7L, second.item.get());
        assertEquals(0, store.fallbacks());
        assertEquals("CLOSED", store.breakerState());
        assertEquals(0, scheduler.pending(), "no timer left");
    }

    @Test
    void aCallStillUnansweredOneTimeoutAfterThePauseFailsOverToTheLocalStore() {
        Outcome o = call();
        pause(Duration.ofSeconds(5));
        scheduler.advance(Duration.ofMillis(999));
        assertNull(o.item.get());
        scheduler.advance(Duration.ofMillis(1));
        assertEquals(0L, o.item.get(), "the local store's answer");
        assertEquals(1, store.fallbacks());
        assertTrue(store.lastFailure().contains("TimeoutException"), store.lastFailure());
    }

    @Test
    void aTimerFiringOnTimeFailsTheCall() {
        Outcome o = call();
        scheduler.advance(Duration.ofMillis(999));
        assertNull(o.item.get());
        assertFalse(owed.get(0).isDone());
        scheduler.advance(Duration.ofMillis(1));
        assertEquals(0L, o.item.get(), "the local store's answer");
        assertEquals(1, store.fallbacks());
    }
}
