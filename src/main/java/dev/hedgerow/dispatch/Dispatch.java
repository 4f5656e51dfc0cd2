package dev.hedgerow.dispatch;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.hedgerow.api.ApiError;
import dev.hedgerow.api.ChatRequest;
import dev.hedgerow.api.EmbeddingsRequest;
import dev.hedgerow.api.RetryAdvice;
import dev.hedgerow.catalog.FailoverCriterion;
import dev.hedgerow.catalog.GroupSettings;
import dev.hedgerow.catalog.HedgeBudget;
import dev.hedgerow.dispatch.Attempt.Failure;
import dev.hedgerow.dispatch.Attempt.Kind;
import dev.hedgerow.routing.Candidate;
import dev.hedgerow.routing.Generation;
import dev.hedgerow.routing.RoutePlan;
import dev.hedgerow.state.RouteSnapshot;
import dev.hedgerow.state.UsageSample;
import dev.hedgerow.time.Cancellable;
import dev.hedgerow.upstream.SseEvent;
import dev.hedgerow.upstream.TransportFailure;
import dev.hedgerow.upstream.UpstreamRequest;

import java.io.ByteArrayOutputStream;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import java.util.UUID;

/**
 * One request's life: attempts, the hedging race, failover before the first content, resume after it, the stall
 * watchdog and the attempt trail. Every entry point (upstream events, timers, store replies, client hang-up)
 * synchronizes on this object, so the state below is confined to it.
 *
 * <p>The commit point: until some attempt streams content, nothing reaches the client (the response head is held),
 * so failover and hedging are invisible. The first content commits that attempt; from then on a failure resumes
 * the stream on another route from the exact text already delivered ({@link Transcript}). A stream silent for the
 * group's {@code head_hold} gets its head early, then keep-alive comments: still no content reached the client, so
 * failover and hedging go on unseen, but a final error can then only be the stream's error event.
 *
 * <p>A stream of several choices ({@code n > 1}, {@link Choices}) commits, fails over and hedges as one choice's
 * does (the first content of any choice commits), and is whole once every choice has finished. After the commit it
 * is never resumed (a resume continues one text): a break, a truncation or a stall ends it with the error event a
 * stream under {@code resume_mid_stream: false} ends with, and its tool calls go out as they come.
 *
 * <p>This class owns the decisions (race, failover, resume, finish), the timers and the lock; its collaborators,
 * all called under that lock, do the rest: {@link Attempt} (one upstream exchange), {@link RouteChoice},
 * {@link RouteHealth}, {@link ProbeSlots}, {@link TimingWindows}, {@link UpstreamCall}, {@link UpstreamReplies},
 * {@link ClientOutput} (all the client sees), {@link Billing} and {@link AttemptTrail}.
 *
 * <p>An embeddings request ({@link DispatchRequest#embeddings}) takes the non-streamed path with everything before
 * the answer as for chat (the plan's order, at most three attempts, failover by the group's criteria, timeouts,
 * breaker, holds, half-open probe slots, leases, retry advice, a hang-up as 499), and no hedge: its answer is one
 * short whole call, where a failed or silent attempt already fails over, and a hedge would pay for a batch of inputs
 * twice whenever a route is merely slow. With no stream there is nothing to resume. Its answer is relayed as the
 * provider wrote it ({@link EmbeddingsReply}).
 */
final class Dispatch {
    private static final System.Logger LOG = System.getLogger("dev.hedgerow.dispatch");
    private static final Duration LEASE_TTL = Duration.ofSeconds(90);
    /** Leases are renewed three times per TTL (a constant: {@code Duration.dividedBy} goes through BigDecimal). */
    private static final Duration LEASE_RENEW_EVERY = LEASE_TTL.dividedBy(3);
    /** The share of the org's hedge budget a request refused once may use when it asks again. */
    static final double REASK_SHARE = 0.8;
    /**
     * Content-less chunks held before the first content, beyond one per choice asked (each choice's role chunk, which
     * vLLM and the simulator send all first): a stream of only those is garbage, not a preamble.
     */
    private static final int MAX_PENDING = 64;
    /**
     * The longest a half-open probe slot is taken for at once (a live probe renews it every half TTL): a dead
     * instance's slot frees itself within this, however long the probe's answer may take to arrive.
     */
    private static final Duration MAX_PROBE_TTL = Duration.ofSeconds(60);
    /** The longest a refusal waits for this request's health writes to be stored (the Redis guard's timeout). */
    private static final Duration HEALTH_WRITES_WAIT = Duration.ofSeconds(1);
    /**
     * While a stream's output is held back (a tool call's deltas, until the answer finishes) the client gets a
     * keep-alive comment at least this often, so neither it nor a proxy in front of the gateway (nginx and AWS ALB
     * close a connection idle for 60 s by default) takes a long tool call for a dead connection.
     */
    static final long HELD_KEEP_ALIVE_NANOS = Duration.ofSeconds(10).toNanos();

    private final Dispatcher.Deps deps;
    private final DispatchRequest req;
    private final ClientOutput output;
    private final GroupSettings settings;
    private final boolean stream;
    private final long startNanos;
    private final Transcript transcript = new Transcript();
    private final Billing billing;
    private final List<Attempt> attempts = new ArrayList<>();
    private final AttemptTrail trail = new AttemptTrail();
    private final RouteChoice routes;
    private final RouteHealth health;
    private final ProbeSlots probes;
    private final TimingWindows windows;
    private final StreamOptionsRefusals streamOptionsRefusals;
    /** The routes that refused {@code stream_options} in this request: never sent it again, whatever else is known. */
    private final Set<String> refusedStreamOptions = new HashSet<>();

    private int preCommitAttempts;
    /** The number of the last attempt launched or skipped: each trail record's place in the request. */
    private int numbered;
    /**
     * Half-open probe slots asked for and not yet answered: each is an attempt about to start, so the request waits for
     * it as for a live attempt (a failure of the other one must not answer an error while it may still be served).
     */
    private int pendingProbes;
    private int resumes;
    private boolean committed;
    private Attempt winner;
    /** The route whose break the latest resume continues: that resume's last resort ({@link #resumeTarget}). */
    private Candidate broken;
    /** The attempt whose content the client received last (the winner, kept after it fails): what a cut stream bills. */
    private Attempt served;
    /** Where in the transcript each attempt whose content the client received began: what each route is charged. */
    private final List<Billing.Part> servedParts = new ArrayList<>(1);
    /**
     * The routes a hedge of this request went to, each counted as fired once: a hedge only goes to an untried route,
     * so a second launch of one is the same hedge sent again (without stream_options; found by hunt20), also when it
     * starts later, once a half-open route's probe slot is granted.
     */
    private final Set<String> hedgedRoutes = new HashSet<>();
    private boolean finished;
    private Attempt contextError;
    /**
     * The largest context window among the routes that failed this request for another reason than the prompt's
     * length (-1: none): such a route might have fitted the prompt, so a context error is no longer the answer.
     */
    private int otherFailureWindow = -1;
    private boolean sawCapacityError;
    /** The request ended on a timeout that the group's failover_criteria did not let fail over: nginx's 504. */
    private boolean timedOutUnretried;
    private Cancellable stallTimer = Cancellable.NONE;
    private Cancellable leaseTimer = Cancellable.NONE;
    private Cancellable priorityWait = Cancellable.NONE;
    /** The group's request_timeout: ends the request when its answer made no progress for that long. */
    private Cancellable deadlineTimer = Cancellable.NONE;
    /**
     * When the client's answer last progressed: the request's start, then (a stream) each text, reasoning or tool
     * call delta the winner streamed (its first content included). The request_timeout deadline runs from here.
     */
    private long progressNanos;
    /**
     * What the client would otherwise hear nothing from: the head hold, then the keep-alive comments of a head that went
     * out early until the first content, or of a resume until its first content.
     */
    private Cancellable silenceTimer = Cancellable.NONE;
    private long lastActivityNanos;
    /** When the stream last wrote to the client (see {@link #HELD_KEEP_ALIVE_NANOS}). */
    private long lastClientWriteNanos;
    /** The failure that started the current resume episode: what the client is told if resuming fails. */
    private String resumeCause;

    Dispatch(Dispatcher.Deps deps, StreamOptionsRefusals streamOptionsRefusals, DispatchRequest req, ClientSink sink) {
        this.deps = deps;
        this.streamOptionsRefusals = streamOptionsRefusals;
        this.req = req;
        this.settings = req.settings();
        this.stream = req.request().stream();
        this.startNanos = deps.ticker().nanos();
        this.progressNanos = startNanos;
        // the plan's candidates are the routes this request may use, best first (allow_fallbacks: false already
        // left only its order's providers, or its first choice): failover, hedges and resumes stay among them
        this.routes = new RouteChoice(req.candidates(), settings.strategy(), this::stillRouted);
        this.health = new RouteHealth(deps.store(), deps.models(), settings, deps.ticker(), startNanos);
        this.probes = new ProbeSlots(deps.store());
        this.windows = new TimingWindows(req, stream);
        this.output = new ClientOutput(req, sink, stream, transcript);
        this.billing = new Billing(req.facts().promptTokens(), deps.tokens(), transcript);
    }

    /** True when the client asked for a stream (SSE), false for a whole JSON answer. */
    boolean streaming() {
        return stream;
    }

    /** True for an embeddings request, whose 200 answer its attempts scan as it arrives. */
    boolean embeddings() {
        return req.embeddings();
    }

    // ---- lifecycle -------------------------------------------------------------------------------------------

    synchronized void start() {
        if (!req.embeddings()) {
            // the hedge budget's denominator counts requests that may hedge: an embeddings request never does, and a
            // RAG app's many embeddings calls must not buy its chat requests more hedges
            deps.store().countRequest(req.org().id(), req.org().hedgeBudget().window()).subscribe().with(v -> { },
                    t -> { });
        }
        Candidate first = routes.first();
        if (first == null) {
            finalError();
            return;
        }
        if (settings.timeouts().bounded()) {
            deadlineTimer = deps.scheduler().schedule(settings.timeouts().request(), this::deadlineCheck);
        }
        launch(first, Kind.PRIMARY, null);
        if (finished) {
            // refused at once (its one route's probe slot taken elsewhere, ...): the timers below would outlive it
            return;
        }
        leaseTimer = deps.scheduler().schedule(LEASE_RENEW_EVERY, this::renewLeases);
        if (stream && !settings.headHold().isZero()) {
            silenceTimer = deps.scheduler().schedule(settings.headHold(), this::headHoldPassed);
        }
    }

