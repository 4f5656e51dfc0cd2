package dev.hedgerow.routing;

import dev.hedgerow.state.RouteSnapshot;
import dev.hedgerow.state.StateStore;

import java.time.Duration;
import java.time.InstantSource;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;

/**
 * The learned per-route models, kept as blobs in the shared store so every instance predicts alike: TTFT by prompt
 * size (recursive least squares, {@link TtftPredictor}), the EMA latency of Trifrost's {@code least_latency}, the
 * peak EWMAs of Kong's {@code lowest_latency} (tpot and e2e), decode speed, and the inter-chunk gap allowance of
 * the stall watchdog. Updates start from the newest model this instance holds (else the snapshot's), so one
 * instance's samples chain; across instances the last writer wins, which only drops samples: everything here is
 * rebuilt from traffic. Thread-safe.
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

    private static final Duration MODEL_TTL = Duration.ofDays(7);
    private static final double EMA_ALPHA = 0.3;
    private static final long PEWMA_TAU_MS = 10_000;

    private final StateStore store;
    private final InstantSource clock;
    private final TtftPredictor.Prior prior;
    private final Map<String, String> latest = new ConcurrentHashMap<>();

    public LearnedModels(StateStore store, InstantSource clock, TtftPredictor.Prior prior) {
        this.store = store;
        this.clock = clock;
        this.prior = prior;
    }

    private String blob(RouteSnapshot s, String name) {
        String local = latest.get(s.routeId() + "|" + name);
        return local != null ? local : s.blob(name).orElse(null);
    }

    @Override
    public TtftEstimate ttft(RouteSnapshot state, RequestFacts facts) {
        String enc = blob(state, TTFT);
        TtftPredictor p = enc == null ? TtftPredictor.fresh(prior) : TtftPredictor.decode(enc, prior);
        TtftPredictor.Prediction pr = p.predict(facts.promptTokens());
        double think = 0;
        if (facts.reasoning()) {
            String t = blob(state, THINK);
            // written by dispatch as a ThinkingTime (first reasoning to first visible chunk)
            think = ThinkingTime.decode(t).meanMs();
        }
        return new TtftEstimate(pr.meanMs() + think, pr.p90Ms() + think, p.samples() > 0);
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
        return CapacityReport.decode(state.blob(CAPACITY).orElse(null)).map(CapacityReport::hasHeadroom)
                .orElse(true);
    }

    /**
     * Whether the route currently meets Keln's targets: decode speed at or above the target and the predicted
     * first token on a standard-size prompt within the target. A route not yet measured counts as meeting them
     * (exploration measures it); a route below them returns as soon as its measurements recover.
     */
    public boolean meetsSlo(RouteSnapshot state, dev.hedgerow.catalog.GroupSettings.Slo slo) {
        String d = blob(state, DECODE);
        if (d != null) {
            Ewma decode = Ewma.decode(d, EMA_ALPHA);
            if (decode.isMeasured() && decode.value() < slo.decodeTokensPerSecond()) {
                return false;
            }
        }
        String t = blob(state, TTFT);
        if (t != null) {
            TtftPredictor p = TtftPredictor.decode(t, prior);
            int standard = Math.min(1000, slo.standardPromptMaxTokens());
            return p.samples() == 0 || p.predict(standard).meanMs() <= slo.firstToken().toMillis();
        }
        return true;
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

    public void learnFirstToken(RouteSnapshot base, int promptTokens, long ttftMs, boolean reasoningFirst) {
        update(base, TTFT, enc -> (enc == null ? TtftPredictor.fresh(prior) : TtftPredictor.decode(enc, prior))
                .update(promptTokens, ttftMs).encode());
        update(base, EMA, enc -> (enc == null ? Ewma.fresh(EMA_ALPHA) : Ewma.decode(enc, EMA_ALPHA))
                .observe(ttftMs).encode());
    }

    public void learnDecode(RouteSnapshot base, int tokens, long decodeMs, long e2eMs) {
        long now = clock.millis();
        if (tokens > 1 && decodeMs > 0) {
            double tps = (tokens - 1) * 1000.0 / decodeMs;
            double tpot = decodeMs / (double) (tokens - 1);
            update(base, DECODE, enc -> (enc == null ? Ewma.fresh(EMA_ALPHA) : Ewma.decode(enc, EMA_ALPHA))
                    .observe(tps).encode());
            update(base, PEWMA_TPOT, enc -> (enc == null ? PeakEwma.fresh(PEWMA_TAU_MS)
                    : PeakEwma.decode(enc, PEWMA_TAU_MS)).observe(tpot, now).encode());
        }
        update(base, PEWMA_E2E, enc -> (enc == null ? PeakEwma.fresh(PEWMA_TAU_MS)
                : PeakEwma.decode(enc, PEWMA_TAU_MS)).observe(e2eMs, now).encode());
    }

    private void update(RouteSnapshot base, String name, java.util.function.UnaryOperator<String> step) {
        String key = base.routeId() + "|" + name;
        String next = latest.compute(key, (k, local) -> step.apply(local != null ? local : base.blob(name)
                .orElse(null)));
        store.putRouteBlob(base.routeId(), name, next, MODEL_TTL).subscribe().with(v -> { }, t -> { });
    }

    /** Forgets this instance's local copies (tests, admin reset). */
    public void forgetLocal(String routeId) {
        latest.keySet().removeIf(k -> k.startsWith(routeId + "|"));
    }
}
