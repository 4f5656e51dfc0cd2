package dev.hedgerow.prober;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.JsonNodeFactory;
import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.hedgerow.catalog.Catalog;
import dev.hedgerow.catalog.GroupSettings;
import dev.hedgerow.catalog.Org;
import dev.hedgerow.catalog.Provider;
import dev.hedgerow.catalog.Route;
import dev.hedgerow.routing.InterTokenStats;
import dev.hedgerow.routing.LearnedModels;
import dev.hedgerow.routing.Generation;
import dev.hedgerow.routing.CapacityIntake;
import dev.hedgerow.routing.PrometheusCapacity;
import dev.hedgerow.routing.Router;
import dev.hedgerow.state.ProbeRenewal;
import dev.hedgerow.state.RouteSnapshot;
import dev.hedgerow.state.StateStore;
import dev.hedgerow.time.Scheduler;
import dev.hedgerow.time.Ticker;
import dev.hedgerow.upstream.UpstreamClient;
import io.smallrye.mutiny.Multi;
import io.smallrye.mutiny.Uni;

import java.time.Duration;
import java.time.InstantSource;
import java.util.ArrayList;
import java.util.HexFormat;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Optional;
import java.util.Random;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.function.Supplier;
import java.util.function.ToIntFunction;
import java.util.function.UnaryOperator;

/**
 * One probe round over every route of every org, chat and embeddings (what a schedule triggers):
 * <ul>
 *   <li>a standard-size streamed probe per chat route, straight to the provider, whose first-token time and decode
 *       speed feed the same learned models (and so the same SLO status) as live traffic; for an embeddings route an
 *       embeddings request of one standard-size text to its {@code /embeddings}, whose whole answer's latency is
 *       learnt as a live embeddings answer's is (Trifrost's EMA: no first token, no decode);</li>
 *   <li>for a route out of cooldown but still at its failure limit, the fleet's single half-open probe
 *       ({@link StateStore#tryAcquireProbe}), whose outcome closes or re-opens the breaker (a probe that ends with
 *       no outcome, by an exception or a cancelled round, gives the slot back); routes cooling down, or held by
 *       their provider's wait (a capacity refusal's Retry-After, written with its failure), are left alone;</li>
 *   <li>a known-answer check ({@code "Reply with exactly: <nonce>"}) and the model the response claims, written as
 *       the route's {@code verification} blob ({@code pass} / {@code fail:<why>}); the router excludes a failing
 *       route until a later round passes it. For an embeddings route the speed probe's own answer is the check (an
 *       embedding of finite numbers, from the route's model), with no second request. A pass holds for
 *       {@link ProberConfig#verifyEvery()}: each check is a paid request, and a route's served model rarely changes;
 *       a route with no verdict or a failing one is checked on every round;</li>
 *   <li>a scrape of each provider's {@code metrics_url} (vLLM / SGLang Prometheus text) into a {@code capacity}
 *       report with a TTL, for its chat and embeddings routes alike.</li>
 * </ul>
 * Probes run at most {@link ProberConfig#concurrency()} at a time, each bounded in tokens and cut off at
 * {@link ProberConfig#probeTimeout()}; a fleet-wide lock keeps rounds from overlapping across instances, and a
 * fleet-wide mark of the last start keeps them at least {@link ProberConfig#minInterval()} apart.
 * Thread-safe; a round's work is independent of any other.
 */
public final class Prober {
    /** The fleet-wide lock one round holds (one prober round at a time across every instance). */
    public static final String LOCK = "prober-round";
    /**
     * The fleet-wide mark of the last round's start, which lives {@link ProberConfig#minInterval()}: no round starts
     * while it does (rounds never run back to back, whoever asks for them).
     */
    public static final String STARTED = "prober-round-started";
    /** How long a round's one read of its routes' health stands for a probe about to start ({@link #current}). */
    static final Duration SNAPSHOT_FRESH = Duration.ofSeconds(1);

    /**
     * The ports and state a prober works with; {@code clock} is the wall clock a provider's Retry-After date is read
     * against (the gateway's); {@code countPrompt} counts the tokens a probe body's route reads, a chat prompt or an
     * embeddings input, as the gateway counts a live request's ({@code TokenCounter.countInput}).
     */
    public record Deps(StateStore store, Supplier<Catalog> catalog, LearnedModels models,
                       UpstreamClient upstream, MetricsSource metrics, Scheduler scheduler, Ticker ticker,
                       InstantSource clock, ToIntFunction<com.fasterxml.jackson.databind.JsonNode> countPrompt,
                       String instanceId) {
    }

    private final Deps deps;
    private final ProberConfig config;
    private final Random random = new Random();
    /**
     * Per route key, the probe body variant its provider takes: the fields it refused, as {@link #adapted} changes
     * them, learnt for the model and provider the route named then ({@link Target#fingerprint()}). Later rounds send
     * that variant first instead of finding it again with refused requests each round (an OpenAI reasoning model
     * refused {@code max_tokens} and {@code temperature}: three requests for one check). Kept in this prober's memory,
     * not in the state store: what it saves is refusals, which are answered at once and not billed, so relearning it
     * after a process start (or on another instance of the fleet) costs a request or two per route once, while a route
     * blob would add a write and a key to the shared state for it; and it describes the bodies this build sends, which
     * a blob written by another version might not. Dropped for routes no longer in the catalog at the next round.
     */
    private final Map<String, Variant> variants = new ConcurrentHashMap<>();
    private final System.Logger log = System.getLogger("dev.hedgerow.prober");