    /**
     * The client has heard nothing for the group's head hold and no attempt has content yet (a reasoning model
     * thinking, attempts racing or failing over): the head goes out now, so neither the client nor a proxy in front
     * of the gateway takes the silence for a dead connection, and keep-alive comments follow until the content.
     */
    private synchronized void headHoldPassed() {
        if (finished || committed || output.headSent()) {
            return;
        }
        output.openStreamEarly();
        lastClientWriteNanos = deps.ticker().nanos();
        deps.observer().headBeforeContent(req);
        silenceTimer = deps.scheduler().schedule(silentKeepAliveEvery(), this::silentKeepAlive);
    }

    /**
     * A keep-alive comment for a stream the client hears nothing from: one whose head went out early, until its
     * first content, or one waiting for a resume's first content. Stops once an attempt streams (a winner).
     */
    private synchronized void silentKeepAlive() {
        if (finished || winner != null) {
            return;
        }
        silenceTimer = deps.scheduler().schedule(Duration.ofNanos(keepAliveIfDue(deps.ticker().nanos())),
                this::silentKeepAlive);
    }

    /**
     * Sends the client a keep-alive comment if it has heard nothing for {@link #silentKeepAliveEvery()}; returns the
     * nanoseconds until the next one is due.
     */
    private long keepAliveIfDue(long now) {
        long every = silentKeepAliveEvery().toNanos();
        long quiet = now - lastClientWriteNanos;
        if (quiet >= every) {
            output.keepAlive();
            lastClientWriteNanos = now;
            quiet = 0;
        }
        return every - quiet;
    }

    /**
     * How often a silent stream hears a comment: {@link #HELD_KEEP_ALIVE_NANOS}, or the head hold when that is shorter
     * (the longest silence the group's operator let the client have; off, it bounds nothing).
     */
    private Duration silentKeepAliveEvery() {
        Duration held = Duration.ofNanos(HELD_KEEP_ALIVE_NANOS);
        Duration hold = settings.headHold();
        return !hold.isZero() && hold.compareTo(held) < 0 ? hold : held;
    }

    synchronized void clientGone() {
        if (finished) {
            return;
        }
        finished = true;
        endLive("client_cancelled");
        stopTimers();
        finishedCut(499);
    }

    /**
     * Starting the request threw (a bug; the caller answers 500): every attempt it launched ends as cancelled (its
     * upstream hung up on, its lease released), its timers stop, and it is logged as 500. Nothing learns or cools down.
     */
    synchronized void abort() {
        if (finished) {
            return;
        }
        finished = true;
        stopTimers();
        endLive("cancelled");
        finishedCut(500);
    }

    /**
     * This instance is shutting down and its grace period for requests in flight is over: the request ends now, as
     * {@code err} (503, retry advice). A stream the client already reads (content delivered, or a head sent early)
     * gets it as its last event, with how much of the answer it received (a client may ask again for the rest); one
     * that has not started gets it as its answer. Every live attempt ends as {@code shutdown} and nothing learns
     * from them or cools down (the routes were not at fault); what was delivered is billed, and the request is
     * logged as 503, so a shutdown is never mistaken for a client's hang-up (499).
     */
    synchronized void shutDown(ApiError err) {
        if (finished) {
            return;
        }
        finished = true;
        stopTimers();
        endLive("shutdown");
        if (committed || output.headSent()) {
            ObjectNode event = err.toNode();
            ObjectNode delivered = event.putObject("delivered");
            delivered.put("content_chars", transcript.content.codePointCount(0, transcript.content.length()));
            delivered.put("reasoning_chars", transcript.reasoning.codePointCount(0, transcript.reasoning.length()));
            if (served != null && served.choices != null) {
                // several choices: the sums above cannot say where each stopped, each choice's counts can
                delivered.set("choices", served.choices.deliveredChars());
            }
            output.endWithError(event, trail.toNode());
        } else {
            output.exhausted(err, trail.toNode());
        }
        finishedCut(err.status());
    }

    /**
     * Reports the finished request: each route the client received content from is charged its part of the answer in
     * its usage window ({@link Billing#byRoute}: a route that broke mid-stream had the whole bill of a resumed answer go
     * to the route that finished it, and under lowest_usage it never accrued usage, staying first; found by hunt20),
     * then the request.
     */
    private void finishedWith(int status, UsageSample billed, Candidate last) {
        if (billed != null && last != null) {
            billing.byRoute(billed, last, servedParts).forEach(u -> deps.observer().routeUsage(req, u.route(),
                    u.usage()));
        }
        deps.observer().finished(req, status, trail.snapshot(), billed, last);
    }

    /** Reports a request that ended before its answer was whole: billed what the client received ({@link #deliveredBill}). */
    private void finishedCut(int status) {
        finishedWith(status, deliveredBill(), served == null ? null : served.cand);
    }

    /**
     * What a stream that ends before its answer is whole (a client hang-up, an error event after content) is billed:
     * the prompt once and every completion token the client received, as after a resume (the providers charged for
     * them); null when no content reached the client.
     */
    private UsageSample deliveredBill() {
        return served == null || transcript.isEmpty() ? null : billing.usageOf(served, true, null);
    }

    // ---- choosing and launching ------------------------------------------------------------------------------

    private void launch(Candidate c, Kind kind, ContinuationMethod method) {
        routes.tried(c);
        if (kind != Kind.RESUME) {
            preCommitAttempts++;
        }
        if (c.halfOpen()) {
            // a half-open route serves only as the fleet's single probe: take the slot first
            Duration ttl = probeTtl(c);
            ProbeSlots.Slot slot = probes.slot(c.id(), req.requestId() + "/" + UUID.randomUUID());
            pendingProbes++;
            probes.acquire(slot, settings.breaker().threshold(), ttl).subscribe().with(
                    ok -> probeDecided(c, kind, method, slot, ok), t -> probeUnknown(c, kind, method, slot));
            return;
        }
        doLaunch(c, kind, method, null);
    }

    /**
     * The acquisition failed without an answer: the script may still have taken the slot (a reply lost on the way),
     * so it is released under this owner's token (harmless when it took nothing) and the route is passed over.
     */
    private synchronized void probeUnknown(Candidate c, Kind kind, ContinuationMethod method, ProbeSlots.Slot slot) {
        slot.release();
        probeDecided(c, kind, method, slot, false);
    }

    private synchronized void probeDecided(Candidate c, Kind kind, ContinuationMethod method, ProbeSlots.Slot slot,
                                           boolean acquired) {
        pendingProbes--;
        if (!acquired) {
            slot.held = false;
        }
        if (finished || committed && kind != Kind.RESUME) {
            // the request ended (client gone, answered elsewhere) or, for all but a resume, committed while the slot
            // was being taken: neither this route nor the next untried one may start racing a stream the client reads
            slot.release();
            if (kind == Kind.HEDGE) {
                refundHedge();
            }
            return;
        }
        if (acquired) {
            try {
                doLaunch(c, kind, method, slot);
            } catch (RuntimeException e) {
                slot.release(); // a bug must not hold the route's recovery for the slot's TTL
                throw e;
            }
            return;
        }
        trail.skipped(++numbered, c, kind, "half_open_probe_taken", elapsedMs(startNanos));
        if (kind != Kind.RESUME) {
            preCommitAttempts--;
        }
        Candidate next = kind == Kind.RESUME ? resumeTarget(broken) : routes.next();
        if (next == null && kind == Kind.HEDGE) {
            refundHedge();   // the hedge's route is probed elsewhere and no other is left: no hedge starts
        }
        if (next == null || (kind == Kind.RESUME && next.id().equals(c.id()))) {
            if (liveCount() == 0 && kind == Kind.RESUME) {
                // the stream is under way: it ends as resumeOrEnd ends one no route can resume, never with a
                // pre-commit refusal (exhausted() would pass an old context_length_exceeded through)
                endWithErrorEvent("The stream failed (" + resumeCause + ") and no other route can resume it.");
            } else if (liveCount() == 0) {
                exhausted();
            }
            return;
        }
        launch(next, kind, kind == Kind.RESUME ? UpstreamCall.methods(next).get(0) : null);
    }

    private void doLaunch(Candidate c, Kind kind, ContinuationMethod method, ProbeSlots.Slot probe) {
        int index = ++numbered;
        // the upstream's x-request-id doubles as the lease id: unique (the request id is 143 random bits), no draw
        Attempt a = new Attempt(this, deps, settings.timeouts(), index, req.requestId() + "-" + index, c, kind, method,
                probe);
        a.promptTokens = req.facts().promptTokens() + (kind == Kind.RESUME ? transcript.deltas : 0);
        if (stream && req.request().choices() > 1) {
            a.choices = new Choices(req.request().choices());
        }
        attempts.add(a);
        if (kind == Kind.HEDGE && hedgedRoutes.add(c.id())) {
            deps.observer().hedge(req, true);
        }
        try {
            UpstreamRequest ur = UpstreamCall.build(req, stream, a, transcript,
                    refusedStreamOptions.contains(c.id()) || streamOptionsRefusals.refuses(c));
            a.leaseWrite(() -> deps.store().acquireLease(c.id(), a.leaseId, LEASE_TTL));
            a.exchange = deps.upstream().send(ur, a);
        } catch (RuntimeException e) {
            // a bug in building or sending it fails this attempt (logged, failed over), not the one whose callback
            // launched it, which has ended: the new one, live with no exchange nor timer, left the client waiting
            callbackFailed(a, e);
            return;
        }
        a.armIoTimer();
        a.abandonTimer = deps.scheduler().schedule(windows.abandonAfter(c, resumePrompt(a)), () -> abandon(a));
        // no hedge for embeddings: one short whole answer, where failover on a failed or silent attempt does what a
        // hedge would, without paying for every batch twice when a route is merely slow
        if (kind != Kind.RESUME && settings.hedging() && !req.embeddings()) {
            Duration window = windows.firstTokenWindow(c);
            if (beforeDeadline(window)) {
                a.windowTimer = deps.scheduler().schedule(window, () -> windowPassed(a));
            }
        }
        if (probe != null) {
            probe.keep(deps.scheduler(), probeTtl(c));
        }
    }

    /**
     * How long a half-open probe slot is taken for: the probe's longest silence plus a margin, so a dead instance's
     * slot frees itself; a live probe renews it every half TTL until its verdict, however long its stream runs.
     */
    private Duration probeTtl(Candidate c) {
        Duration silence = windows.abandonAfter(c);
        return (silence.compareTo(MAX_PROBE_TTL) > 0 ? MAX_PROBE_TTL : silence).plus(Duration.ofSeconds(5));
    }

