package dev.hedgerow.routing;

import dev.hedgerow.catalog.GroupSettings;
import dev.hedgerow.state.RouteSnapshot;
import dev.hedgerow.state.StateStore;

import java.time.Duration;
import java.time.InstantSource;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicReference;
import java.util.function.UnaryOperator;

/**
 * The learned per-route models, kept as blobs in the shared store so every instance predicts alike: TTFT by prompt
 * size (forgetting least squares, {@link TtftPredictor}), the EMA latency of Trifrost's {@code least_latency}, the
 * peak EWMAs of Kong's {@code lowest_latency} (tpot and e2e), decode speed, and the inter-chunk gap allowance of
 * the stall watchdog, the thinking time of reasoning models, the route's standing against the SLO targets
 * ({@link SloTracker}, blob {@value #SLO}) and the measured TTFT points the console plots ({@link TtftSampleLog}).
 * Every write goes through this class, so one instance's samples chain and one observation is one store call.
 * Reads prefer this instance's own write of the last {@value #LOCAL_FRESH_MS} ms (a snapshot read just before that
 * write cannot contain it yet), else the snapshot, so every instance converges on the shared copy. Updates start
 * from this instance's write of the last {@value #LOCAL_CHAIN_MS} ms (the snapshot a request was planned with may
 * predate it), else the snapshot's, so one instance's samples chain; but from the snapshot's once this instance's
 * write is {@value #LOCAL_LANDED_MS} ms old and the snapshot shows another value: by then the snapshot holds the
 * write, so another value is another instance's, written since. Across instances each write is a compare-and-set
 * ({@link StateStore.RouteBlob#learned}), so no sample is lost whichever is stepped from; the choice only spares a
 * conflict and its extra round trip. Thread-safe.
 */
public final class LearnedModels implements RouteModels {
    public static final String TTFT = "ttft";
    public static final String EMA = "ema";
    public static final String PEWMA_TPOT = "pewma_tpot";
    public static final String PEWMA_E2E = "pewma_e2e";
    public static final String DECODE = "decode";
    public static final String GAP = "gap";
    public static final String CAPACITY = "capacity";
    public static final String THINK = "think";
    public static final String SLO = "slo";
    /** The judged accuracy of {@code tokens_count_strategy: llm_accuracy}: an {@link Ewma} of judge scores. */
    public static final String ACCURACY = "accuracy";
    /** The measured (prompt, TTFT) points the console plots ({@link TtftSampleLog}). */
    public static final String TTFT_SAMPLES = "ttft_samples";
    /**
     * How many of a stream's most recent gaps {@link #learnGaps} replays onto this instance's copy: with the gap
     * EWMA's α = 1/8 the starting point weighs (7/8)^64 ≈ 0.02% after that many, so replaying more changes nothing.
     */
    public static final int GAP_REPLAY = 64;

    /** How long this instance trusts its own newest write over a snapshot. */
    static final long LOCAL_FRESH_MS = 2_000;
    /** How long an update chains from this instance's own newest write rather than the request's snapshot. */
    static final long LOCAL_CHAIN_MS = 30_000;
    /**
     * How old this instance's write must be for a snapshot to hold it (a write batch, the snapshot cache's age, a
     * round trip each, with room): a snapshot showing another value then shows another instance's, written since,
     * and an update steps from it. Chained from this instance's copy instead, every write of two instances serving a
     * route in turn found Redis changed and was stepped and sent again (about five per request; found by hunt14).
     */
    static final long LOCAL_LANDED_MS = 250;
    /**
     * An SLO verdict not refreshed by a sample for this long is forgotten: the route is judged afresh (and, if it
     * still misses the targets, measured below them again by its next request). This bounds how long a route that
     * recovered while nobody was sending it traffic stays out of normal rotation.
     */
    static final Duration SLO_TTL = Duration.ofMinutes(10);
    /** Decode samples of shorter completions say little about sustained speed and are not judged against the SLO. */
    static final int SUSTAINED_MIN_TOKENS = 8;

    private static final Duration MODEL_TTL = Duration.ofDays(7);
    private static final double EMA_ALPHA = 0.3;
    /**
     * Weight of a new judge score: the accuracy is a mean over about the last 10 scores (a score 10 samples old
     * weighs 0.9^10 ≈ 35% of the newest), so a route whose answers got worse is seen within a few judgements while
     * one odd score moves it by a tenth.
     */
    static final double ACCURACY_ALPHA = 0.1;
    private static final long PEWMA_TAU_MS = 10_000;