    public Prober(Deps deps, ProberConfig config) {
        this.deps = deps;
        this.config = config;
    }

    /** One round; completes when every probe finished or timed out (never fails). */
    public Uni<RoundReport> runRound() {
        List<Target> targets = new ArrayList<>();
        List<Scrape> scrapes = new ArrayList<>();
        for (Org org : deps.catalog().get().orgs()) {
            for (Route r : org.routes()) {
                targets.add(new Target(org, r, org.provider(r.provider()).orElseThrow()));
            }
            for (Provider p : org.providers()) {
                if (p.metricsUrl() != null) {
                    // vLLM serves an embeddings model with the same metrics as a chat one
                    scrapes.add(new Scrape(org, p, org.routes().stream()
                            .filter(r -> r.provider().equals(p.id())).toList()));
                }
            }
        }
        Set<String> keys = new java.util.HashSet<>();
        targets.forEach(t -> keys.add(t.key()));
        variants.keySet().retainAll(keys);
        // the lock outlives the longest round: at most two calls per route (one for an embeddings route), run
        // `concurrency` at a time, plus scrapes
        long waves = (targets.size() + config.concurrency() - 1) / config.concurrency() * 2L + 2;
        Duration lockTtl = config.probeTimeout().multipliedBy(waves).plusSeconds(5);
        String owner = deps.instanceId() + "/" + HexFormat.of().toHexDigits(random.nextLong());
        return deps.store().tryLock(LOCK, owner, lockTtl)
                .onFailure().recoverWithItem(false)
                .flatMap(locked -> {
                    if (!locked) {
                        return Uni.createFrom().item(RoundReport.skipped("another probe round is running"));
                    }
                    return markStart(owner).flatMap(refused -> refused.isPresent()
                            ? unlock(owner).replaceWith(refused.get())
                            : round(targets, scrapes).call(() -> unlock(owner)));
                });
    }

    private Uni<Void> unlock(String owner) {
        return deps.store().unlock(LOCK, owner).onFailure().recoverWithNull();
    }

    /**
     * Marks a round's start fleet-wide for {@link ProberConfig#minInterval()} (a lock taken and left to expire), under
     * the round lock, so that only a round that does start sets it. Empty when the round may start; otherwise the
     * skipped report of a round asked for too soon after the last one started, which says when the next may start
     * (the mark's time left, by the store's clock). A store failure skips the round too: the bound is on cost, and
     * the next scheduled round tries again.
     */
    private Uni<Optional<RoundReport>> markStart(String owner) {
        Duration min = config.minInterval();
        if (min.isZero()) {
            return Uni.createFrom().item(Optional.empty());
        }
        return deps.store().tryLock(STARTED, owner, min)
                .flatMap(marked -> marked ? Uni.createFrom().item(Optional.<RoundReport>empty())
                        : deps.store().lockRemainingMillis(STARTED)
                        .map(left -> Optional.of(RoundReport.skipped(tooSoon(min, left)))))
                .onFailure().recoverWithItem(e -> Optional.of(RoundReport.skipped(
                        "the start of the last round could not be read: " + e.getClass().getSimpleName())));
    }

    /** Why a round asked for {@code leftMs} before the minimum interval since the last start ends is not run. */
    static String tooSoon(Duration minInterval, long leftMs) {
        long agoMs = Math.max(0, minInterval.toMillis() - leftMs);
        return "the last probe round started " + seconds(agoMs, false) + " ago and rounds start at least "
                + seconds(minInterval.toMillis(), false) + " apart (min-interval): the next may start in "
                + seconds(leftMs, true);
    }

    /** Milliseconds as seconds: whole when they are, else to a tenth, rounded up or down. */
    private static String seconds(long ms, boolean up) {
        if (ms % 1000 == 0) {
            return ms / 1000 + " s";
        }
        long tenths = up ? (ms + 99) / 100 : ms / 100;
        return tenths / 10 + "." + tenths % 10 + " s";
    }

    private Uni<RoundReport> round(List<Target> targets, List<Scrape> scrapes) {
        Uni<Map<String, RouteSnapshot>> snapshots = targets.isEmpty() ? Uni.createFrom().item(Map.of())
                : deps.store().snapshot(targets.stream().map(Target::key).toList(), Duration.ofMinutes(1));
        return snapshots.onFailure().recoverWithItem(Map.of()).flatMap(states -> {
            long readNanos = deps.ticker().nanos();
            Uni<List<RoundReport.RouteResult>> probes = targets.isEmpty() ? Uni.createFrom().item(List.of())
                    : Multi.createFrom().iterable(targets)
                    .onItem().transformToUni(t -> Uni.createFrom().deferred(() -> current(t, states, readNanos))
                            .flatMap(s -> probeRoute(t, s)).onFailure().recoverWithItem(e ->
                            new RoundReport.RouteResult(t.org.id(), t.route.id(), "probe", "failed: " + e, null,
                                    null, null, null)))
                    .merge(config.concurrency())
                    .collect().asList();
            Uni<List<RoundReport.ScrapeResult>> scraped = scrapes.isEmpty() ? Uni.createFrom().item(List.of())
                    : Multi.createFrom().iterable(scrapes)
                    .onItem().transformToUni(this::scrape)
                    .merge(config.concurrency())
                    .collect().asList();
            return Uni.combine().all().unis(probes, scraped).asTuple()
                    .map(t -> new RoundReport(true, probedNote(t.getItem1()), t.getItem1(), t.getItem2()));
        });
    }