    // ---- windows ---------------------------------------------------------------------------------------------

    /** How long an attempt on the candidate waits for its response head once sent ({@link TimingWindows#headWait}). */
    Duration headWait(Candidate c) {
        return windows.headWait(c);
    }

    synchronized void ioTimedOut(Attempt a, String cls, String detail) {
        if (finished || !a.live || a.status > 0) {
            return;
        }
        attemptFailed(a, Failure.timeout(cls, detail));
    }

    /** A whole (non-SSE) body stopped arriving for read_timeout after its head: the upstream is gone. */
    synchronized void bodyTimedOut(Attempt a, long readMs) {
        if (finished || !a.live) {
            return;
        }
        attemptFailed(a, Failure.timeout("timeout_read", "no response data within read_timeout " + readMs
                + " ms after the head"));
    }

    /**
     * Whether a timer of {@code delay} from now would fire before the request_timeout deadline (always, without one):
     * a hedge whose window ends at or after the deadline is never scheduled, as it could only start an attempt the
     * deadline stops at once, spending the org's hedge budget on nothing.
     */
    private boolean beforeDeadline(Duration delay) {
        if (!settings.timeouts().bounded()) {
            return true;
        }
        long deadline = progressNanos + settings.timeouts().request().toNanos();
        return deps.ticker().nanos() + delay.toNanos() < deadline;
    }

    /**
     * The request_timeout deadline timer: armed for the whole timeout, it re-arms for what is left when the answer
     * progressed meanwhile (a stream's content moves {@link #progressNanos} without touching the timer), and ends the
     * request when nothing came for the whole timeout.
     */
    private synchronized void deadlineCheck() {
        if (finished) {
            return;
        }
        long left = progressNanos + settings.timeouts().request().toNanos() - deps.ticker().nanos();
        if (left > 0) {
            deadlineTimer = deps.scheduler().schedule(Duration.ofNanos(left), this::deadlineCheck);
            return;
        }
        requestTimedOut();
    }

    /**
     * The client's answer made no progress for the group's request_timeout: every attempt still running is stopped
     * as timed out ({@code timeout_request}; it counts against its route as any timeout does, and a silent one's wait
     * is learnt as a lower bound, as an abandoned one's), and the client gets 504 {@code request_timeout}: as its
     * answer before any content (a stream whose head went out early: as its error event), or as the last event of a
     * stream already under way. Its retry advice is an exhausted request's, from what this request knows.
     */
    private void requestTimedOut() {
        if (winner != null && winner.finishReason != null) {
            // the answer is whole (its finish came) and only the upstream's close is missing: it ends cleanly, as the
            // stall watchdog would end it
            complete(winner, true);
            return;
        }
        long limitMs = settings.timeouts().request().toMillis();
        Failure f = Failure.timeout("timeout_request", "no progress within request_timeout " + limitMs + " ms");
        for (Attempt a : List.copyOf(attempts)) {
            if (a.live) {
                learnWaited(a);
                if (a.hasContent || elapsedMs(a.startNanos) >= windows.firstTokenWindow(a.cand).toMillis()) {
                    // one the deadline stopped before its own first-token window had passed had no fair chance: a
                    // hedge started 50 ms before it cooled its healthy route down (found by hunt21)
                    health.failure(a, f);
                }
                endAttempt(a, "failed", f.errorClass(), true);
            }
        }
        finished = true;
        stopTimers();
        // answered at once, not after the health writes as an exhausted request is: the deadline is a promise to the
        // client, which a slow store must not stretch; the retry advice counts what this request's failures set
        RetryAdvice.After retry = retryAfterExhausted();
        int n = trail.failures();
        String msg = (committed ? "The stream of '" + req.alias() + "' made no progress"
                : "No answer from '" + req.alias() + "' came")
                + " within this group's request_timeout of " + limitMs + " ms (" + n
                + (n == 1 ? " attempt" : " attempts") + " failed; the attempt trail says why). Retry after "
                + retry.seconds() + " s.";
        ApiError err = ApiError.requestTimeout(msg, retry);
        if (committed) {
            output.endWithError(err.toNode(), trail.toNode());
            finishedCut(err.status());
            return;
        }
        output.exhausted(err, trail.toNode());
        finishedWith(err.status(), null, null);
    }

    private synchronized void windowPassed(Attempt a) {
        if (finished || committed || !a.live || a.hasContent) {
            return;
        }
        if (liveCount() > 1 || preCommitAttempts >= settings.retry().maxAttempts()) {
            return;
        }
        Candidate next = routes.hedgeTarget(a);
        if (next == null) {
            return;
        }
        HedgeBudget hb = req.org().hedgeBudget();
        // asking again, it may use only part of the budget: fresh requests keep first call on the rest
        double ratio = !a.hedgeRefused ? hb.ratio() : hb.ratio() * REASK_SHARE;
        deps.store().hedgeBudget(req.org().id(), true, ratio, hb.minPerWindow(), hb.window()).subscribe().with(
                ok -> hedgeDecided(a, ok), t -> hedgeDecided(a, false));
    }

    private synchronized void hedgeDecided(Attempt a, boolean allowed) {
        if (finished || committed || !a.live || a.hasContent || preCommitAttempts >= settings.retry().maxAttempts()) {
            // the race was decided while the budget was asked: nothing is counted, and a token taken goes back
            if (allowed) {
                refundHedge();
            }
            return;
        }
        if (!allowed) {
            deps.observer().hedge(req, false);
            // Refused (or the budget could not be read): ask again each time the wait doubles (2, 4, 8 … windows),
            // until content or the abandon timer, within REASK_SHARE of the budget. Budget freed by later requests
            // then rescues a request stuck for seconds, while a request reaching its first window still comes
            // first: for the p99, a rescue at the first window counts more than a late one.
            a.hedgeRefused = true;
            long waitedMs = Math.max(windows.firstTokenWindow(a.cand).toMillis(), elapsedMs(a.startNanos));
            if (beforeDeadline(Duration.ofMillis(waitedMs))) {
                a.windowTimer = deps.scheduler().schedule(Duration.ofMillis(waitedMs), () -> windowPassed(a));
            }
            return;
        }
        Candidate next = routes.hedgeTarget(a);
        if (next == null) {
            refundHedge();
            return;
        }
        launch(next, Kind.HEDGE, null);   // counted as fired once it starts (doLaunch)
    }

    /** The prompt a resume sends (the request's and the text delivered so far), 0 for any other attempt. */
    private static long resumePrompt(Attempt a) {
        return a.kind == Kind.RESUME ? Math.max(1, a.promptTokens) : 0;
    }

    /** A hedge the org's budget paid for does not start: its token goes back (the store's current bucket). */
    private void refundHedge() {
        deps.store().refundHedge(req.org().id(), req.org().hedgeBudget().window()).subscribe().with(v -> { },
                t -> { });
    }

    private synchronized void abandon(Attempt a) {
        if (finished || !a.live || a.hasContent) {
            return;
        }
        if (lastHope(a)) {
            // abandoning it would answer an error while it may still be served (Keln: no give-up timer), so it is
            // waited for while the upstream shows life (any bytes, keep-alive comments included) at least once per
            // read_timeout, as nginx's proxy_read_timeout between two reads; one silent for longer is taken for
            // dead (without a head, the head timer ends it)
            long silentMs = (deps.ticker().nanos() - Math.max(lastActivityNanos, a.startNanos)) / 1_000_000L;
            long readMs = settings.timeouts().read().toMillis();
            long waitMs = windows.abandonAfter(a.cand, resumePrompt(a)).toMillis();
            if (a.status == 0 || silentMs < readMs) {
                long next = a.status == 0 ? waitMs : Math.min(waitMs, readMs - silentMs);
                a.abandonTimer = deps.scheduler().schedule(Duration.ofMillis(next), () -> abandon(a));
                return;
            }
            learnAbandoned(a, waitMs);
            attemptFailed(a, Failure.timeout("timeout_first_token", "the upstream was silent for " + silentMs
                    + " ms (read_timeout " + readMs + " ms)"));
            return;
        }
        long limitMs = windows.abandonAfter(a.cand, resumePrompt(a)).toMillis();
        if (a.status == 0) {
            learnAbandoned(a, limitMs);
            attemptFailed(a, Failure.timeout("timeout_no_response", "no response head within "
                    + elapsedMs(a.startNanos) + " ms"));
            return;
        }
        long left = limitMs - elapsedMs(a.startNanos);
        if (left > 0) {
            // the head came within the read limit: the first-token limit runs on
            a.abandonTimer = deps.scheduler().schedule(Duration.ofMillis(left), () -> abandon(a));
        } else {
            learnAbandoned(a, limitMs);
            attemptFailed(a, Failure.timeout("timeout_first_token", "no first token within " + limitMs + " ms"));
        }
    }

    /**
     * Whether a silent attempt is all the request has left: no other attempt runs and none could follow it (the
     * attempt or resume limit is reached, no untried route is left, fallbacks or timeout failovers are off).
     */
    private boolean lastHope(Attempt a) {
        if (liveCount() > 1) {
            return false;
        }
        if (a.kind == Kind.RESUME) {
            return resumes >= settings.retry().maxResumes();
        }
        return failoverRoute(a, FailoverCriterion.TIMEOUT) == null;
    }

    /** Whether a failure of this criterion may fail over at all: the criteria, allow_fallbacks, the attempt limit. */
    private boolean mayFailOver(FailoverCriterion criterion) {
        return criterionAllows(criterion) && preCommitAttempts < settings.retry().maxAttempts();
    }

    /** The group's failover_criteria list it (a failure no criterion names, e.g. a refused connection, always may). */
    private boolean criterionAllows(FailoverCriterion criterion) {
        return criterion == null || settings.retry().allows(criterion);
    }

    /** The untried route a failure of this criterion would fail over to now, or null. Asks, changes nothing. */
    private Candidate failoverRoute(Attempt a, FailoverCriterion criterion) {
        return mayFailOver(criterion) ? routes.next() : null;
    }

    /** A keep-alive comment: life before the visible answer, no progress after it ({@link #alive}). */
    void life(Attempt a) {
        synchronized (this) {
            if (!a.live) {
                return;
            }
            lifeSeen(a);
        }
    }

    /**
     * A sign of life that carries no text (a keep-alive comment, any frame that parses): while it keeps the attempt's
     * watchdogs off ({@link #alive}) it moves the stall watchdog's last activity, which is also what keeps the
     * request's last hope waited for ({@link #abandon}). It does not put off the first-token limit of an attempt
     * another route could replace: an upstream that heartbeats and never answers held the request for ever, however
     * many routes stood idle (found by hunt4).
     */
    private void lifeSeen(Attempt a) {
        if (!alive(a)) {
            return;
        }
        lastActivityNanos = deps.ticker().nanos();
    }

