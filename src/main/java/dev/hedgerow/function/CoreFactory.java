package dev.hedgerow.function;

import dev.hedgerow.api.ChatRequest;
import dev.hedgerow.audit.AuditLog;
import dev.hedgerow.audit.RequestRecorder;
import dev.hedgerow.catalog.CatalogCodec;
import dev.hedgerow.catalog.CatalogService;
import dev.hedgerow.catalog.GroupSettings;
import dev.hedgerow.catalog.Org;
import dev.hedgerow.catalog.Route;
import dev.hedgerow.catalog.Strategy;
import dev.hedgerow.catalog.SecretBox;
import dev.hedgerow.dispatch.AttemptRecord;
import dev.hedgerow.dispatch.DispatchObserver;
import dev.hedgerow.dispatch.DispatchRequest;
import dev.hedgerow.dispatch.Dispatcher;
import dev.hedgerow.routing.AccuracyJudge;
import dev.hedgerow.routing.Balancers;
import dev.hedgerow.routing.Candidate;
import dev.hedgerow.routing.LearnedModels;
import dev.hedgerow.routing.PrefixHasher;
import dev.hedgerow.routing.Router;
import dev.hedgerow.routing.SemanticEmbeddings;
import dev.hedgerow.routing.TokenCounter;
import dev.hedgerow.routing.TtftPredictor;
import dev.hedgerow.runtime.Hedgerow;
import dev.hedgerow.state.ResilientStateStore;
import dev.hedgerow.state.StateStore;
import dev.hedgerow.state.UsageSample;
import dev.hedgerow.time.Scheduler;
import dev.hedgerow.time.Ticker;
import dev.hedgerow.upstream.UpstreamClient;

import java.time.Duration;
import java.time.InstantSource;
import java.util.List;
import java.util.SplittableRandom;

/**
 * Assembles one gateway instance's core from its ports. The one place where the parts meet; used by the Quarkus
 * wiring and by tests that run several instances in one JVM.
 */
public final class CoreFactory {
    private CoreFactory() {
    }

    /**
     * Records in the org's audit log each admin edit {@code guard} drops after an outage (it lost to an edit stored
     * meanwhile): the edit's own event said it was done, and only the instance's log and readiness said otherwise
     * (found by hunt14).
     */
    public static void auditLostEdits(Hedgerow core, ResilientStateStore guard) {
        guard.onLostEdit(lost -> core.audit().admin(lost.orgId(), AuditLog.EDIT_DROPPED, "", lost.route(), "", "",
                lost.message()).subscribe().with(id -> { }, t -> { }));
    }

    /**
     * Extra observers (metrics) are chained after learning and accounting. Provider keys are sealed with the
     * process-wide ephemeral key: right for tests and for instances sharing one JVM.
     */
    public static Hedgerow create(StateStore store, UpstreamClient upstream, Scheduler scheduler, Ticker ticker,
                                  InstantSource clock, DispatchObserver extra) {
        return create(store, upstream, scheduler, ticker, clock, extra, SecretBox.ephemeral());
    }

    /** As above, with the box that seals provider API keys in the stored catalog ({@link SecretBox#fromEnvironment}). */
    public static Hedgerow create(StateStore store, UpstreamClient upstream, Scheduler scheduler, Ticker ticker,
                                  InstantSource clock, DispatchObserver extra, SecretBox secrets) {
        CatalogService catalog = new CatalogService(store, scheduler, org -> CatalogCodec.toJson(org, secrets),
                json -> CatalogCodec.fromJson(json, secrets));
        TokenCounter tokens = TokenCounter.shared();
        PrefixHasher prefixes = PrefixHasher.defaults(tokens);
        LearnedModels models = new LearnedModels(store, clock, TtftPredictor.Prior.defaults());
        Router router = new Router(store, clock, settings -> Balancers.forSettings(settings, models), models,
                new SemanticEmbeddings(upstream, store));
        AuditLog audit = new AuditLog(store, clock);
        DispatchObserver accounting = chain(new PrefixAffinity(store),
                new RequestRecorder(store, audit, clock), extra);
        AccuracyJudge judge = new AccuracyJudge(upstream, store, models, scheduler, tokens, new SplittableRandom(),
                AccuracyJudge.DEFAULT_MAX_IN_FLIGHT, new AccuracyJudge.Listener() {
                    @Override
                    public void judged(String orgId, AccuracyJudge.Outcome outcome) {
                        accounting.judged(orgId, outcome);
                    }

                    @Override
                    public void billed(Org org, Route route, UsageSample usage) {
                        accounting.judgeBilled(org, route, usage);
                    }
                });
        DispatchObserver observers = chain(accounting, new JudgeAnswers(judge));
        Dispatcher dispatcher = new Dispatcher(new Dispatcher.Deps(upstream, store, scheduler, ticker,
                tokens::countText, observers, models, clock,
                (org, route) -> Router.stillRouted(catalog.current(), org, route)));
        return new Hedgerow(store, catalog, router, dispatcher, audit, tokens, prefixes, clock, models, upstream);
    }