    /**
     * The route's health as its probe starts: the round's snapshot while it is under {@link #SNAPSHOT_FRESH} old,
     * read again after. A round probes {@code concurrency} routes at a time, each up to its timeout: a route its live
     * traffic cooled down, or whose half-open probe a live request took, meanwhile was probed on the round's
     * start-of-round view (a probe during its cooldown, or a second probe beside the live one; found by hunt22).
     * Should that read fail, the round's view stands.
     */
    private Uni<RouteSnapshot> current(Target t, Map<String, RouteSnapshot> states, long readNanos) {
        RouteSnapshot read = states.getOrDefault(t.key(), RouteSnapshot.empty(t.key()));
        if (deps.ticker().nanos() - readNanos < SNAPSHOT_FRESH.toNanos()) {
            return Uni.createFrom().item(read);
        }
        return deps.store().snapshot(List.of(t.key()), Duration.ofMinutes(1))
                .map(m -> m.getOrDefault(t.key(), read))
                .onFailure().recoverWithItem(read);
    }

    /**
     * "probed 1 route(s), skipped 3": a route left alone (cooling down, held, its half-open probe taken elsewhere) is
     * not counted as probed (it was; found by hunt14).
     */
    static String probedNote(List<RoundReport.RouteResult> routes) {
        long skipped = routes.stream().filter(r -> "skipped".equals(r.action())).count();
        return "probed " + (routes.size() - skipped) + " route(s)" + (skipped > 0 ? ", skipped " + skipped : "");
    }

    private Uni<RoundReport.RouteResult> probeRoute(Target t, RouteSnapshot s) {
        GroupSettings.Breaker breaker = t.org.group(t.route.alias()).breaker();
        if (s.coolingDown()) {
            return Uni.createFrom().item(result(t, "skipped", "cooling down", null, null));
        }
        if (s.retryAfterMillis() > 0) {
            // its provider asked to be left alone for this long (a capacity refusal's wait): a probe would be one
            // more refused request, and its failure would count against the route for the provider's own advice
            return Uni.createFrom().item(result(t, "skipped", "retry-after hold (" + s.retryAfterMillis()
                    + " ms left)", null, null));
        }
        boolean halfOpen = s.fails() >= breaker.threshold();
        if (!halfOpen) {
            return probe(t, s, breaker, false, write -> write);
        }
        String owner = deps.instanceId() + "/" + HexFormat.of().toHexDigits(random.nextLong());
        AtomicBoolean held = new AtomicBoolean(true);
        Duration ttl = config.probeTimeout().plusSeconds(5);
        return deps.store().tryAcquireProbe(t.key(), breaker.threshold(), ttl, owner)
                .onFailure().call(() -> releaseProbe(t, owner, held)) // the reply may be lost, not the slot
                .flatMap(acquired -> {
                    if (!acquired) {
                        return Uni.createFrom().item(result(t, "skipped", "half-open probe taken elsewhere", null,
                                null));
                    }
                    ProbeRenewal renewal = ProbeRenewal.start(deps.store(), deps.scheduler(), t.key(), owner, ttl);
                    // the verdict (recordSuccess / recordFailure) frees the slot, and a release under this owner's
                    // token follows its answer: a no-op once the verdict freed the slot, and the slot's release where
                    // the shared store did not take the verdict (an outage: the outage guard keeps the release and
                    // sends it when the store answers; found by hunt23). After the answer, not at the round's end: a
                    // cancelled round's release could overtake a verdict in flight. Any other end gives it back
                    return probe(t, s, breaker, true, write -> {
                        held.set(false);
                        renewal.cancel();
                        return write.onItemOrFailure().call((v, e) -> deps.store().releaseProbe(t.key(), owner)
                                .onFailure().recoverWithNull());
                    })
                            .onTermination().invoke(renewal::cancel)
                            .onTermination().call(() -> releaseProbe(t, owner, held));
                });
    }

    /**
     * The speed probe and the breaker write of its outcome; {@code verdictSent} is given that write before it is sent
     * (it also frees a half-open probe slot) and answers the write to send (a half-open probe's releases its slot
     * after it). Deferred, so that anything thrown while preparing it fails this Uni (and is reported for this route)
     * instead of escaping to the round.
     */
    private Uni<RoundReport.RouteResult> probe(Target t, RouteSnapshot s, GroupSettings.Breaker breaker,
                                               boolean halfOpen, UnaryOperator<Uni<?>> verdictSent) {
        return Uni.createFrom().deferred(() -> probeNow(t, s, breaker, halfOpen, verdictSent));
    }