    private final StateStore store;
    private final InstantSource clock;
    private final TtftPredictor.Prior prior;
    /**
     * This instance's latest copy of each route's models, stepped without locks: a compare-and-set per model. (A
     * {@code ConcurrentHashMap.compute} ran the step under the map bin's monitor, and with both event loops
     * learning from the same route, one loop parked behind the other whenever the holder lost its CPU mid-step: JFR
     * counted 97 waits over 200 µs, up to 4.9 ms, in 4 minutes at 500 req/s.)
     */
    private final Map<String, AtomicReference<Local>> latest = new ConcurrentHashMap<>();

    private record Local(String value, long atMillis, List<String> before) {
        Local(String value, long atMillis) {
            this(value, atMillis, List.of());
        }

        /** A value this instance stepped from on the way to this one (a snapshot showing it predates this write). */
        boolean after(String shown) {
            return before.contains(shown);
        }

        /** The values a value stepped from {@code from} was stepped over: {@code from}, then {@code earlier}; 8 at most. */
        static List<String> over(String from, List<String> earlier) {
            List<String> out = new ArrayList<>(8);
            if (from != null) {
                out.add(from);
            }
            earlier.stream().limit(8 - out.size()).forEach(out::add);
            return List.copyOf(out);
        }
    }

    public LearnedModels(StateStore store, InstantSource clock, TtftPredictor.Prior prior) {
        this.store = store;
        this.clock = clock;
        this.prior = prior;
    }

    private String blob(RouteSnapshot s, String name) {
        AtomicReference<Local> ref = latest.get(s.routeId() + "|" + name);
        Local local = ref == null ? null : ref.get();
        return fresh(local) ? local.value() : s.blob(name).orElse(null);
    }

    private boolean fresh(Local local) {
        return younger(local, LOCAL_FRESH_MS);
    }

    private boolean younger(Local local, long ms) {
        return local != null && clock.millis() - local.atMillis() < ms;
    }

    @Override
    public TtftEstimate ttft(RouteSnapshot state, RequestFacts facts, boolean thinks) {
        String enc = blob(state, TTFT);
        TtftPredictor p = enc == null ? TtftPredictor.fresh(prior) : TtftPredictor.decode(enc, prior);
        TtftPredictor.Prediction pr = p.predict(facts.inputTokens());
        double think = 0;
        if (thinks) {
            String t = blob(state, THINK);
            // learned from dispatch by learnThinking (first reasoning to first visible chunk)
            think = ThinkingTime.decode(t).meanMs();
        }
        return new TtftEstimate(pr.meanMs() + think, pr.p90Ms() + think, p.samples() > 0,
                p.samples() > 0 ? p.uncertainty(facts.inputTokens()) : Double.POSITIVE_INFINITY, think);
    }

    @Override
    public double decodeSpeed(RouteSnapshot state) {
        String d = blob(state, DECODE);
        if (d != null) {
            return Ewma.decode(d, EMA_ALPHA).value();
        }
        return CapacityReport.decode(state.blob(CAPACITY).orElse(null)).map(CapacityReport::tokensPerSecond)
                .orElse(0.0);
    }

    @Override
    public boolean hasHeadroom(RouteSnapshot state) {
        return capacity(state).map(CapacityReport::hasHeadroom).orElse(true);
    }

    @Override
    public Optional<CapacityReport> capacity(RouteSnapshot state) {
        return CapacityReport.decode(state.blob(CAPACITY).orElse(null));
    }

    /** The route's tracker against {@code slo} (fresh when never measured or expired). */
    public SloTracker slo(RouteSnapshot state, GroupSettings.Slo slo) {
        return SloTracker.decode(blob(state, SLO), slo);
    }

    /**
     * Live measurements decide; while the route's decode speed has not been measured, a fresh capacity report's
     * {@code tokens_per_second} below the target counts as a miss (the operator's own measurement).
     */
    @Override
    public SloTracker.Status sloStatus(RouteSnapshot state, GroupSettings.Slo slo) {
        SloTracker t = slo(state, slo);
        if (t.decodeStatus() == SloTracker.Status.UNKNOWN) {
            double reported = capacity(state).map(CapacityReport::tokensPerSecond).orElse(0.0);
            if (reported > 0 && reported < slo.decodeTokensPerSecond()) {
                return SloTracker.Status.BELOW;
            }
        }
        return t.status();
    }