    /**
     * Whether a sign of life that carries no text (a keep-alive comment, a chunk with an empty delta) keeps the
     * attempt's watchdogs off: before its first content and through a reasoning pause before the first visible
     * token, yes (Keln leaves a thinking model alone); once the visible answer has begun, only text, a tool call or
     * a finish is progress, so a heartbeat in front of a hung generation cannot keep the stall watchdog off.
     */
    private boolean alive(Attempt a) {
        return !a.hasContent || transcript.inReasoning();
    }

    // ---- streaming -------------------------------------------------------------------------------------------

    synchronized void streamEvent(Attempt a, SseEvent event) {
        if (!a.live || finished) {
            return;
        }
        if (event.isDone()) {
            streamEnded(a, null);
            return;
        }
        JsonNode node = UpstreamReplies.parse(event.data());
        if (node == null || !node.isObject() || UpstreamReplies.malformedChoice(node)) {
            // skipped and counted; garbage is no sign of life for the stall watchdog
            deps.observer().malformedFrame(a.cand);
            return;
        }
        lifeSeen(a);
        if (node.hasNonNull("error")) {
            if (a.emptyFinish != null) {
                // an error in place of the close after a finish with nothing before it: settled as its end would be
                // (it was taken for a break of a stream that never began: a resume wrote to a client without a head;
                // found by review7)
                endHeldFinish(a);
                return;
            }
            if (a == winner && a.finishReason != null) {
                // the answer is whole (its finish came): an error in place of the upstream's close ends it cleanly,
                // as a transport error or a stall after the finish does
                complete(a, true);
                return;
            }
            String msg = UpstreamReplies.errorMessage(node.get("error"));
            if (a.hasContent || a.finishReason != null) {
                midStreamFailure(a, "upstream_error_event", msg);
            } else {
                attemptFailed(a, Failure.transport("upstream_error_event", msg));
            }
            return;
        }
        JsonNode usage = node.get("usage");
        boolean usageHere = usage != null && usage.isObject();
        if (usageHere) {
            a.usage = usage;
        }
        UpstreamReplies.Delta d = a.choices == null ? UpstreamReplies.firstChoice(node) : a.choices.read(node);
        if (a.emptyFinish != null) {
            // only the usage that settles a finish with nothing before it is awaited (one that came before the finish,
            // as vLLM's continuous usage stats send, counts what was generated then); text after it settles it too
            if ((d == null || !d.substantive()) && !usageHere || !settleEmptyFinish(a)) {
                return;
            }
        }
        if (d == null) {
            endSoonAfterUsage(a, usageHere);
            return;
        }
        String finish = d.finish();
        if (finish != null && a.finishReason == null) {
            a.finishReason = finish;
        }
        endSoonAfterUsage(a, usageHere);
        if (d.substantive() || finish != null) {
            lastActivityNanos = deps.ticker().nanos();   // progress
        }
        if (!a.hasContent) {
            if (!d.substantive() && finish == null) {
                if (a.kind != Kind.RESUME && a.pending.size() < MAX_PENDING + req.request().choices()) {
                    a.pending.add((ObjectNode) node);
                }
                return;
            }
            // a resume's empty finish is held and checked too: the text it continues may have been whole already
            // (the one token or so a server counts for ending it does not fail it: UpstreamReplies.lostContent), but
            // one whose usage counts the text it lost failed (taken as it came, it ended the answer cut short, with
            // stop; found by hunt18)
            if (!d.substantive() && a.choices == null && a.emptyFinish == null
                    && UpstreamReplies.nothingIn(a.pending) && UpstreamReplies.holdsNothing(node.path("choices").path(0)
                    .path("delta"))) {
                holdEmptyFinish(a, (ObjectNode) node);
                if (usageHere) {
                    settleEmptyFinish(a);   // the usage came with the finish
                }
                return;
            }
            contentArrived(a, d.reasoning().isEmpty() ? false : d.content().isEmpty());
        }
        relay(a, (ObjectNode) node, d);
    }

    /**
     * A stream finished with nothing before its finish (no text, reasoning, tool call, refusal or audio): an empty
     * answer, or one the route lost on the way (the Trifrost failure, a 200 whose text never came), which only its
     * usage tells, and the usage chunk follows the finish. So the finish is held, the attempt neither committed nor
     * yet charged, until the usage, the stream's end, or {@code stall_floor} (an upstream that stays open after its
     * finish); the hedge and first-token timers stop, as the route did answer. Found by hunt4 (session 28): streams
     * were relayed as empty answers whose usage counted the lost tokens, while a whole answer failed over.
     */
    private void holdEmptyFinish(Attempt a, ObjectNode finishChunk) {
        a.emptyFinish = finishChunk;
        a.emptyFinishNanos = deps.ticker().nanos();
        a.windowTimer.cancel();
        a.abandonTimer.cancel();
        a.abandonTimer = deps.scheduler().schedule(settings.timeouts().stallFloor(), () -> endHeldFinish(a));
    }

    /** Ends a held empty finish's stream as it stands: its stall_floor passed, or an error came in place of its close. */
    private synchronized void endHeldFinish(Attempt a) {
        if (a.live && !finished && a.emptyFinish != null && settleEmptyFinish(a)) {
            complete(a, true);
        }
    }

    /**
     * Settles a held empty finish ({@link #holdEmptyFinish}): when its usage counts completion tokens beyond
     * reasoning and an end-of-sequence token ({@link UpstreamReplies#lostContent}), the attempt fails as zero_content
     * and the request fails over, as a whole answer does; otherwise it is the answer, committed and its finish
     * relayed. Returns whether the attempt goes on as the winner.
     */
    private boolean settleEmptyFinish(Attempt a) {
        ObjectNode held = a.emptyFinish;
        a.emptyFinish = null;
        a.abandonTimer.cancel();
        if (UpstreamReplies.lostContent(a.finishReason, a.usage,
                (a.kind == Kind.RESUME ? UpstreamReplies.RESUME_ENDING : 1) + stopTokens())) {
            attemptFailed(a, Failure.invalid("zero_content", UpstreamReplies.announcesCall(a.finishReason)
                    ? "the stream finished with " + a.finishReason + " and no call"
                    : "the stream finished with no content while its usage counts "
                    + a.usage.get("completion_tokens").asLong() + " completion tokens"));
            return false;
        }
        contentArrived(a, false, a.emptyFinishNanos);   // the route answered when its finish came, not after the hold
        relay(a, held, UpstreamReplies.firstChoice(held));
        return a.live && a == winner && !finished;
    }

    /**
     * The tokens of the request's longest stop sequence: a server counts the tokens of the stop sequence it matched
     * (vLLM), so an answer that stops at once on {@code </answer>} writes nothing and counts 3 completion tokens, and
     * was taken for lost text (502, every route failed over and charged; found by hunt19). 0 without {@code stop}.
     */
    private int stopTokens() {
        int most = 0;
        for (String s : req.request() instanceof ChatRequest chat ? chat.stops() : List.<String>of()) {
            most = Math.max(most, deps.tokens().applyAsInt(s));
        }
        return most;
    }

    /** A chunk of the attempt that has its first content goes to the client when it is the winner. */
    private void relay(Attempt a, ObjectNode node, UpstreamReplies.Delta d) {
        if (a != winner) {
            return;
        }
        if (output.overLimit(a, d)) {
            outputLimitExceeded(a);
            return;
        }
        if (d.substantive()) {
            a.learnRhythm(!d.reasoning().isEmpty(), !d.content().isEmpty() || d.hasTools() || d.other());
            progressNanos = deps.ticker().nanos();
        }
        long writes = output.writes();
        if (a.choices != null) {
            output.emitChoices(a, node, d.finish() != null);
        } else {
            ClientOutput.ToolDeltas tools = !d.hasTools() ? ClientOutput.ToolDeltas.NONE
                    : toolCallsResumable() ? ClientOutput.ToolDeltas.HOLD : ClientOutput.ToolDeltas.SEND;
            output.emitChunk(a, node, d, tools);
            if (a.stoppedAtSeam) {
                // a stop sequence begun in the delivered text and ended in the resume's: ended as the provider
                // would have ended it had it seen both (ClientOutput.seamStop)
                a.heldFinish = null;
                a.finishReason = "stop";
                complete(a, true);
                return;
            }
            if (a.capsAnswer && (a.heldFinish == null || a.trimmer.capped()) && answerLeft() <= 0) {
                // the request's max_tokens reached on a resume given room for its overlap: ended as the provider
                // would have ended it (also when the trimmer decided at the provider's own finish and kept text
                // back past max_tokens: that finish is not the answer's; hunt19)
                a.heldFinish = null;
                a.finishReason = "length";
                complete(a, true);
                return;
            }
        }
        long now = deps.ticker().nanos();
        if (output.writes() == writes && now - lastClientWriteNanos >= HELD_KEEP_ALIVE_NANOS) {
            output.keepAlive();   // the chunk was held back: the client still hears from the stream
        }
        if (output.writes() != writes) {
            lastClientWriteNanos = now;
        }
    }

    /**
     * An upstream callback of the attempt threw (a reply no check foresaw, or a bug): the attempt fails, as a stream
     * that broke (resumed elsewhere once it is the winner, else failed over), so the exception neither vanishes into
     * the HTTP client, losing the rest of the read, nor leaves the client waiting on an attempt nothing drives. It is
     * logged with its stack trace and classed {@code internal_error}, and its route is not charged: a bug of the
     * gateway's must not cool down a provider for every request. A throw in an attempt already ended is only logged.
     */
    synchronized void callbackFailed(Attempt a, RuntimeException e) {
        if (!a.live) {
            // Already ended (cut, lost its race, or the request finished): nothing to fail, but the throw is a bug
            // all the same, and must not vanish.
            LOG.log(System.Logger.Level.ERROR, "request " + req.requestId() + ": handling a late reply of route "
                    + a.cand.id() + " threw after its attempt ended", e);
            return;
        }
        LOG.log(System.Logger.Level.ERROR, "request " + req.requestId() + ": handling the reply of route "
                + a.cand.id() + " threw; the attempt ends as internal_error (its route is not charged)", e);
        if (finished) {
            endAttempt(a, "cancelled", null, true);
            return;
        }
        Failure f = new Failure("internal_error", "the upstream's reply could not be handled: " + e, a.status,
                FailoverCriterion.ERROR, false, 0);
        if (a == winner) {
            midStreamFailure(a, f);
        } else {
            attemptFailed(a, f);
        }
    }