    private Uni<RoundReport.RouteResult> probeNow(Target t, RouteSnapshot s, GroupSettings.Breaker breaker,
                                                  boolean halfOpen, UnaryOperator<Uni<?>> verdictSent) {
        String action = halfOpen ? "half_open_probe" : "probe";
        ObjectNode body = t.route.embeddings() ? embeddingsProbe(t.route) : speedProbe(t.route);
        int promptTokens = deps.countPrompt().applyAsInt(body);
        return send(t, body).flatMap(outcome -> {
            if (outcome instanceof ProbeOutcome.Slow slow) {
                // Still serving when the probe's time ran out: slow, not broken. A breaker failure would cool down
                // what may be the only capacity (Keln: a slow provider is passed over, never cut off); its first
                // token took at least this long: a lower bound, as a hedge race's loser's wait is (learnt only above
                // the line, an SLO miss only past the target; learnt as the time itself, a probe shorter than the
                // line pulled it down, and one shorter than the target counted as meeting it). Kong's peak EWMAs
                // take it as live losers' waits: the whole answer took at least as long, and each of the at most
                // probeMaxTokens tokens it was asked for at least that wait over them. No verdict: a half-open slot
                // is given back.
                deps.models().learnFirstTokenAtLeast(s, promptTokens, slow.waitedMs(),
                        t.org.group(t.route.alias()).slo(), true);
                deps.models().learnTimePerTokenAtLeast(s, slow.waitedMs() / (double) config.probeMaxTokens());
                return Uni.createFrom().item(result(t, action, "slow: no first token within " + slow.waitedMs()
                        + " ms", null, null));
            }
            if (outcome instanceof ProbeOutcome.Unfinished u) {
                return unfinished(t, s, breaker, action, promptTokens, u, verdictSent);
            }
            if (outcome instanceof ProbeOutcome.Failed f && f.status() / 100 == 4
                    && !t.org.group(t.route.alias()).retry().routeFault(f.status())) {
                // the provider refused the probe's own request (a parameter this model does not take): a live 400 is
                // passed through to its client and counts nothing against the route, and neither does this. No
                // breaker verdict (a half-open slot is given back), no known-answer check (but for an embeddings
                // route, whose probe is its check: a 403, 404 or 408 fails it)
                String refused = "refused: http " + f.status()
                        + (f.refused() == null ? "" : " naming " + clipField(f.refused()))
                        + ": the probe's request was refused, not counted against the route";
                return failedCheck(t, f).map(verdict -> result(t, action, refused, null, null, verdict));
            }
            if (outcome instanceof ProbeOutcome.Failed f) {
                // a breaker failure (by the live rule: transport, 401, 429, 5xx, a listed 403/404, an unusable 200),
                // and the same latency penalty on Kong's peak EWMAs as a live one; a capacity refusal's wait holds
                // the route as a live one's does, written with the failure in one step
                deps.models().learnFailure(s, t.org.group(t.route.alias()).timeouts());
                String failed = "failed: " + f.reason() + (f.holdMillis() > 0
                        ? ", held " + f.holdMillis() + " ms by its retry headers" : "");
                return verdictSent.apply(deps.store().recordFailure(t.key(), breaker.threshold(),
                                breaker.failTimeout(), Duration.ofMillis(f.holdMillis())))
                        .onFailure().recoverWithNull()
                        .flatMap(x -> failedCheck(t, f))
                        .map(verdict -> result(t, action, failed, null, null, verdict));
            }
            Long ttft;
            Double tps;
            long latency;
            Supplier<Uni<String>> check;
            if (outcome instanceof ProbeOutcome.Embedded e) {
                // learnt as the gateway learns a live embeddings answer (Dispatch.contentArrived): its latency for
                // the size of its input is its first token's and its whole answer's; no decode with no tokens out.
                // Its answer is the known-answer check: no second paid request
                deps.models().learnEmbeddings(s, promptTokens, e.e2eMs(), t.org.group(t.route.alias()).slo());
                ttft = null;
                tps = null;
                latency = e.e2eMs();
                check = () -> write(t, KnownAnswer.judgeEmbedding(t.route.model(), e.model(), e.embedding()));
            } else {
                ProbeOutcome.Answered a = (ProbeOutcome.Answered) outcome;
                learn(t, s, promptTokens, a);
                ttft = a.ttftMs();
                tps = a.tokens() > 1 && a.decodeMs() > 0 ? (a.tokens() - 1) * 1000.0 / a.decodeMs() : null;
                latency = a.e2eMs();
                check = () -> verify(t);
            }
            Uni<?> breakerWrite = Uni.createFrom().voidItem();
            if (halfOpen || s.fails() > 0) {
                breakerWrite = verdictSent.apply(deps.store().recordSuccess(t.key(), breaker.threshold(),
                        breaker.failTimeout())).onFailure().recoverWithNull();
            }
            return breakerWrite.flatMap(x -> verificationDue(t, s) ? check.get() : Uni.createFrom().<String>nullItem())
                    .map(verdict -> new RoundReport.RouteResult(t.org.id(), t.route.id(), action, "ok", ttft, tps,
                            latency, verdict));
        });
    }

    /**
     * The verdict a failed probe gives: a status that fails verification ({@link #failedVerdict}), written, whether a
     * check was due or not (a passing verdict is not trusted past such an answer); else none (null). An embeddings
     * route's probe is its known-answer check; a chat route's speed probe answered 401, 403 or 404, naming no field of
     * its request it refused, is answered what its check would be (its key refused or forbidden, its model not found): the check
     * is not sent after a failed probe, so a route whose model was gone kept its passing verdict and its share of live
     * traffic, each request answered 404 (found by hunt28).
     */
    private Uni<String> failedCheck(Target t, ProbeOutcome.Failed f) {
        // a chat probe's 408 (a proxy or queue timing it out, most often for a moment) is left to the check
        String verdict = t.route.embeddings() || f.refused() == null && f.status() != 408 ? failedVerdict(f) : null;
        return verdict == null ? Uni.createFrom().nullItem() : write(t, verdict);
    }