    /**
     * The route's judged accuracy ({@code llm_accuracy}): the decayed mean of its judge scores (1..100) and how many
     * there were; {@link Ewma#isMeasured()} false when it was never scored.
     */
    @Override
    public Ewma accuracyScores(RouteSnapshot state) {
        return Ewma.decode(blob(state, ACCURACY), ACCURACY_ALPHA);
    }

    /** The route's judged accuracy (the decayed mean score, 1..100); NaN when it was never scored. */
    public double accuracy(RouteSnapshot state) {
        Ewma e = accuracyScores(state);
        return e.isMeasured() ? e.value() : Double.NaN;
    }

    /**
     * Learns one judge score (1..100) of an answer the route gave. {@code base} should be a fresh snapshot of the
     * route: a score arrives long after the request's own snapshot was read (the judge answers after the client
     * got its answer).
     */
    public void learnAccuracy(RouteSnapshot base, int score) {
        List<StateStore.RouteBlob> writes = new ArrayList<>(1);
        update(base, ACCURACY, MODEL_TTL, enc -> (enc == null ? Ewma.fresh(ACCURACY_ALPHA)
                : Ewma.decode(enc, ACCURACY_ALPHA)).observe(score).encode(), writes);
        write(base, writes);
    }

    /** Trifrost's EMA latency (first-token latency for streams); NaN when never measured. */
    public double emaLatency(RouteSnapshot state) {
        String e = blob(state, EMA);
        if (e == null) {
            return Double.NaN;
        }
        Ewma ewma = Ewma.decode(e, EMA_ALPHA);
        return ewma.isMeasured() ? ewma.value() : Double.NaN;
    }

    /** Kong's peak EWMA for {@code tpot} or {@code e2e}, decayed to now; NaN when never measured. */
    public double peakEwma(RouteSnapshot state, boolean e2e) {
        String e = blob(state, e2e ? PEWMA_E2E : PEWMA_TPOT);
        if (e == null) {
            return Double.NaN;
        }
        PeakEwma p = PeakEwma.decode(e, PEWMA_TAU_MS);
        return p.isMeasured() ? p.value(clock.millis()) : Double.NaN;
    }

    // ---- learning ------------------------------------------------------------------------------------------

    /**
     * Learns one measured time to first token for a prompt of {@code promptTokens} (live traffic or a probe):
     * the TTFT line, Trifrost's EMA, the SLO tracker of the route's group targets {@code slo}, and the console's
     * sample points, in one store call.
     * {@code base} must be a snapshot of the route (its blobs are the starting point when this instance holds none).
     */
    public void learnFirstToken(RouteSnapshot base, int promptTokens, long ttftMs, GroupSettings.Slo slo) {
        learnFirst(base, promptTokens, ttftMs, slo, false);
    }

    /**
     * Learns one embeddings answer (live, or a probe's) to {@code inputTokens} of input (every input's): it writes no
     * tokens and arrives whole, so its latency is both its time to first token, learnt as {@link #learnFirstToken}
     * learns one (the line the auto strategy predicts a route's latency by, for the size of its input; Trifrost's EMA;
     * the first-token target; the console's samples), and its end-to-end time (Kong's end-to-end peak EWMA), in one
     * store call. An attempt that waited for one in vain is {@link #learnFirstTokenAtLeast} of a whole answer.
     */
    public void learnEmbeddings(RouteSnapshot base, int inputTokens, long latencyMs, GroupSettings.Slo slo) {
        learnFirst(base, inputTokens, latencyMs, slo, true);
    }