    /** The winner will not stop: cut it, count it against the route, and end the stream with a clear error. */
    private void outputLimitExceeded(Attempt a) {
        String limit = output.limitPassed(a);
        health.failure(a, Failure.transport("output_limit", "over " + limit));
        endAttempt(a, "failed", "output_limit", true);
        endWithErrorEvent("output_limit_exceeded", "The upstream kept generating past the output limit of "
                + limit + "; the stream was cut.");
    }

    /** The attempt produced its first content: it wins the race (or takes over a resumed stream). */
    private void contentArrived(Attempt a, boolean reasoningFirst) {
        contentArrived(a, reasoningFirst, deps.ticker().nanos());
    }

    /** As {@link #contentArrived(Attempt, boolean)}, the content having come at {@code arrivedNanos}. */
    private void contentArrived(Attempt a, boolean reasoningFirst, long arrivedNanos) {
        a.hasContent = true;
        a.firstContentNanos = arrivedNanos;
        a.windowTimer.cancel();
        a.abandonTimer.cancel();
        long latencyMs = (a.firstContentNanos - a.startNanos) / 1_000_000L;
        if (stream) {
            deps.models().learnFirstToken(a.cand.state(), a.promptTokens, latencyMs, settings.slo());
            deps.observer().firstToken(a.cand, a.promptTokens, latencyMs, reasoningFirst);
        } else if (req.embeddings()) {
            // no tokens out: its latency is its first token's and its whole answer's, for the size of its input
            deps.models().learnEmbeddings(a.cand.state(), req.facts().inputTokens(), latencyMs, settings.slo());
            deps.observer().wholeResponse(a.cand, req.facts().promptTokens(), latencyMs);
        } else {
            // a non-streamed answer arrives whole: its latency is end-to-end, not time to first token
            deps.models().learnLatency(a.cand.state(), latencyMs);
            deps.observer().wholeResponse(a.cand, req.facts().promptTokens(), latencyMs);
        }
        for (Attempt other : attempts) {
            if (other != a && other.live) {
                learnWaited(other);
                endAttempt(other, "lost_race", null, false);
                deps.observer().wastedTokens(req.facts().promptTokens());
            }
        }
        winner = a;
        served = a;
        servedParts.add(new Billing.Part(a.cand, transcript.content.length(), transcript.reasoning.length(),
                transcript.toolCalls.length()));
        if (!committed) {
            committed = true;
            if (stream) {
                output.commitStream(a);
                lastClientWriteNanos = a.firstContentNanos;
            }
        }
        if (stream) {
            armStallWatchdog();
        }
    }

    /**
     * An attempt is ending after waiting with no first content: it lost the race to another attempt, or it is
     * abandoned (its silence outlasted its limit) for a failover. Its first token would have come no sooner than
     * now, so a stream's route learns the wait as a lower bound of its time to first token for this prompt size
     * ({@code LearnedModels.learnFirstTokenAtLeast}: only upwards, clipped as any sample, and an SLO miss only when it
     * proves one). Without this a route that turned slow while hedges kept winning against it was never measured
     * slow, and every request went to it first and paid the hedge delay. The wait bounds the whole answer's time
     * too, which Kong's end-to-end peak EWMA takes (streamed or not; a resume's is no whole answer's), and, once the
     * answer is whole, its time per output token ({@link #learnWaitedPerToken}). A non-streamed answer's wait is no
     * first token; a client's hang-up ({@link #clientGone}) teaches nothing, as the route was not slow, the client
     * left.
     */
    private void learnWaited(Attempt a) {
        learnWaited(a, Long.MAX_VALUE);
    }

    /**
     * {@link #learnWaited(Attempt)} for an attempt abandoned at {@code limitMs}, its give-up limit: the TTFT line
     * learns at most the first-token window the limit is made of ({@code TimingWindows.learnableWait}), so the next
     * attempt on the route is given up on no later. Learnt whole, the wait raised the line, the line the next limit,
     * and each hang of a route that hangs now and then was waited out longer than the last (2 s, 2.7 s ... 6 s with a
     * 2 s ceiling; up to 50 s after a few slow samples; found by hunt25). The route still learns it is slow.
     */
    private void learnAbandoned(Attempt a, long limitMs) {
        learnWaited(a, windows.learnableWait(a.cand, limitMs));
    }

    private void learnWaited(Attempt a, long lineMs) {
        if (a.hasContent) {
            return;
        }
        long waitedMs = elapsedMs(a.startNanos);
        boolean wholeAnswer = a.kind != Kind.RESUME;
        if (wholeAnswer) {
            a.waitedNoContentMs = waitedMs;
        }
        if (stream) {
            deps.models().learnFirstTokenAtLeast(a.cand.state(), a.promptTokens, waitedMs, lineMs, settings.slo(),
                    wholeAnswer);
        } else if (req.embeddings()) {
            deps.models().learnFirstTokenAtLeast(a.cand.state(), req.facts().inputTokens(), waitedMs, lineMs,
                    settings.slo(), true);
        } else if (wholeAnswer) {
            deps.models().learnEndToEndAtLeast(a.cand.state(), waitedMs);
        }
    }

    /**
     * The answer is whole, {@code tokens} long: every attempt that waited for it in vain (a hedge race's loser, one
     * abandoned) would have had to write as many, so its wait over them bounds Kong's time per output token (latency
     * over completion tokens, what an answer's sample is) on its route ({@code LearnedModels.learnTimePerTokenAtLeast},
     * only upwards). A loser wrote no token to measure, and without this bound a {@code tpot} group kept sending every
     * request first to a route whose first token never came in time.
     */
    private void learnWaitedPerToken(long tokens) {
        if (tokens <= 0) {
            return;
        }
        for (Attempt other : attempts) {
            if (other.waitedNoContentMs >= 0) {
                deps.models().learnTimePerTokenAtLeast(other.cand.state(), other.waitedNoContentMs / (double) tokens);
            }
        }
    }

    /** The upstream stream ended ({@code failure} null = clean EOF or [DONE]). */
    void streamEnded(Attempt a, TransportFailure failure) {
        if (a.emptyFinish != null && !settleEmptyFinish(a)) {
            return;
        }
        if (a.finishReason != null && (a == winner || !a.hasContent)) {
            if (a != winner) {
                // a finish with no content at all is an empty but complete answer
                contentArrived(a, false);
            }
            complete(a, false);
            return;
        }
        if (!a.hasContent) {
            // zero-content truncation: the route failed despite its 200
            String cls = failure == null ? "zero_content" : "transport_" + failure.kind().name().toLowerCase();
            attemptFailed(a, Failure.transport(cls, failure == null ? "stream ended before any content"
                    : failure.detail()));
            return;
        }
        String fewer = a == winner && failure == null && a.choices != null ? a.choices.fewerChoicesFinish() : null;
        if (fewer != null) {
            // a provider that ignores n answered fewer choices, each whole: that is its answer, not a break (it was
            // ended with an error event and its route charged, cooling it for every client; found by hunt6)
            a.finishReason = fewer;
            complete(a, false);
            return;
        }
        if (a == winner) {
            midStreamFailure(a, failure == null ? "eof_before_finish" : "transport_" + failure.kind().name()
                    .toLowerCase(), failure == null ? "stream ended before a finish_reason" : failure.detail());
        }
    }

    /**
     * An upstream that sent its finish (every choice's) and then its usage has nothing left to send but {@code [DONE]}:
     * one that stays open after them is hung up on after {@link #AFTER_USAGE}, not after {@code stall_floor}, and the
     * client's last chunk and {@code [DONE]} go out then (found by hunt12: they came 5 s after the text).
     */
    private void endSoonAfterUsage(Attempt a, boolean usageHere) {
        if (usageHere && a == winner && a.finishReason != null && !finished) {
            stallTimer.cancel();
            stallTimer = deps.scheduler().schedule(AFTER_USAGE, () -> endAfterUsage(a));
        }
    }

    /** How long an upstream that sent its finish and usage is waited for to end its stream. */
    static final Duration AFTER_USAGE = Duration.ofSeconds(1);

    private synchronized void endAfterUsage(Attempt a) {
        if (!finished && a == winner && a.live) {
            complete(a, true);
        }
    }

    private void armStallWatchdog() {
        stallTimer.cancel();
        lastActivityNanos = deps.ticker().nanos();
        stallTimer = deps.scheduler().schedule(windows.stallGap(winner, transcript), this::stallCheck);
    }

    private synchronized void stallCheck() {
        if (finished || winner == null) {
            return;
        }
        Attempt a = winner;
        long now = deps.ticker().nanos();
        long silentMs = (now - lastActivityNanos) / 1_000_000L;
        long gap = windows.stallGap(a, transcript).toMillis();
        // A stall nothing could resume (content reached the client under resume_mid_stream: false, or the resumes are
        // spent) would only lose a stream that may go on: like a last hope before its first token, it is waited for
        // until the upstream has been silent for read_timeout, and the client hears keep-alive comments meanwhile.
        boolean lastHope = a.finishReason == null && unresumable("stall") != null;
        if (lastHope) {
            gap = Math.max(gap, settings.timeouts().read().toMillis());
        }
        if (silentMs < gap) {
            long next = gap - silentMs;
            if (lastHope) {
                next = Math.min(next, Math.max(1, keepAliveIfDue(now) / 1_000_000L));
            }
            stallTimer = deps.scheduler().schedule(Duration.ofMillis(next), this::stallCheck);
            return;
        }
        if (a.finishReason != null) {
            // finished but the upstream never closed: the answer is complete, and the open stream is hung up on
            complete(a, true);
            return;
        }
        midStreamFailure(a, "stall", "no progress for " + silentMs + " ms");
    }

    void midStreamFailure(Attempt a, String cls, String detail) {
        midStreamFailure(a, new Failure(cls, detail, a.status, FailoverCriterion.ERROR, true, 0));
    }

    /** The committed stream broke: its route is charged as {@code f} says, and the stream resumes or ends. */
    private void midStreamFailure(Attempt a, Failure f) {
        resumeCause = f.errorClass();
        health.failure(a, f);
        endAttempt(a, "failed", f.errorClass(), true);
        resumeOrEnd(a.cand, f.errorClass(), f.detail());
    }