    /**
     * A probe whose answer had begun and not ended when its time ran out. Its first token came, so its time to first
     * token is learnt either way. Then it is judged as the gateway's stall watchdog judges a stream: without progress
     * (a heartbeat is none) for the route's allowed gap (its learned rhythm or this stream's, never less than
     * {@code stall_floor}) it stalled, a breaker failure as a stall mid-stream is; still making progress it is
     * serving, just slowly (Keln: a slow provider is passed over, never cut off): its decode speed is learnt from what arrived, the tokens after the first over
     * the time since it, and no verdict is written (a half-open slot is given back). No known-answer check follows:
     * a route that could not finish the speed probe in time would most likely hold the round for another timeout.
     */
    private Uni<RoundReport.RouteResult> unfinished(Target t, RouteSnapshot s, GroupSettings.Breaker breaker,
                                                    String action, int promptTokens, ProbeOutcome.Unfinished u,
                                                    UnaryOperator<Uni<?>> verdictSent) {
        GroupSettings group = t.org.group(t.route.alias());
        deps.models().learnFirstToken(s, promptTokens, u.ttftMs(), group.slo());
        long floor = group.timeouts().stallFloor().toMillis();
        long allowed = Math.max(u.rhythm().stallGapMillis(floor),
                InterTokenStats.decode(s.blob(LearnedModels.GAP).orElse(null)).stallGapMillis(floor));
        if (u.silentMs() >= allowed) {
            deps.models().learnFailure(s, group.timeouts());
            return verdictSent.apply(deps.store().recordFailure(t.key(), breaker.threshold(), breaker.failTimeout()))
                    .onFailure().recoverWithNull()
                    .replaceWith(result(t, action, "failed: stalled after " + u.tokens() + " token(s): no progress for "
                            + u.silentMs() + " ms", u.ttftMs(), null));
        }
        // its whole answer is not measured: the wait so far is only a lower bound of it (learnt as a sample, a wait
        // shorter than the route's end-to-end cost pulled it down), and of its time per output token over the at most
        // probeMaxTokens it was asked for, as a slow probe's is (its rhythm so far is no latency over its tokens)
        deps.models().learnDecode(s, Generation.unfinished(u.tokens(), u.decodeMs()), group.slo());
        deps.models().learnEndToEndAtLeast(s, u.waitedMs());
        deps.models().learnTimePerTokenAtLeast(s, u.waitedMs() / (double) config.probeMaxTokens());
        Double tps = u.tokens() > 1 && u.decodeMs() > 0 ? (u.tokens() - 1) * 1000.0 / u.decodeMs() : null;
        return Uni.createFrom().item(result(t, action, "slow: " + u.tokens() + " token(s), answer not finished within "
                + u.waitedMs() + " ms", u.ttftMs(), tps));
    }

    /**
     * Gives back a half-open probe slot once, unless a verdict freed it: a probe that failed with an exception or was
     * cancelled must not hold the route's recovery for the slot's TTL. Compare-and-delete under {@code owner}, so it
     * never frees a slot taken by another instance; never fails.
     */
    private Uni<Void> releaseProbe(Target t, String owner, AtomicBoolean held) {
        if (!held.compareAndSet(true, false)) {
            return Uni.createFrom().voidItem();
        }
        return deps.store().releaseProbe(t.key(), owner).onFailure().recoverWithNull();
    }

    /**
     * Learns a probe like live traffic: judged against the route's own group targets, not the defaults. Its first
     * token is the gateway's (reasoning counts), and a reasoning stream's pause before its first visible token is
     * learnt as its thinking time, as a live stream's is.
     */
    private void learn(Target t, RouteSnapshot s, int promptTokens, ProbeOutcome.Answered a) {
        GroupSettings.Slo slo = t.org.group(t.route.alias()).slo();
        deps.models().learnFirstToken(s, promptTokens, a.ttftMs(), slo);
        deps.models().learnDecode(s, Generation.whole(a.tokens(), a.decodeMs(), a.e2eMs()), slo);
        if (a.thinkMs() >= 0) {
            deps.models().learnThinking(s, a.thinkMs());
        }
    }

    /**
     * Whether this round runs the route's known-answer check: always with no period ({@link ProberConfig#verifyEvery()}
     * zero), with no verdict of the prober's yet (a new route, or one whose verdict lapsed), with a failing one (so a
     * route excluded for it is back in service on the first round it passes), and once the mark a passing check leaves
     * ({@link #VERIFIED}, living {@code verifyEvery}) is gone or names another model or provider than the route does
     * now. The mark is a route blob, read with the round's snapshot: no extra read, and the period holds fleet-wide
     * whichever instance runs the round.
     */
    private boolean verificationDue(Target t, RouteSnapshot s) {
        if (config.verifyEvery().isZero()) {
            return true;
        }
        boolean passing = s.blob(Router.VERIFICATION).map(v -> v.trim().equalsIgnoreCase("pass")).orElse(false);
        return !passing || !s.blob(VERIFIED).map(t.verifiedMark()::equals).orElse(false);
    }

    /**
     * The route blob a passing known-answer check leaves for {@link ProberConfig#verifyEvery()}: a hash of the
     * provider and model it was judged on ({@link Target#verifiedMark()}), so a catalog change re-checks at once.
     */
    public static final String VERIFIED = "verified";