    /** A first token's time; with {@code wholeAnswer} (an embeddings answer) also the whole answer's. */
    private void learnFirst(RouteSnapshot base, int promptTokens, long ttftMs, GroupSettings.Slo slo,
                            boolean wholeAnswer) {
        List<StateStore.RouteBlob> writes = new ArrayList<>(5);
        update(base, TTFT, MODEL_TTL, enc -> (enc == null ? TtftPredictor.fresh(prior) : TtftPredictor.decode(enc, prior))
                .update(promptTokens, ttftMs).encode(), writes);
        update(base, EMA, MODEL_TTL, enc -> (enc == null ? Ewma.fresh(EMA_ALPHA) : Ewma.decode(enc, EMA_ALPHA))
                .observe(ttftMs).encode(), writes);
        update(base, SLO, SLO_TTL, enc -> SloTracker.decode(enc, slo).observeTtft(promptTokens, ttftMs).encode(),
                writes);
        update(base, TTFT_SAMPLES, MODEL_TTL, enc -> TtftSampleLog.append(enc, promptTokens, ttftMs,
                TtftSampleLog.KEEP), writes);
        if (wholeAnswer) {
            long now = clock.millis();
            update(base, PEWMA_E2E, MODEL_TTL, enc -> (enc == null ? PeakEwma.fresh(PEWMA_TAU_MS)
                    : PeakEwma.decode(enc, PEWMA_TAU_MS)).observe(ttftMs, now).encode(), writes);
        }
        write(base, writes);
    }

    /**
     * Learns that a stream's first token had not come after {@code waitedMs} for a prompt of {@code promptTokens}: an
     * attempt that lost the hedge race, or was abandoned, with no first token (a censored sample, a lower bound). The
     * TTFT line learns it only upwards ({@link TtftPredictor#updateAtLeast}). The SLO tracker counts it only when it
     * proves a miss (waited past the first-token target), never as a success, since the true time is unknown; below
     * the target it teaches the tracker nothing. Trifrost's EMA ({@code least_latency}) takes it as a sample when it is
     * above the EMA (only upwards, and less far than the late answer itself would have taken it). The console's sample
     * points are measured times and do not take it. Kong's end-to-end peak EWMA ({@code lowest_latency}) takes it as
     * the lower bound of the whole answer's time it also is ({@link PeakEwma#observeAtLeast}: when it is above the
     * route's value now, at once), unless {@code wholeAnswer} is false (a resume's continuation is no whole answer).
     * A client's hang-up is no such sample (the route was not slow, the client left): not called then.
     */
    public void learnFirstTokenAtLeast(RouteSnapshot base, int promptTokens, long waitedMs, GroupSettings.Slo slo,
                                       boolean wholeAnswer) {
        learnFirstTokenAtLeast(base, promptTokens, waitedMs, waitedMs, slo, wholeAnswer);
    }

    /**
     * As {@link #learnFirstTokenAtLeast(RouteSnapshot, int, long, GroupSettings.Slo, boolean)}, the TTFT line taking
     * at most {@code lineMs} of the wait (a weaker bound, still true): an attempt abandoned when its silence outlasted
     * a limit the line itself sets gives the line only the part that would not lengthen the next limit.
     */
    public void learnFirstTokenAtLeast(RouteSnapshot base, int promptTokens, long waitedMs, long lineMs,
                                       GroupSettings.Slo slo, boolean wholeAnswer) {
        List<StateStore.RouteBlob> writes = new ArrayList<>(4);
        long lineBound = Math.min(waitedMs, lineMs);
        // each step returns its input when the wait says nothing new (the line predicts that much already, the EMA
        // is above it), and update then writes nothing
        update(base, TTFT, MODEL_TTL, enc -> {
            TtftPredictor p = enc == null ? TtftPredictor.fresh(prior) : TtftPredictor.decode(enc, prior);
            TtftPredictor next = p.updateAtLeast(promptTokens, lineBound);
            return next == p ? enc : next.encode();
        }, writes);
        emaAtLeast(base, waitedMs, writes);
        if (waitedMs > slo.firstToken().toMillis() && promptTokens <= slo.standardPromptMaxTokens()) {
            // a proven miss: the first token came after the target, if at all
            update(base, SLO, SLO_TTL, enc -> SloTracker.decode(enc, slo).observeTtft(promptTokens, waitedMs).encode(),
                    writes);
        }
        if (wholeAnswer) {
            updateAtLeast(base, PEWMA_E2E, waitedMs, writes);
        }
        if (!writes.isEmpty()) {
            write(base, writes);
        }
    }

    /**
     * Learns that a non-streamed answer had not come after {@code waitedMs} (an attempt that lost the hedge race or was
     * abandoned): a lower bound of its end-to-end time, which Kong's end-to-end peak EWMA takes when it is above the
     * route's value now ({@link PeakEwma#observeAtLeast}), and Trifrost's EMA, the latency of a non-streamed answer,
     * when it is above the EMA. It is no time to first token.
     */
    public void learnEndToEndAtLeast(RouteSnapshot base, long waitedMs) {
        List<StateStore.RouteBlob> writes = new ArrayList<>(2);
        // Trifrost's EMA measures a non-streamed answer's whole latency ({@link #learnLatency}), which this bounds
        emaAtLeast(base, waitedMs, writes);
        updateAtLeast(base, PEWMA_E2E, waitedMs, writes);
        if (!writes.isEmpty()) {
            write(base, writes);
        }
    }