    private void resumeOrEnd(Candidate failed, String cls, String detail) {
        if (finished) {
            return;
        }
        winner = null;
        stallTimer.cancel();
        String cause = resumeCause == null ? cls : resumeCause;
        // once a break: what the deltas did not count (several tokens a chunk), for a resume's max_tokens and context
        transcript.counted(deps.tokens());
        if (served != null && answerLeft() <= 0 && !transcript.toolCallStarted && !transcript.otherStarted) {
            endAtLength();   // whole at its length, resumable or not (review19)
            return;
        }
        String end = unresumable(cause);
        if (end != null) {
            endWithErrorEvent(end);
            return;
        }
        broken = failed;
        // the state the request planned on may be minutes old: read it again before choosing (found by hunt28)
        List<String> ids = req.candidates().stream().map(Candidate::id).toList();
        deps.store().snapshot(ids, settings.balancer().usageWindow()).subscribe().with(
                states -> resumeOn(failed, cause, cls, states),
                t -> resumeOn(failed, cause, cls, java.util.Map.of()));
    }

    /**
     * Resumes the stream that broke on {@code failed}, choosing with the routes' state read now ({@code states}; none
     * when it could not be read): a route an operator suspended, that failed verification, or whose breaker opened or
     * provider asked for a wait since the request began is not taken (the broken route's own cooldown, most likely
     * opened by this break, leaves it the last resort it was). A resume went to such a route from the state read when
     * the request began (found by hunt28: the gap left when resumes began asking the catalog).
     */
    private synchronized void resumeOn(Candidate failed, String cause, String cls,
                                       java.util.Map<String, RouteSnapshot> states) {
        if (finished) {
            return;
        }
        Set<String> out = new HashSet<>();
        states.forEach((id, s) -> {
            if (dev.hedgerow.routing.Router.standing(s) != null
                    || (!id.equals(failed.id()) && s.heldOut())) {
                out.add(id);
            }
        });
        routes.heldOut(out);
        Candidate next = resumeTarget(failed);
        if (next == null) {
            endWithErrorEvent("The stream failed (" + cause + ") and no other route can resume it.");
            return;
        }
        resumes++;
        deps.observer().resumed(req, cls);
        output.keepAlive();
        // until the resume's first content the client hears only comments (a long prompt's prefill can take a while)
        lastClientWriteNanos = deps.ticker().nanos();
        silenceTimer.cancel();
        silenceTimer = deps.scheduler().schedule(silentKeepAliveEvery(), this::silentKeepAlive);
        launch(next, Kind.RESUME, UpstreamCall.methods(next).get(0));
    }

    /**
     * Whether a stream that broke inside a tool call now could still be resumed, or asked afresh, on another route,
     * provided nothing of the call reached the client: only then are its deltas held ({@link ClientOutput.ToolDeltas}).
     * Under {@code resume_mid_stream: false} the first tool-call delta commits the attempt as a content frame does
     * (Trifrost's rule), with {@code max_resumes} spent nothing is resumed, and once a call went out (text followed
     * it) a break ends the stream anyway ({@link #unresumable}): in each case the deltas go out as they come.
     */
    private boolean toolCallsResumable() {
        return settings.resumeMidStream() && resumes < settings.retry().maxResumes() && !transcript.toolCallStarted;
    }

    /**
     * Why a failure of the stream now would end it rather than be resumed (the client's error message, naming
     * {@code cause}), or null when it would be resumed.
     */
    private String unresumable(String cause) {
        if (transcript.toolCallStarted) {
            return "A tool call was interrupted mid-stream (" + cause + ") and cannot be continued exactly.";
        }
        if (transcript.otherStarted) {
            return "A refusal, function call or audio answer was interrupted mid-stream (" + cause
                    + ") and cannot be continued exactly.";
        }
        if ((!settings.resumeMidStream() || req.request().choices() > 1) && !transcript.isEmpty()) {
            // Trifrost's rule: committed once a content frame reached the client (a tool call's deltas, which are not
            // held then, included); with nothing delivered the request is still asked afresh (UpstreamCall sends it
            // whole). Several choices are never resumed: a resume continues one text
            return "The upstream stream failed after content was sent (" + cause + ").";
        }
        if (resumes >= settings.retry().maxResumes()) {
            return "The stream failed (" + cause + ") and every resume attempt was used.";
        }
        return null;
    }

    // ---- non-streaming ---------------------------------------------------------------------------------------

    void bodyEnded(Attempt a) {
        byte[] bytes = a.body.toByteArray();
        if (a.status != 200 || a.wrongContentType) {
            if (a.status == 200) {
                attemptFailed(a, Failure.invalid("wrong_content_type", "200 with content-type "
                        + a.headers.getOrDefault("content-type", "none")));
            } else {
                httpError(a, bytes);
            }
            return;
        }
        if (req.embeddings()) {
            embeddingsEnded(a, bytes);
            return;
        }
        JsonNode node = UpstreamReplies.parseWhole(bytes);
        Failure unusable = UpstreamReplies.unusableWhole(node, () -> 1 + stopTokens());
        if (unusable != null) {
            attemptFailed(a, unusable);
            return;
        }
        JsonNode msg = node.path("choices").path(0).path("message");
        contentArrived(a, false);
        JsonNode usage = node.get("usage");
        if (usage != null && usage.isObject()) {
            a.usage = usage; // the upstream's own count: billed as is, no need to run the tokenizer
        }
        ObjectNode out = (ObjectNode) node;
        for (JsonNode choice : out.path("choices")) {
            if (choice instanceof ObjectNode c) {
                ClientOutput.noBlankFinish(c, UpstreamReplies.finishReason(c));
            }
        }
        output.rewriteIdentity(a, out, "chat.completion");
        UsageSample billed = billing.usageOf(a, resumes > 0, node.path("choices"));
        Billing.putUsage(out, billed, Billing.upstreamBill(a, resumes > 0));
        finished = true;
        health.success(a);
        endAttempt(a, "success", null, false);
        output.whole(a, out, trail.toNode());
        stopTimers();
        long e2e = elapsedMs(a.startNanos);
        // arrived whole: its latency over its completion tokens is Kong's time per output token for non-streamed
        // answers as for streams; it shows no rhythm (decode 0: not measured), where its whole time taken for decode
        // time, its wait for the first token included, judged a route decoding at 200 tokens/s below a 50 tokens/s
        // target and moved auto's traffic to a slower one (found by hunt22)
        int tokens = perChoice(billed.completionTokens());
        deps.models().learnDecode(a.cand.state(), Generation.whole(tokens, 0, e2e), settings.slo(), a.recentGaps,
                a.gapsObserved);
        learnWaitedPerToken(tokens);
        deps.observer().decoded(a.cand, tokens, 0, e2e);
        finishedWith(200, billed, a.cand);
        answered(a, msg.path("content"));
    }

    /**
     * A whole embeddings answer with status 200, scanned as it arrived: relayed as the provider sent it
     * ({@link EmbeddingsReply}: model and provider set), billed once (the provider's prompt tokens, else the gateway's
     * count of the inputs; no completion), its latency learned for the size of its inputs. A 200 that is no embeddings
     * list fails the attempt over.
     */
    private void embeddingsEnded(Attempt a, byte[] bytes) {
        EmbeddingsReply.Relayed r = a.embeddingsScan.finish(bytes, a.cand.route().model(),
                a.cand.route().provider(), this::countedInputTokens);
        if (r.error() != null) {
            attemptFailed(a, Failure.transport("upstream_error_body", r.error()));
            return;
        }
        if (r.invalid() != null) {
            attemptFailed(a, Failure.invalid("malformed_body", r.invalid()));
            return;
        }
        contentArrived(a, false);
        long prompt = r.promptTokens();
        UsageSample billed = new UsageSample(prompt, 0, a.cand.route().price().cost(prompt, 0));
        finished = true;
        health.success(a);
        endAttempt(a, "success", null, false);
        output.whole(a, r.body(), trail.toNode());
        stopTimers();
        finishedWith(200, billed, a.cand);
    }

    /** Every input's tokens, as the gateway counts them: what an embeddings answer without usage is billed. */
    private long countedInputTokens() {
        long n = 0;
        for (int t : ((EmbeddingsRequest) req.request()).inputTokens(deps.tokens())) {
            n += t;
        }
        return n;
    }

    /** The most an attempt buffers of a whole 200 answer before it counts as failed ({@code oversize_body}). */
    int wholeBodyLimit() {
        return req.embeddings() ? EmbeddingsReply.MAX_BODY : Attempt.MAX_NONSTREAM_BODY;
    }

    // ---- outcomes --------------------------------------------------------------------------------------------

    private void httpError(Attempt a, byte[] bytes) {
        int status = a.status;
        if (streamOptionsRefused(a, status, bytes)) {
            sendWithoutStreamOptions(a);
            return;
        }
        String code = UpstreamReplies.errorCode(bytes);
        long retryAfter = UpstreamReplies.retryAfterMillis(a.headers.get("retry-after-ms"),
                a.headers.get("retry-after"), deps.clock().instant());
        if (a.kind == Kind.RESUME) {
            resumeRefused(a, status, code, retryAfter);
            return;
        }
        // A 401 is the provider refusing Hedgerow's own key for it (revoked, mistyped): never the client's doing,
        // so it is never passed through ("Incorrect API key" would blame the client's key); the route is failing,
        // and no criterion names it (forStatus), so whatever the group's list it fails over
        FailoverCriterion criterion = FailoverCriterion.forStatus(status);
        boolean failsOver = credentialsRefused(status) || criterion != null
                && settings.retry().allows(criterion);
        if (status == 400 && "context_length_exceeded".equals(code)) {
            routes.contextExceeded(a.cand.route().contextWindow());
            contextError = a;
            a.body = new ByteArrayOutputStream();
            a.body.writeBytes(bytes);
            attemptFailed(a, new Failure("context_length_exceeded", "context length exceeded", status, null, false,
                    0));
            return;
        }
        boolean routeFault = settings.retry().routeFault(status);
        if (!failsOver && status >= 400 && status < 500 && !routeFault) {
            // a client error reaches the client at once, as the provider sent it
            clientErrorPassthrough(a, bytes);
            return;
        }
        Failure f = new Failure("http_" + status, UpstreamReplies.shorten(new String(bytes, StandardCharsets.UTF_8)),
                status, criterion, routeFault, UpstreamReplies.holdMillis(status, retryAfter));
        if (!failsOver && routeFault) {
            // not a failover criterion for this group (a 429, or a 5xx, where Kong's list leaves them out): it still
            // counts against the route, with a 429's hold, as Kong's passive health check counts them, and is reported
            // after this one attempt (a 429 passed through was not counted; found by hunt25's mutation testing)
            health.failure(a, f);
            clientErrorPassthrough(a, bytes);
            return;
        }
        if (a.hasContent) {
            midStreamFailure(a, f.errorClass(), f.detail());
            return;
        }
        attemptFailed(a, f);
    }