    /**
     * The known-answer check; returns the verdict written, or null when the route could not be reached or gave no
     * usable answer (reachability, overload and empty or malformed 200s are the breaker's business, as failover
     * treats them, not verification's: a transient empty answer must not exclude the route until the next round).
     */
    private Uni<String> verify(Target t) {
        String nonce = "hr-" + HexFormat.of().toHexDigits(random.nextInt());
        ObjectNode body = JsonNodeFactory.instance.objectNode();
        body.put("model", t.route.model());
        body.putArray("messages").addObject().put("role", "user").put("content", KnownAnswer.prompt(nonce));
        body.put("max_tokens", config.verifyMaxTokens());
        body.put("temperature", 0);
        body.put("stream", false);
        return send(t, body).flatMap(outcome -> {
            if (outcome instanceof ProbeOutcome.Slow) {
                return Uni.createFrom().nullItem();   // no answer in time: no verdict
            }
            if (outcome instanceof ProbeOutcome.Failed f) {
                // the route's key refused or forbidden, its model not found, its server timing requests out: it
                // cannot serve. Unreachable, overloaded, a 200 that was no usable answer (empty, malformed), or a
                // refusal of the probe's own request (another 4xx): no verdict. A failure of the route's (by the live
                // rule) counts against its breaker as a live one's does, with a capacity refusal's hold: a 429 with
                // Retry-After was dropped, and live requests and the next round went straight back (found by hunt28)
                String verdict = failedVerdict(f);
                Uni<?> counted = Uni.createFrom().voidItem();
                // an error status only: a check not answered in time (status 0) is slow, not broken, as a speed
                // probe's is (review27: a slow check cooled down a route whose probe had just answered), and a 200
                // that is no usable answer (a thinking model's budget spent on its reasoning) is no failure either
                GroupSettings group = t.org.group(t.route.alias());
                if (group.retry().routeFault(f.status())) {   // an error status: never 0 (a timeout) nor a 200
                    GroupSettings.Breaker breaker = group.breaker();
                    counted = deps.store().recordFailure(t.key(), breaker.threshold(), breaker.failTimeout(),
                            Duration.ofMillis(f.holdMillis())).onFailure().recoverWithNull();
                }
                return counted.flatMap(x -> verdict == null ? Uni.createFrom().<String>nullItem() : write(t, verdict));
            }
            ProbeOutcome.Answered a = (ProbeOutcome.Answered) outcome;
            return write(t, KnownAnswer.judge(nonce, t.route.model(), a.model(), a.content()));
        });
    }

    /** The error statuses of a known-answer check that fail the route's verification. */
    private static final java.util.Set<Integer> VERDICT_STATUSES = java.util.Set.of(401, 403, 404, 408);

    /** The verdict a known-answer check's failure gives: {@code fail:http <status>} for {@link #VERDICT_STATUSES}. */
    private static String failedVerdict(ProbeOutcome.Failed f) {
        return VERDICT_STATUSES.contains(f.status()) ? "fail:http " + f.status() : null;
    }

    /**
     * Sends one probe request to the route's provider. A 400 (or 422) naming a field the probe can do without is
     * sent once more without it: {@code max_tokens} as {@code max_completion_tokens} (OpenAI's reasoning models
     * refuse the former), {@code temperature} left out (they refuse any but the default), {@code stream_options}
     * left out (some servers do not take it). Each field is adapted at most once, and the refused requests are
     * answered at once and not billed.
     * {@code max_tokens} stays what is sent first: vLLM before 0.6.2, llama.cpp's server before February 2026,
     * llamafile and llama-cpp-python ignore {@code max_completion_tokens} without a word, so sending it alone would
     * lift the probe's cost bound on them. Once a provider took an adapted body, the route's variant is remembered
     * ({@link #variants}) and sent first from then on, for both probes; it is forgotten when the route's model or
     * provider changes, or when the remembered variant is itself refused (that probe is reported refused; the next
     * round starts again from the plain body). An embeddings probe is sent as it is: it has none of those fields, and
     * no variant is learnt or used for it.
     */
    private Uni<ProbeOutcome> send(Target t, ObjectNode body) {
        if (t.route.embeddings()) {
            return call(t, body);
        }
        Variant known = variants.get(t.key());
        if (known != null && !known.fingerprint().equals(t.fingerprint())) {
            variants.remove(t.key(), known);   // learnt for another model or provider
            known = null;
        }
        List<String> refused = known == null ? List.of() : known.refused();
        ObjectNode first = body;
        for (String field : refused) {
            ObjectNode b = adapted(first, field);
            if (b != null) {
                first = b;
            }
        }
        return send(t, first, refused, first != body);
    }

    /**
     * Sends {@code body}, adapted from the plain one for the {@code refused} fields, and adapts it further on a
     * refusal it can. {@code remembered}: the body is (or grew from) the route's remembered variant.
     */
    private Uni<ProbeOutcome> send(Target t, ObjectNode body, List<String> refused, boolean remembered) {
        return call(t, body).flatMap(outcome -> {
            if (outcome instanceof ProbeOutcome.Failed f && (f.status() == 400 || f.status() == 422)) {
                ObjectNode adapted = adapted(body, f.refused());
                if (adapted != null) {
                    List<String> more = new ArrayList<>(refused);
                    more.add(f.refused());
                    return send(t, adapted, List.copyOf(more), remembered);
                }
                if (remembered) {
                    variants.remove(t.key());
                }
                return Uni.createFrom().item(outcome);
            }
            // taken: the provider got past its parameter checks (a 200, whatever came of it)
            boolean taken = !(outcome instanceof ProbeOutcome.Failed f) || f.status() == 200;
            if (taken && !refused.isEmpty()) {
                variants.put(t.key(), new Variant(t.fingerprint(), refused));
            }
            return Uni.createFrom().item(outcome);
        });
    }

    /** One probe request of {@code body} to the route's provider, at the route's endpoint (chat or embeddings). */
    private Uni<ProbeOutcome> call(Target t, ObjectNode body) {
        return ProbeCall.send(deps.upstream(), deps.scheduler(), deps.ticker(), deps.clock(), t.provider,
                t.route.embeddings(), body, config.probeTimeout());
    }