    /**
     * Learns a lower bound of the route's time per output token for Kong's {@code tpot} peak EWMA, taken when it is
     * above the route's value now ({@link PeakEwma#observeAtLeast}). The measure is an answer's latency over its
     * completion tokens ({@link #learnDecode}), so an attempt whose answer had not ended after a wait bounds it: had
     * it written the answer of {@code n} tokens it was racing for, that would have taken at least its wait over
     * {@code n}. That is the bound callers give: a hedge race's loser's wait over the winner's completion tokens, a
     * slow or unfinished probe's over the tokens it asked for at most.
     */
    public void learnTimePerTokenAtLeast(RouteSnapshot base, double msPerToken) {
        List<StateStore.RouteBlob> writes = new ArrayList<>(1);
        updateAtLeast(base, PEWMA_TPOT, msPerToken, writes);
        if (!writes.isEmpty()) {
            write(base, writes);
        }
    }

    /**
     * Trifrost's EMA ({@code least_latency}) takes a wait with no answer as a sample when it is above the EMA: the true
     * time was further above, so the EMA moves less than the late answer would have moved it had no hedge won.
     */
    private void emaAtLeast(RouteSnapshot base, long waitedMs, List<StateStore.RouteBlob> writes) {
        update(base, EMA, MODEL_TTL, enc -> {
            Ewma e = enc == null ? Ewma.fresh(EMA_ALPHA) : Ewma.decode(enc, EMA_ALPHA);
            return e.isMeasured() && waitedMs <= e.value() ? enc : e.observe(waitedMs).encode();
        }, writes);
    }

    private void updateAtLeast(RouteSnapshot base, String pewma, double boundMs, List<StateStore.RouteBlob> writes) {
        long now = clock.millis();
        update(base, pewma, MODEL_TTL, enc -> {
            PeakEwma p = enc == null ? PeakEwma.fresh(PEWMA_TAU_MS) : PeakEwma.decode(enc, PEWMA_TAU_MS);
            PeakEwma next = p.observeAtLeast(boundMs, now);
            return next == p ? enc : next.encode();
        }, writes);
    }

    /**
     * Learns one stream's rhythm for the stall watchdog ({@link InterTokenStats}): {@code observed} gaps in all,
     * of which {@code recentGaps} holds the last up to {@value #GAP_REPLAY} as a ring ({@code observed % length}
     * is the oldest once it wrapped). They are replayed onto this instance's newest copy, so concurrent streams on
     * one instance chain instead of overwriting each other.
     */
    public void learnGaps(RouteSnapshot base, long[] recentGaps, long observed) {
        if (observed <= 0) {
            return;
        }
        List<StateStore.RouteBlob> writes = new ArrayList<>(1);
        updateGaps(base, recentGaps, observed, writes);
        write(base, writes);
    }

    private void updateGaps(RouteSnapshot base, long[] recentGaps, long observed, List<StateStore.RouteBlob> writes) {
        if (observed <= 0 || recentGaps.length == 0) {
            return;
        }
        int n = (int) Math.min(observed, recentGaps.length);
        int start = observed > recentGaps.length ? (int) (observed % recentGaps.length) : 0;
        update(base, GAP, MODEL_TTL, enc -> {
            InterTokenStats before = InterTokenStats.decode(enc);
            InterTokenStats s = before;
            for (int i = 0; i < n; i++) {
                s = s.observe(recentGaps[(start + i) % recentGaps.length]);
            }
            // gaps beyond the replayed ones still count as observed
            return new InterTokenStats(s.meanMs(), s.devMs(), before.count() + observed).encode();
        }, writes);
    }

    /** Learns one reasoning stream's thinking time (first reasoning to first visible chunk, {@link ThinkingTime}). */
    public void learnThinking(RouteSnapshot base, long thinkMs) {
        List<StateStore.RouteBlob> writes = new ArrayList<>(1);
        update(base, THINK, MODEL_TTL, enc -> ThinkingTime.decode(enc).observe(thinkMs).encode(), writes);
        write(base, writes);
    }

