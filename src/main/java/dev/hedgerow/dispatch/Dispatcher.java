package dev.hedgerow.dispatch;

import dev.hedgerow.api.ApiError;
import dev.hedgerow.catalog.Org;
import dev.hedgerow.catalog.Route;
import dev.hedgerow.routing.LearnedModels;
import dev.hedgerow.state.StateStore;
import dev.hedgerow.time.Scheduler;
import dev.hedgerow.time.Ticker;
import dev.hedgerow.upstream.UpstreamClient;

import java.time.InstantSource;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.function.BiPredicate;
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
     * @param stillRouted whether a route a request planned on is still one the catalog lets it take now (an operator
     *                  may have drained, moved or removed it since, or pinned another): asked before each hedge,
     *                  failover and resume
     */
    public record Deps(UpstreamClient upstream, StateStore store, Scheduler scheduler, Ticker ticker,
                       ToIntFunction<String> tokens, DispatchObserver observer, LearnedModels models,
                       InstantSource clock, BiPredicate<Org, Route> stillRouted) {
        /** Deps whose catalog never changes under a request. */
        public Deps(UpstreamClient upstream, StateStore store, Scheduler scheduler, Ticker ticker,
                    ToIntFunction<String> tokens, DispatchObserver observer, LearnedModels models,
                    InstantSource clock) {
            this(upstream, store, scheduler, ticker, tokens, observer, models, clock, (org, route) -> true);
        }
    }

    /** Lets the edge report a client hang-up. */
    public interface Handle {
        /** The client went away: stop everything, log 499, cool nothing down. */
        void clientGone();
    }

    private final Deps deps;
    /** The routes whose provider refused {@code stream_options}, for every request of this instance. */
    private final StreamOptionsRefusals streamOptionsRefusals = new StreamOptionsRefusals();
    /** Every request started and not yet ended (its answer ended, or its client gone): what a shutdown must end. */
    private final Set<Dispatch> live = ConcurrentHashMap.newKeySet();
    /** Set once by {@link #shutDown}: from then on a request is ended as it starts. */
    private volatile ApiError stopped;

    public Dispatcher(Deps deps) {
        this.deps = deps;
    }

    /** Requests started and not yet ended. */
    public int live() {
        return live.size();
    }

    /**
     * The instance's grace period for requests in flight is over: every request still running ends now with
     * {@code err} (a stream as its error event, see {@link Dispatch#shutDown}), and so does any request that starts
     * after this (one planned while the grace period ran out). Returns how many were ended.
     */
    public int shutDown(ApiError err) {
        stopped = err;
        int n = 0;
        for (Dispatch d : live) {
            d.shutDown(err);
            n++;
        }
        return n;
    }

    /**
     * The client hung up before its request could be dispatched (while a long prompt was counted, or the routes were
     * planned): nothing is sent upstream, nothing cools down, and the request is logged as 499 like any other hang-up.
     */
    public void clientGoneBeforeStart(DispatchRequest request) {
        deps.observer().finished(request, 499, List.of(), null, null);
    }

    public Handle start(DispatchRequest request, ClientSink sink) {
        Dispatch[] self = new Dispatch[1];
        Dispatch d = new Dispatch(deps, streamOptionsRefusals, request, new Ending(sink, () -> live.remove(self[0])));
        self[0] = d;
        live.add(d);
        ApiError stop = stopped;
        if (stop != null) {
            d.shutDown(stop);
            return () -> { };
        }
        try {
            d.start();
        } catch (RuntimeException e) {
            // a bug: the edge answers 500, and nothing of this request may outlive it (attempts, leases, timers, its
            // place among the live requests, which a shutdown would wait its whole grace period for)
            live.remove(d);
            d.abort();
            throw e;
        }
        if (stopped != null) { // shut down while it started: the loop above may have missed it
            d.shutDown(stopped);
        }
        return () -> {
            live.remove(d);
            d.clientGone();
        };
    }

    /** A sink that also reports the end of its answer (once): the dispatch then leaves {@link #live}. */
    private static final class Ending implements ClientSink {
        private final ClientSink sink;
        private final Runnable ended;

        Ending(ClientSink sink, Runnable ended) {
            this.sink = sink;
            this.ended = ended;
        }

        @Override
        public void head(int status, Map<String, String> headers) {
            sink.head(status, headers);
        }

        @Override
        public void write(byte[] bytes) {
            sink.write(bytes);
        }

        @Override
        public void end() {
            ended.run();
            sink.end();
        }

        @Override
        public void end(byte[] last) {
            ended.run();
            sink.end(last);
        }
    }
}