    /** The probe body without the refused field (renamed or left out), or null when it cannot do without it. */
    static ObjectNode adapted(ObjectNode body, String refused) {
        if ("max_tokens".equals(refused) && body.has("max_tokens") && !body.has("max_completion_tokens")) {
            ObjectNode b = body.deepCopy();
            b.set("max_completion_tokens", b.remove("max_tokens"));
            return b;
        }
        if (("temperature".equals(refused) || "stream_options".equals(refused)) && body.has(refused)) {
            ObjectNode b = body.deepCopy();
            b.remove(refused);
            return b;
        }
        return null;
    }

    /** A refused field's name as a report quotes it (a provider's {@code param} is not trusted to be short). */
    private static String clipField(String field) {
        return field.length() > 40 ? field.substring(0, 40) : field;
    }

    /**
     * Writes the verdict (living {@link ProberConfig#verdictTtl()}) and, for a pass with a period, the mark that holds
     * the next check off for {@link ProberConfig#verifyEvery()}; both in one store call.
     */
    private Uni<String> write(Target t, String verdict) {
        List<StateStore.RouteBlob> blobs = new ArrayList<>();
        blobs.add(new StateStore.RouteBlob(Router.VERIFICATION, verdict, config.verdictTtl()));
        if ("pass".equals(verdict) && !config.verifyEvery().isZero()) {
            blobs.add(new StateStore.RouteBlob(VERIFIED, t.verifiedMark(), config.verifyEvery()));
        }
        return deps.store().putRouteBlobs(t.key(), blobs)
                .onFailure().invoke(e -> log.log(System.Logger.Level.WARNING, "verification write failed: " + e))
                .onFailure().recoverWithNull()
                .replaceWith(verdict);
    }

    private Uni<RoundReport.ScrapeResult> scrape(Scrape sc) {
        List<String> ids = sc.routes.stream().map(Route::id).toList();
        return deps.metrics().fetch(sc.provider.metricsUrl(), config.probeTimeout())
                .ifNoItem().after(config.probeTimeout()).fail()
                .flatMap(text -> {
                    List<Uni<Void>> writes = new ArrayList<>();
                    List<String> fed = new ArrayList<>();
                    for (Route r : sc.routes) {
                        PrometheusCapacity.parse(text, r.model(), config.maxQueue()).ifPresent(c -> {
                            fed.add(r.id());
                            writes.add(CapacityIntake.put(deps.store(), Router.key(sc.org, r), c,
                                    config.capacityTtl()));
                        });
                    }
                    Uni<Void> all = writes.isEmpty() ? Uni.createFrom().voidItem()
                            : Uni.join().all(writes).andCollectFailures().replaceWithVoid();
                    return all.replaceWith(new RoundReport.ScrapeResult(sc.org.id(), sc.provider.id(), fed,
                            fed.isEmpty() ? "no known metrics" : "ok"));
                })
                .onFailure().recoverWithItem(e -> new RoundReport.ScrapeResult(sc.org.id(), sc.provider.id(), ids,
                        "failed: " + e.getClass().getSimpleName()));
    }

    /** A streamed request of the standard probe size, bounded by {@code probeMaxTokens}. */
    private ObjectNode speedProbe(Route r) {
        ObjectNode body = JsonNodeFactory.instance.objectNode();
        body.put("model", r.model());
        body.putArray("messages").addObject().put("role", "user").put("content", standardText());
        body.put("max_tokens", config.probeMaxTokens());
        body.put("stream", true);
        body.putObject("stream_options").put("include_usage", true);
        return body;
    }

    /**
     * An embeddings request of one text of the standard probe size (the chat probe's prompt), its vector asked for as
     * floats ({@code encoding_format: float}: every OpenAI-compatible server takes it, and it is OpenAI's default).
     */
    private ObjectNode embeddingsProbe(Route r) {
        ObjectNode body = JsonNodeFactory.instance.objectNode();
        body.put("model", r.model());
        body.put("input", standardText());
        body.put("encoding_format", "float");
        return body;
    }

    /** The probes' text of about {@link ProberConfig#standardPromptTokens()} tokens. */
    private String standardText() {
        StringBuilder prompt = new StringBuilder("Write a short note about hedgerows. Context:");
        int words = Math.max(0, config.standardPromptTokens() - 24);
        for (int i = 0; i < words; i++) {
            prompt.append(' ').append(FILLER[i % FILLER.length]);
        }
        return prompt.toString();
    }

    private static final String[] FILLER = ("hawthorn blackthorn hazel field maple holly dog rose bramble ivy "
            + "wren robin dormouse hedgehog bank ditch lane meadow").split(" ");

    private static RoundReport.RouteResult result(Target t, String action, String outcome, Long ttft, Double tps) {
        return result(t, action, outcome, ttft, tps, null);
    }

    private static RoundReport.RouteResult result(Target t, String action, String outcome, Long ttft, Double tps,
                                                  String verdict) {
        return new RoundReport.RouteResult(t.org.id(), t.route.id(), action, outcome, ttft, tps, null, verdict);
    }

    private record Target(Org org, Route route, Provider provider) {
        String key() {
            return Router.key(org, route);
        }

        /** What a learnt variant holds for: the provider (its id and address) and the model the route names. */
        String fingerprint() {
            return provider.id() + "\n" + provider.baseUrl() + "\n" + route.model();
        }

        /** The {@link #VERIFIED} mark's value: a short hash of {@link #fingerprint()} (no address in the store). */
        String verifiedMark() {
            return dev.hedgerow.catalog.Keys.sha256Hex(fingerprint()).substring(0, 16);
        }
    }