    /** Learns the latency of a non-streamed answer: Trifrost's EMA only (it is no time to first token). */
    public void learnLatency(RouteSnapshot base, long latencyMs) {
        List<StateStore.RouteBlob> writes = new ArrayList<>(1);
        update(base, EMA, MODEL_TTL, enc -> (enc == null ? Ewma.fresh(EMA_ALPHA) : Ewma.decode(enc, EMA_ALPHA))
                .observe(latencyMs).encode(), writes);
        write(base, writes);
    }

    /**
     * Learns one generation ({@link Generation}) with no gaps to replay: decode speed counts the gaps between its tokens
     * ({@code tokens - 1}) over {@code decodeMs}; completions shorter than {@value #SUSTAINED_MIN_TOKENS} tokens are
     * not judged against the sustained-decode target.
     */
    public void learnDecode(RouteSnapshot base, Generation g, GroupSettings.Slo slo) {
        learnDecode(base, g, slo, new long[0], 0);
    }

    /**
     * Learns one generation and the stream's gaps ({@link #learnGaps}) in one store call. Decode speed and the SLO
     * tracker's sustained-decode judgment take its rhythm only: the gaps between its tokens, no wait for the first.
     * Kong's peak EWMA of time per output token takes its latency over its completion tokens, as Kong's
     * {@code llm_tpot_latency} is (its end-to-end latency over the completion tokens): the first token's wait
     * counts, so a route with a slow first token and fast decode is not taken for fast on short answers, and an
     * answer's sample is the quantity a hedge race's loser's and a slow probe's bounds bound
     * ({@link #learnTimePerTokenAtLeast}). A resume's part counts its own latency over its own tokens (what this route
     * was asked and wrote), an answer not finished nothing (its bound is the caller's). The end-to-end peak EWMA takes
     * whole answers' latencies only.
     */
    public void learnDecode(RouteSnapshot base, Generation g, GroupSettings.Slo slo, long[] recentGaps,
                            long gapsObserved) {
        long now = clock.millis();
        List<StateStore.RouteBlob> writes = new ArrayList<>(5);
        updateGaps(base, recentGaps, gapsObserved, writes);
        int tokens = g.tokens();
        long decodeMs = g.decodeMs();
        if (tokens > 1 && decodeMs > 0) {
            double tps = (tokens - 1) * 1000.0 / decodeMs;
            update(base, DECODE, MODEL_TTL, enc -> (enc == null ? Ewma.fresh(EMA_ALPHA) : Ewma.decode(enc, EMA_ALPHA))
                    .observe(tps).encode(), writes);
            if (tokens >= SUSTAINED_MIN_TOKENS) {
                update(base, SLO, SLO_TTL, enc -> SloTracker.decode(enc, slo).observeDecode(tps).encode(), writes);
            }
        }
        double tpot = g.msPerToken();
        if (!Double.isNaN(tpot)) {
            update(base, PEWMA_TPOT, MODEL_TTL, enc -> (enc == null ? PeakEwma.fresh(PEWMA_TAU_MS)
                    : PeakEwma.decode(enc, PEWMA_TAU_MS)).observe(tpot, now).encode(), writes);
        }
        if (g.wholeAnswer() && g.latencyMs() >= 0) {
            update(base, PEWMA_E2E, MODEL_TTL, enc -> (enc == null ? PeakEwma.fresh(PEWMA_TAU_MS)
                    : PeakEwma.decode(enc, PEWMA_TAU_MS)).observe(g.latencyMs(), now).encode(), writes);
        }
        if (!writes.isEmpty()) {
            write(base, writes);
        }
    }