    /**
     * The provider refused the {@code stream_options} the gateway added (the client sent none): a 400 or 422 whose
     * error names that field ({@link UpstreamReplies#refusedField}, the prober's rule). Once per route and request:
     * a refusal of the body sent again without it is the provider's answer.
     */
    private boolean streamOptionsRefused(Attempt a, int status, byte[] bytes) {
        return a.addedStreamOptions && !refusedStreamOptions.contains(a.cand.id()) && (status == 400 || status == 422)
                && UpstreamReplies.STREAM_OPTIONS.equals(UpstreamReplies.refusedField(bytes));
    }

    /**
     * The attempt's provider refused the gateway's own {@code stream_options}: the route is remembered as refusing it
     * and the same attempt is sent again at once without the field (the gateway then counts the usage itself). The
     * refusal is the gateway's request, not the route failing: nothing counts against the route's breaker or learnt
     * models, and the attempt limit does not count it. Its trail record says {@code refused}
     * ({@code stream_options_refused}).
     */
    private void sendWithoutStreamOptions(Attempt a) {
        streamOptionsRefusals.learn(a.cand);
        refusedStreamOptions.add(a.cand.id());
        endAttempt(a, "refused", "stream_options_refused", false);
        if (finished || committed && a.kind != Kind.RESUME) {
            return;   // another attempt already serves the client
        }
        if (a.kind != Kind.RESUME) {
            preCommitAttempts--;   // launch counts it again
        }
        launch(a.cand, a.kind, a.method);
    }

    /**
     * A resume attempt answered with an error status. The client already has content, so nothing of this answer
     * reaches it: a 400 to a prefill is the route declining that continuation (try its next method, no health
     * penalty); anything else moves the resume to another route. The client is only ever told the failure that
     * broke its stream ({@link #resumeCause}).
     */
    private void resumeRefused(Attempt a, int status, String code, long retryAfter) {
        boolean prefillRefused = status == 400 && a.method != null && a.method.exact()
                && !"context_length_exceeded".equals(code);
        if (prefillRefused) {
            endAttempt(a, "failed", "prefill_refused", false);
            List<ContinuationMethod> ms = UpstreamCall.methods(a.cand);
            int i = ms.indexOf(a.method);
            if (i >= 0 && i + 1 < ms.size()) {
                launch(a.cand, Kind.RESUME, ms.get(i + 1));
            } else {
                resumeOrEnd(a.cand, "prefill_refused", "prefill refused");
            }
            return;
        }
        String cls = "http_" + status;
        if (status == 429 || status >= 500 || credentialsRefused(status)) {
            health.failure(a, new Failure(cls, "resume refused", status, FailoverCriterion.forStatus(status),
                    true, UpstreamReplies.holdMillis(status, retryAfter)));
        }
        endAttempt(a, "failed", cls, false);
        if (status == 400 && "context_length_exceeded".equals(code)) {
            // no route of a window this small takes it, and the route that broke the stream stays the last resort
            // (the refuser became it, and every resume left went to it; found by hunt27)
            routes.contextExceeded(a.cand.route().contextWindow());
            resumeOrEnd(broken == null ? a.cand : broken, cls, "resume attempt answered " + status);
            return;
        }
        resumeOrEnd(a.cand, cls, "resume attempt answered " + status);
    }

    /** The provider refused the credentials Hedgerow holds for it. */
    private static boolean credentialsRefused(int status) {
        return status == 401;
    }

    private void clientErrorPassthrough(Attempt a, byte[] bytes) {
        finished = true;
        endAttempt(a, "client_error", "http_" + a.status, false);
        endLive("cancelled");
        stopTimers();
        answerAfterHealthWrites(() -> {
            output.passThrough(a, bytes, trail.toNode());
            finishedWith(a.status, null, null);
        });
    }

    /** An attempt failed before it streamed content: fail over (or wait for a racing attempt). */
    void attemptFailed(Attempt a, Failure f) {
        health.failure(a, f);
        endAttempt(a, "failed", f.errorClass(), true);
        if (a.kind == Kind.RESUME) {
            resumeOrEnd(a.cand, f.errorClass(), f.detail());
            return;
        }
        if (f.status() == 429 || f.status() == 503 || f.status() == 529) {
            sawCapacityError = true;
        }
        if (a != contextError) {
            otherFailureWindow = Math.max(otherFailureWindow, a.cand.route().contextWindow());
        }
        if (finished || committed) {
            return;
        }
        if (liveCount() > 0) {
            if (a.kind == Kind.HEDGE && f.routeFault()) {
                // the hedge raced a primary that missed its window and is still silent: its failure is failed over
                // as any attempt's (the budget paid for this race), or the request sat on the silent primary until
                // first_token_ceiling with routes untried (found by hunt21)
                Candidate next = failoverRoute(a, f.criterion());
                if (next != null) {
                    launch(next, Kind.FAILOVER, null);
                }
            }
            return;
        }
        if (criterionAllows(f.criterion()) && f.routeFault() && stayOnTopTier(a, f)) {
            return;
        }
        Candidate next = failoverRoute(a, f.criterion());
        if (next == null && f.routeFault() && mayFailOver(f.criterion()) && req.facts().prefs().allowFallbacks()) {
            // every route was tried: Kong's retries go on with a route whose breaker is still closed (a request
            // without fallbacks asked for no second try)
            next = routes.retryTarget(this::breakerStillClosed);
        }
        if (next != null) {
            routes.untried(next);   // a retry on a route already tried
            launch(next, Kind.FAILOVER, null);
            return;
        }
        timedOutUnretried = FailoverCriterion.TIMEOUT.equals(f.criterion()) && !criterionAllows(FailoverCriterion.TIMEOUT);
        exhausted();
    }

    /**
     * Where a broken stream resumes ({@link RouteChoice#nextForResume}); {@code failed}, the route whose break it
     * resumes, is its last resort.
     */
    private Candidate resumeTarget(Candidate failed) {
        return routes.nextForResume(failed, resumeContextNeeded(), this::breakerStillClosed,
                c -> !trail.rateLimited(c.route().id()) && !health.held(c));
    }

    /**
     * The context a resume needs: the prompt, the text delivered (reasoning too: it is sent back), and what is left
     * of {@code max_tokens} (none asked: nothing more is counted, as the router counts a first attempt's need).
     */
    private long resumeContextNeeded() {
        Integer max = req.request().maxTokens();
        return (long) req.facts().promptTokens() + transcript.deltas + transcript.deltaUndercount
                + (max == null ? 0 : Math.max(0, max - transcript.answerTokens()));
    }

    /**
     * The route may take this request again: not a half-open probe, no 429 in this request nor a provider's hold it
     * set (a 503's wait), and its failures (the shared count plus this request's) still under {@code max_fails}.
     */
    private boolean breakerStillClosed(Candidate c) {
        String id = c.route().id();
        return !c.halfOpen() && !trail.rateLimited(id) && !health.held(c)
                && c.state().fails() + trail.failuresOn(id) < settings.breaker().threshold();
    }

    /** Kong's priority rules after a failed attempt; true when the request stays on the top tier. */
    private boolean stayOnTopTier(Attempt a, Failure f) {
        if (!req.facts().prefs().allowFallbacks() || preCommitAttempts >= settings.retry().maxAttempts()) {
            return false;
        }
        int failuresHere = trail.failuresOn(a.cand.route().id());
        // among the routes the catalog still lets the request take (review27: the tier's retry went to a route an
        // operator had pinned another over since the request began)
        PriorityRetry.Decision d = PriorityRetry.afterFailure(settings,
                req.candidates().stream().filter(this::stillRouted).toList(), routes.triedIds(), a.cand,
                failuresHere, id -> (int) attempts.stream().filter(x -> x.cand.id().equals(id)).count(), f.status(),
                f.retryAfterMillis());
        if (!(d instanceof PriorityRetry.Decision.Stay stay) || !stillRouted(stay.target())) {
            return false;
        }
        if (stay.delay().isZero()) {
            routes.untried(stay.target());
            launch(stay.target(), Kind.FAILOVER, null);
        } else {
            priorityWait = deps.scheduler().schedule(stay.delay(), () -> retryAfterWaited(stay.target()));
        }
        return true;
    }

    private synchronized void retryAfterWaited(Candidate c) {
        if (finished || committed || liveCount() > 0) {
            return;
        }
        if (!stillRouted(c)) {
            // taken out by an operator during the wait: the next route the request may take, if any
            Candidate next = routes.next();
            if (next != null) {
                launch(next, Kind.FAILOVER, null);
            } else {
                exhausted();
            }
            return;
        }
        routes.untried(c);
        launch(c, Kind.FAILOVER, null);
    }

    /** Whether the catalog still lets this request take the route ({@link Dispatcher.Deps#stillRouted}). */
    private boolean stillRouted(Candidate c) {
        return deps.stillRouted().test(req.org(), c.route());
    }

    /**
     * Every route was tried: the provider's {@code context_length_exceeded} reaches the client as it was sent when no
     * route with a larger window failed otherwise; when one did (a 503, a timeout: it might have fitted the prompt),
     * the exhausted request's 502/503/504 with its retry advice does, not a 400 that no SDK retries and that tells
     * the app to shorten a prompt a larger route would have taken (found by hunt17).
     */
    private void exhausted() {
        if (contextError != null && otherFailureWindow <= contextError.cand.route().contextWindow()) {
            byte[] bytes = contextError.body.toByteArray();
            clientErrorPassthrough(contextError, bytes);
            return;
        }
        finalError();
    }

    private void finalError() {
        if (finished) {
            return;
        }
        finished = true;
        stopTimers();
        if (attempts.isEmpty() && !committed) {
            refusedAllProbing();
            return;
        }
        int status = sawCapacityError ? 503 : timedOutUnretried ? 504 : 502;
        answerAfterHealthWrites(() -> {
            // the wait is read once the health writes are answered: a hold or cooldown runs from when the store
            // applied it, which may be later than the failure, and the store's answer says how long it has left
            RetryAdvice.After retry = retryAfterExhausted();
            long retryAfter = retry.seconds();
            // not "every provider was tried": retries, failover_criteria or allow_fallbacks may have stopped earlier
            int n = trail.failures();
            String msg = status == 504
                    ? "The provider of '" + req.alias() + "' timed out, and this group's failover_criteria do not"
                            + " include timeout, so no other route was tried (the attempt trail says which). Retry"
                            + " after " + retryAfter + " s."
                    : "No provider of '" + req.alias() + "' could serve this request (" + n
                            + (n == 1 ? " attempt" : " attempts") + " failed; the attempt trail says why). Retry after "
                            + retryAfter + " s.";
            ApiError err = ApiError.upstreamExhausted(status, msg, retry);
            if (committed) {
                endWithErrorEvent(msg);
                return;
            }
            // a head that went out early (head_hold) gets this as the stream's error event, without the status
            output.exhausted(err, trail.toNode());
            finishedWith(status, null, null);
        });
    }