    /**
     * The write side of prefix-cache affinity: after a successful auto-routed request, the route that served it
     * holds the prompt's prefix blocks for {@link #TTL} (about how long an engine keeps an idle prefix cached).
     */
    private record PrefixAffinity(StateStore store) implements DispatchObserver {
        static final Duration TTL = Duration.ofMinutes(5);

        @Override
        public void finished(DispatchRequest request, int status, List<AttemptRecord> trail, UsageSample billed,
                             Candidate winner) {
            if (status == 200 && winner != null && request.settings().strategy() == Strategy.AUTO
                    && !request.facts().prefixHashes().isEmpty()) {
                store.putAffinity(request.org().id(), request.facts().prefixHashes(), winner.key(), TTL)
                        .subscribe().with(v -> { }, t -> { });
            }
        }
    }

    /**
     * The judge of {@code llm_accuracy} groups: each answer such a group gave its client is handed to it (which
     * samples, and judges in the background).
     */
    private record JudgeAnswers(AccuracyJudge judge) implements DispatchObserver {
        @Override
        public void answered(DispatchRequest request, Candidate route, String content) {
            GroupSettings.Judge j = request.settings().balancer().judge();
            if (j != null && request.request() instanceof ChatRequest chat) {
                judge.answered(request.org(), j, route.key(), chat.messages(), content);
            }
        }
    }

    static DispatchObserver chain(DispatchObserver... all) {
        List<DispatchObserver> list = java.util.Arrays.stream(all).filter(o -> o != null).toList();
        return new DispatchObserver() {
            @Override
            public void firstToken(Candidate route, int promptTokens, long ttftMs, boolean reasoningFirst) {
                list.forEach(o -> o.firstToken(route, promptTokens, ttftMs, reasoningFirst));
            }

            @Override
            public void wholeResponse(Candidate route, int promptTokens, long latencyMs) {
                list.forEach(o -> o.wholeResponse(route, promptTokens, latencyMs));
            }

            @Override
            public void decoded(Candidate route, int tokens, long decodeMs, long e2eMs) {
                list.forEach(o -> o.decoded(route, tokens, decodeMs, e2eMs));
            }

            @Override
            public void gap(Candidate route, long gapMs) {
                list.forEach(o -> o.gap(route, gapMs));
            }

            @Override
            public void routeUsage(DispatchRequest request, Candidate route, UsageSample usage) {
                list.forEach(o -> o.routeUsage(request, route, usage));
            }

            @Override
            public void finished(DispatchRequest request, int status, List<AttemptRecord> trail, UsageSample billed,
                                 Candidate winner) {
                list.forEach(o -> o.finished(request, status, trail, billed, winner));
            }

            @Override
            public void refused(DispatchRequest request, int status, String reason, String message) {
                list.forEach(o -> o.refused(request, status, reason, message));
            }

            @Override
            public void answered(DispatchRequest request, Candidate route, String content) {
                list.forEach(o -> o.answered(request, route, content));
            }

            @Override
            public void judged(String orgId, AccuracyJudge.Outcome outcome) {
                list.forEach(o -> o.judged(orgId, outcome));
            }

            @Override
            public void judgeBilled(Org org, Route judge, UsageSample usage) {
                list.forEach(o -> o.judgeBilled(org, judge, usage));
            }

            @Override
            public void hedge(DispatchRequest request, boolean fired) {
                list.forEach(o -> o.hedge(request, fired));
            }

            @Override
            public void wastedTokens(long tokens) {
                list.forEach(o -> o.wastedTokens(tokens));
            }

            @Override
            public void headBeforeContent(DispatchRequest request) {
                list.forEach(o -> o.headBeforeContent(request));
            }

            @Override
            public void resumed(DispatchRequest request, String reason) {
                list.forEach(o -> o.resumed(request, reason));
            }

            @Override
            public void malformedFrame(Candidate route) {
                list.forEach(o -> o.malformedFrame(route));
            }
        };
    }
}