    /**
     * Learns a failure counted against the route (a live attempt's, or a probe's) as a latency penalty on Kong's
     * {@code lowest_latency} measures: the slowest latency the route's group {@code timeouts} do not call a failure,
     * an answer of {@code read_timeout} for the end-to-end one and {@code stall_floor} a token for the time per output
     * token (latency over completion tokens): the slowest answer the timeouts tolerate, its first token just inside
     * {@code first_token_ceiling} and every gap just short of a stall, takes at least that a token at any length and
     * about that for a long answer, so the penalty is the least per-token cost of that answer, in the unit answers
     * are measured in (a fixed number, where {@code read_timeout} over a token count would depend on a count nothing
     * in a failure gives). A failure
     * carries no latency of its own, and a fast one measured as such would make a failing route look like the
     * quickest. Above the route's cost, a penalty replaces it at once
     * (the peak) and then decays with idle time like any sample, so the route is passed over whether or not a breaker
     * takes it out (under {@code max_fails: 0} nothing else would keep a route that fails fast from ranking first on
     * every request), and is tried again once its penalty decayed below the others' costs.
     */
    public void learnFailure(RouteSnapshot base, GroupSettings.Timeouts timeouts) {
        long tpotPenaltyMs = timeouts.stallFloor().toMillis();
        long e2ePenaltyMs = timeouts.read().toMillis();
        long now = clock.millis();
        List<StateStore.RouteBlob> writes = new ArrayList<>(2);
        update(base, PEWMA_TPOT, MODEL_TTL, enc -> (enc == null ? PeakEwma.fresh(PEWMA_TAU_MS)
                : PeakEwma.decode(enc, PEWMA_TAU_MS)).observe(tpotPenaltyMs, now).encode(), writes);
        update(base, PEWMA_E2E, MODEL_TTL, enc -> (enc == null ? PeakEwma.fresh(PEWMA_TAU_MS)
                : PeakEwma.decode(enc, PEWMA_TAU_MS)).observe(e2ePenaltyMs, now).encode(), writes);
        write(base, writes);
    }

    /**
     * Steps this instance's copy of one model and queues its new value for {@link #write}; a step that returns its
     * input itself changed nothing, and nothing is queued. The value is queued as learned from the one it was stepped
     * from ({@link StateStore.RouteBlob#learned}): where the store holds another by then (another instance learnt from
     * the same route meanwhile), the step is applied to that one instead, and this instance's copy takes the result.
     */
    private void update(RouteSnapshot base, String name, Duration ttl, UnaryOperator<String> step,
                        List<StateStore.RouteBlob> writes) {
        String key = base.routeId() + "|" + name;
        AtomicReference<Local> ref = latest.get(key); // a plain read: computeIfAbsent may lock the bin even on a hit
        if (ref == null) {
            ref = latest.computeIfAbsent(key, k -> new AtomicReference<>());
        }
        Local current;
        Local next;
        String steppedFrom;
        do { // another thread stepped it meanwhile: step its value again, so no observation is lost
            current = ref.get();
            String from = chainsFromOwn(current, base, name) ? current.value() : base.blob(name).orElse(null);
            String value = step.apply(from);
            if (value == from) { // the step changed nothing: nothing to keep or write
                return;
            }
            // chained from its own copy, it carries that copy's history on; from the snapshot, none of it
            next = new Local(value, clock.millis(), Local.over(from,
                    current != null && current.value().equals(from) ? current.before() : List.of()));
            steppedFrom = from;
        } while (!ref.compareAndSet(current, next));
        AtomicReference<Local> copy = ref;
        AtomicReference<Local> ours = new AtomicReference<>(next);
        UnaryOperator<String> again = held -> {
            String value = step.apply(held);
            Local mine = ours.get();
            Local merged = new Local(value, clock.millis(), Local.over(held, mine.before()));
            if (value != held && copy.compareAndSet(mine, merged)) { // unless this instance stepped it since
                ours.compareAndSet(mine, merged);
            }
            return value;
        };
        writes.add(new StateStore.RouteBlob(name, next.value(), ttl, steppedFrom, again));
    }

    /** Whether an update steps from this instance's own newest write rather than the snapshot's value. */
    private boolean chainsFromOwn(Local own, RouteSnapshot base, String name) {
        if (!younger(own, LOCAL_CHAIN_MS)) {
            return false;
        }
        if (younger(own, LOCAL_LANDED_MS)) {
            return true;
        }
        String shown = base.blob(name).orElse(null);
        // none shown: Redis lost it, or the write is late; one this instance stepped over: the snapshot was read before
        // its write (a stream's planning snapshot at its end, the prober's after its probe): one instance conflicted
        // with itself on most streams, each conflict a second Redis call and a dropped cache copy (found by hunt28)
        return shown == null || shown.equals(own.value()) || own.after(shown);
    }

    /** One store call for all the models one observation moved (one round trip on Redis instead of one each). */
    private void write(RouteSnapshot base, List<StateStore.RouteBlob> writes) {
        store.putRouteBlobs(base.routeId(), writes).subscribe().with(v -> { }, t -> { });
    }
}