    /**
     * Runs {@code answer} (under this dispatch's lock) once the store has answered every health write this request
     * sent, or after {@link #HEALTH_WRITES_WAIT} (the Redis guard's timeout, after which the local store has them).
     * The retry advice of a refusal names the holds and cooldowns those writes set; answered before they were
     * stored, a client asking again at once (an SDK told 503) met routes no snapshot knew were out yet.
     */
    private void answerAfterHealthWrites(Runnable answer) {
        boolean ran = health.afterWrites(() -> {
            synchronized (this) {
                answer.run();
            }
        });
        if (!ran) {
            deps.scheduler().schedule(HEALTH_WRITES_WAIT, health::runWhenAnswered);
        }
    }

    /**
     * The wait of a request no route could serve: until the earliest time a route it may use can serve again. For a
     * candidate, the end of what this request's failures did to it (a provider's Retry-After hold; the cooldown of a
     * breaker they opened: {@link RouteHealth#backInMillis}); for a route the plan held out, when it comes back
     * ({@link DispatchRequest#othersBackInMillis}). When one would take a retry at once (not tried, still closed below
     * max_fails, max_fails 0, a fallback left out), 1 s: a pause, not a time anyone knows. The SDKs wait what it says.
     */
    private RetryAdvice.After retryAfterExhausted() {
        long now = deps.ticker().nanos();
        long earliest = req.othersBackInMillis() == RoutePlan.NEVER ? RoutePlan.NEVER
                : Math.max(0, req.othersBackInMillis() - elapsedMs(startNanos));
        for (Candidate c : req.candidates()) {
            if (stillRouted(c)) {   // a route taken out by an operator since is not back for this alias at all
                earliest = Math.min(earliest, health.backInMillis(c, now));
            }
        }
        return RetryAdvice.after(earliest == 0 || earliest == RoutePlan.NEVER ? 1000 : earliest);
    }

    /**
     * Nothing was sent: every route the plan offered was half-open, and each one's probe slot was taken by another
     * request after this one was planned (another instance, or a snapshot a few ms old). That is the pool the router
     * refuses as all unhealthy, so the request is refused the same way (503 no_healthy_provider, Retry-After 1 s as
     * for a probe in flight, one blocked audit event), not answered as an upstream failure no upstream had.
     */
    private void refusedAllProbing() {
        String routes = String.join(", ", req.candidates().stream().map(c -> c.route().id()).toList());
        ApiError err = ApiError.noHealthyProvider(req.alias(), routes + ": half-open probe in flight",
                RetryAdvice.after(1000));
        output.exhausted(err, trail.toNode());
        deps.observer().refused(req, err.status(), err.code(), err.message());
    }

    private void endWithErrorEvent(String message) {
        endWithErrorEvent("stream_interrupted", message);
    }

    private void endWithErrorEvent(String code, String message) {
        finished = true;
        stopTimers();
        endLive("cancelled");
        output.endWithError(code, message, trail.toNode());
        finishedCut(502);
    }

    /**
     * What is left of the request's max_tokens for the answer (reasoning not counted); MAX_VALUE without one, or for
     * a stream of several choices, whose deltas the transcript counts together.
     */
    private int answerLeft() {
        Integer max = req.request().maxTokens();
        return max == null || req.request().choices() > 1 ? Integer.MAX_VALUE : max - transcript.answerTokens();
    }

    /**
     * The stream broke after its answer had reached {@code max_tokens}, before the provider's finish: the answer is
     * whole at its length, so it ends as the provider would have ended it, {@code finish_reason: "length"}, billed for
     * what was delivered. A resume would have been asked for one token more (the least a request may ask), which the
     * client then got past its {@code max_tokens} (found by hunt18).
     */
    private void endAtLength() {
        Attempt a = served;
        output.flushTrimmer(a);
        finished = true;
        stopTimers();
        endLive("cancelled");
        a.heldFinish = null;
        a.heldTools.clear();   // a call cut short is not sent
        a.finishReason = "length";
        UsageSample billed = deliveredBill();
        output.endStream(a, req.request().includeUsage() ? billed : null, billing.usageDetails(a, true),
                trail.toNode());
        finishedWith(200, billed, a.cand);
    }

    /**
     * The winner's answer is whole; {@code hangUp} closes its upstream stream, which is still open. Any other attempt
     * still live (none should be: the first content ends the race) is ended as cancelled, so no upstream call or lease
     * outlives the request.
     */
    private void complete(Attempt a, boolean hangUp) {
        if (finished) {
            return;
        }
        if (a.kind == Kind.RESUME && a.method != null && a.method.exact() && a.continuesContent
                && a.choices == null && a.answerChars == 0 && a.outputTokens > 0 && "stop".equals(a.finishReason)) {
            // a prefill resume of the answer's text that wrote only reasoning, which the client is not shown
            // (ClientOutput), and stopped: a parser that takes all it reads for reasoning until the end of the thinking
            // (vLLM's deepseek_r1) streams a prefill's whole continuation there; taken as it came, the answer ended
            // cut short with "stop" (found by hunt29-b), so it is a failed resume, tried again elsewhere. Its route is
            // not charged: it serves fresh requests well. Not an instruction-style resume, whose model may think and
            // then stop, the answer being whole already, nor one that wrote a tool call (review29: both ended in an
            // error, their routes cooled down)
            midStreamFailure(a, new Failure("zero_content", "the resume wrote " + a.outputTokens + " deltas of "
                    + "reasoning and none of the answer it continues", a.status, FailoverCriterion.ERROR, false, 0));
            return;
        }
        output.flushTrimmer(a);
        finished = true;
        health.success(a);
        endAttempt(a, "success", null, hangUp);
        endLive("cancelled");
        UsageSample billed = billing.usageOf(a, resumes > 0, null);
        output.endStream(a, req.request().includeUsage() ? billed : null, billing.usageDetails(a, resumes > 0),
                trail.toNode());
        stopTimers();
        // its rhythm's time: from its first chunk, less the silence between its streamed reasoning and its first
        // visible chunk (part of the thinking first-token predictions add: counted as decode too, it judged a fast
        // thinker below target; its streamed reasoning is decode, and its tokens are counted)
        long decodeMs = a.firstContentNanos < 0 ? 0
                : (deps.ticker().nanos() - a.firstContentNanos - a.thinkingPauseNanos) / 1_000_000L;
        // a resume's bill counts every route's tokens: its own rhythm is its own deltas over its own time, its time
        // per output token its own latency over them, and its time no end-to-end latency (the answer began on another
        // route)
        boolean resumed = a.kind == Kind.RESUME;
        int tokens = resumed ? (int) a.outputTokens : perChoice(billed.completionTokens());
        long latencyMs = elapsedMs(a.startNanos);
        long e2eMs = resumed ? -1 : latencyMs;
        // one store call for the decode models and this stream's gaps (Attempt.end left them to this)
        deps.models().learnDecode(a.cand.state(), resumed ? Generation.part(tokens, decodeMs, latencyMs)
                : Generation.whole(tokens, decodeMs, latencyMs), settings.slo(), a.recentGaps, a.gapsObserved);
        learnWaitedPerToken(perChoice(billed.completionTokens()));
        deps.observer().decoded(a.cand, tokens, decodeMs, e2eMs);
        finishedWith(200, billed, a.cand);
        if (settings.balancer().judge() != null && transcript.content.length() > 0) {
            // several choices: the first is judged (the transcript interleaves them all)
            deps.observer().answered(req, a.cand, a.choices == null ? transcript.content.toString()
                    : a.choices.content(0));
        }
    }

    /**
     * One choice's share of an answer's completion tokens: the choices of {@code n > 1} are generated side by side,
     * so the route's decode speed and time per output token are each one's tokens over the answer's time.
     */
    private int perChoice(long completionTokens) {
        return (int) (completionTokens / req.request().choices());
    }

    /**
     * A whole answer of a judged group ({@code llm_accuracy}) reached its client: its text, if it has any (a tool
     * call has none to judge), goes to the judge through the observer, after the client's answer ended.
     */
    private void answered(Attempt a, JsonNode content) {
        if (settings.balancer().judge() != null && content.isTextual() && !content.asText().isEmpty()) {
            deps.observer().answered(req, a.cand, content.asText());
        }
    }

    // ---- bookkeeping -----------------------------------------------------------------------------------------

    /**
     * Ends an attempt once: timers, the upstream exchange, the lease, the learned gaps, the trail. A half-open probe
     * slot the attempt still holds is released here; a path that reports the route's health calls
     * {@link RouteHealth#failure} or {@link RouteHealth#success} first, since those writes free the slot themselves (a
     * release sent before the verdict would let another request probe the route in between).
     */
    private void endAttempt(Attempt a, String outcome, String error, boolean cancelExchange) {
        if (!a.live) {
            return;
        }
        a.end(outcome, cancelExchange);
        trail.ended(a, outcome, error, (a.startNanos - startNanos) / 1_000_000L, elapsedMs(a.startNanos));
    }

    /** Ends every attempt still live with the outcome. */
    private void endLive(String outcome) {
        for (Attempt a : attempts) {
            if (a.live) {
                endAttempt(a, outcome, null, false);
            }
        }
    }

    /** Attempts live, and those about to start (their probe slot on its way). */
    private int liveCount() {
        int n = pendingProbes;
        for (Attempt a : attempts) {
            if (a.live) {
                n++;
            }
        }
        return n;
    }

    private void renewLeases() {
        synchronized (this) {
            if (finished) {
                return;
            }
            for (Attempt a : attempts) {
                if (a.live) {
                    a.leaseWrite(() -> deps.store().renewLease(a.cand.id(), a.leaseId, LEASE_TTL));
                }
            }
            leaseTimer = deps.scheduler().schedule(LEASE_RENEW_EVERY, this::renewLeases);
        }
    }

    private void stopTimers() {
        stallTimer.cancel();
        leaseTimer.cancel();
        priorityWait.cancel();
        silenceTimer.cancel();
        deadlineTimer.cancel();
        for (Attempt a : attempts) {
            a.cancelTimers();
        }
    }

    private long elapsedMs(long since) {
        return (deps.ticker().nanos() - since) / 1_000_000L;
    }
}
