package dev.hedgerow.testsupport;

import dev.hedgerow.catalog.Org;
import dev.hedgerow.catalog.Route;
import dev.hedgerow.dispatch.DispatchObserver;
import dev.hedgerow.dispatch.Dispatcher;
import dev.hedgerow.routing.Candidate;
import dev.hedgerow.routing.LearnedModels;
import dev.hedgerow.routing.Router;
import dev.hedgerow.routing.TtftEstimate;
import dev.hedgerow.routing.TtftPredictor;
import dev.hedgerow.state.RouteSnapshot;
import dev.hedgerow.state.StateStore;
import dev.hedgerow.time.Scheduler;
import dev.hedgerow.time.Ticker;
import dev.hedgerow.upstream.UpstreamClient;

import java.time.Instant;
import java.util.function.ToIntFunction;

/**
 * The wiring the dispatcher's unit tests share: a {@link Dispatcher.Deps} whose learned models read the test's store
 * on the test's clock, and a routing {@link Candidate} for one route of a parsed catalog. Every knob a test controls
 * (upstream, store, scheduler, ticker, token count, observer; a candidate's state, half-open flag and TTFT estimate)
 * stays a parameter; nothing here asserts. Stateless, so safe from any thread.
 */
public final class DispatchFixture {
    private DispatchFixture() {
    }

    /** The dispatcher's dependencies: {@link #models} on the same store and ticker, a wall clock read from it. */
    public static Dispatcher.Deps deps(UpstreamClient upstream, StateStore store, Scheduler scheduler, Ticker ticker,
                                       ToIntFunction<String> tokens, DispatchObserver observer) {
        return new Dispatcher.Deps(upstream, store, scheduler, ticker, tokens, observer, models(store, ticker),
                () -> Instant.ofEpochMilli(ticker.millis()));
    }

    /** Learned models over the store with the default prior, their wall clock read from the ticker (fake time). */
    public static LearnedModels models(StateStore store, Ticker ticker) {
        return new LearnedModels(store, () -> Instant.ofEpochMilli(ticker.millis()), TtftPredictor.Prior.defaults());
    }

    /** A candidate for the org's route, keyed as the router keys it and served by the route's own provider. */
    public static Candidate candidate(Org org, String routeId, RouteSnapshot state, boolean halfOpen,
                                      TtftEstimate estimate) {
        Route r = org.route(routeId).orElseThrow(() -> new IllegalArgumentException("no route " + routeId));
        return new Candidate(Router.key(org, r), r, org.provider(r.provider()).orElseThrow(), state, halfOpen,
                estimate);
    }
}