    /** The fields a route's provider refused, in the order they were adapted, for the route as it was then. */
    private record Variant(String fingerprint, List<String> refused) {
    }

    private record Scrape(Org org, Provider provider, List<Route> routes) {
    }

    /**
     * The known-answer check's prompt and judgement, for a chat route (the nonce echoed) and for an embeddings route
     * (an embedding of finite numbers); for both, the model the response claims. Stateless.
     */
    static final class KnownAnswer {
        private KnownAnswer() {
        }

        static String prompt(String nonce) {
            return "Reply with exactly: " + nonce;
        }

        /** {@code pass}, or {@code fail:<why>}. */
        static String judge(String nonce, String routeModel, String answeredModel, String content) {
            if (content == null || !content.contains(nonce)) {
                return "fail:wrong answer to the known-answer check";
            }
            return modelVerdict(routeModel, answeredModel);
        }

        /**
         * An embeddings answer's verdict, {@code pass} or {@code fail:<why>}: its first {@code embedding} must be a
         * non-empty array of finite numbers, or a base64 string of little-endian float32 values, all finite (the form
         * {@code encoding_format: base64} asks for, in case a provider ignores the {@code float} the probe asks for),
         * and the response must name the route's model ({@link #sameModel}).
         */
        static String judgeEmbedding(String routeModel, String answeredModel, JsonNode embedding) {
            String fault = vectorFault(embedding);
            return fault != null ? "fail:" + fault : modelVerdict(routeModel, answeredModel);
        }

        /** What is wrong with an embedding as it came, or null when it is a usable vector. */
        static String vectorFault(JsonNode embedding) {
            if (embedding == null || embedding.isMissingNode() || embedding.isNull()) {
                return "answer has no embedding";
            }
            if (embedding.isArray()) {
                if (embedding.isEmpty()) {
                    return "embedding is empty";
                }
                for (JsonNode x : embedding) {
                    if (!x.isNumber() || !Double.isFinite(x.asDouble())) {
                        return "embedding has a value that is not a finite number";
                    }
                }
                return null;
            }
            if (embedding.isTextual()) {
                byte[] bytes;
                try {
                    bytes = java.util.Base64.getDecoder().decode(embedding.asText());
                } catch (IllegalArgumentException e) {
                    return "embedding is neither numbers nor base64";
                }
                if (bytes.length == 0 || bytes.length % Float.BYTES != 0) {
                    return "base64 embedding is not whole float32 values";
                }
                java.nio.FloatBuffer floats = java.nio.ByteBuffer.wrap(bytes).order(java.nio.ByteOrder.LITTLE_ENDIAN)
                        .asFloatBuffer();
                while (floats.hasRemaining()) {
                    if (!Float.isFinite(floats.get())) {
                        return "embedding has a value that is not a finite number";
                    }
                }
                return null;
            }
            return "embedding is neither numbers nor base64";
        }

        /** {@code pass} when the response names the route's model ({@link #sameModel}), else why not. */
        private static String modelVerdict(String routeModel, String answeredModel) {
            if (answeredModel == null || answeredModel.isBlank()) {
                return "fail:response names no model";
            }
            if (!sameModel(routeModel, answeredModel)) {
                return "fail:served model '" + clip(answeredModel) + "' is not '" + clip(routeModel) + "'";
            }
            return "pass";
        }

        /**
         * A dated snapshot suffix: {@code -YYYY-MM-DD} (OpenAI's {@code gpt-4o-mini-2024-07-18}),
         * {@code -YYYYMMDD} (Anthropic's {@code claude-3-5-sonnet-20241022}) or {@code -MMDD} (OpenAI's older
         * {@code gpt-4-0613}), with a month and day that can be one.
         */
        private static final java.util.regex.Pattern DATE_SUFFIX = java.util.regex.Pattern.compile(
                "-(?:20\\d\\d-(?:0[1-9]|1[0-2])-(?:0[1-9]|[12]\\d|3[01])"
                        + "|20\\d\\d(?:0[1-9]|1[0-2])(?:0[1-9]|[12]\\d|3[01])"
                        + "|(?:0[1-9]|1[0-2])(?:0[1-9]|[12]\\d|3[01]))");

        /**
         * Equal ignoring case, or equal after the last '/' (providers prefix their own namespaces), or the answer
         * names a dated snapshot of the claimed model (OpenAI, Azure and some OpenRouter models answer
         * {@code gpt-4o-mini-2024-07-18} to a request for {@code gpt-4o-mini}). Only a date may follow: another
         * model ({@code gpt-4o-mini-high}, {@code gpt-4o}) is not the same.
         */
        static boolean sameModel(String claimed, String answered) {
            String a = claimed.toLowerCase(Locale.ROOT);
            String b = answered.toLowerCase(Locale.ROOT);
            return a.equals(b) || tail(a).equals(tail(b)) || snapshotOf(a, b) || snapshotOf(tail(a), tail(b));
        }

        /** {@code answered} is {@code claimed} with a dated snapshot suffix. */
        private static boolean snapshotOf(String claimed, String answered) {
            return answered.startsWith(claimed)
                    && DATE_SUFFIX.matcher(answered.substring(claimed.length())).matches();
        }

        private static String tail(String s) {
            return s.substring(s.lastIndexOf('/') + 1);
        }

        private static String clip(String s) {
            return s.length() > 80 ? s.substring(0, 80) : s;
        }
    }
}
