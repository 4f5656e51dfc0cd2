package dev.hedgerow.dispatch;

import dev.hedgerow.routing.LearnedModels;
import dev.hedgerow.state.StateStore;
import dev.hedgerow.time.Scheduler;
import dev.hedgerow.time.Ticker;
import dev.hedgerow.upstream.UpstreamClient;

import java.time.InstantSource;
import java.util.List;
import java.util.function.ToIntFunction;

/**
 * Runs requests: one {@link Dispatch} per request. The chain's order (the org's hedge budget, hedge, failover / resume,
 * per-route breaker, attempt limits, the call) is assembled here and in {@link Dispatch} only. Thread-safe.
 */
public final class Dispatcher {

    /**
     * What dispatch needs from the outside world.
     *
     * @param tokens    counts tokens of a text (billing when the upstream sends no usage)
     * @param models    the instance's one learned-model store: dispatch learns TTFT, decode, gaps and thinking here
     * @param clock     the wall clock, what a provider's {@code Retry-After} HTTP-date is relative to (the ticker
     *                  measures every interval)
     */
    public record Deps(UpstreamClient upstream, StateStore store, Scheduler scheduler, Ticker ticker,
                       ToIntFunction<String> tokens, DispatchObserver observer, LearnedModels models,
                       InstantSource clock) {
    }

    /** Lets the edge report a client hang-up. */
    public interface Handle {
        /** The client went away: stop everything, log 499, cool nothing down. */
        void clientGone();
    }

    private final Deps deps;

    public Dispatcher(Deps deps) {
        this.deps = deps;
    }

    /**
     * The client hung up before its request could be dispatched (while a long prompt was counted, or the routes were
     * planned): nothing is sent upstream, nothing cools down, and the request is logged as 499 like any other hang-up.
     */
    public void clientGoneBeforeStart(DispatchRequest request) {
        deps.observer().finished(request, 499, List.of(), null, null);
    }

    public Handle start(DispatchRequest request, ClientSink sink) {
        Dispatch d = new Dispatch(deps, request, sink);
        d.start();
        return d::clientGone;
    }
}
