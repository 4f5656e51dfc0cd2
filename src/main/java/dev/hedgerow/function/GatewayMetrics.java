package dev.hedgerow.function;

import dev.hedgerow.dispatch.AttemptRecord;
import dev.hedgerow.dispatch.DispatchObserver;
import dev.hedgerow.dispatch.DispatchRequest;
import dev.hedgerow.routing.AccuracyJudge;
import dev.hedgerow.routing.Candidate;
import dev.hedgerow.state.UsageSample;
import io.micrometer.core.instrument.Counter;
import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.Timer;

import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.LongAdder;
import java.util.stream.Stream;

/**
 * Prometheus metrics of dispatch, exposed at {@code /q/metrics}: requests by status, attempts by outcome, hedges
 * fired and refused by the budget, upstream tokens wasted on hedge losers, resumes by cause, malformed upstream
 * frames, streams whose head went out before their content (head_hold), judged answers by result ({@code llm_accuracy})
 * and time to first token per route.
 * Thread-safe (Micrometer meters are).
 *
 * <p>{@code hedgerow_requests_total{org,alias,status}} counts every request the gateway answers on its paths once:
 * a dispatched request here when it finishes ({@link #finished}, or {@link #refused} when dispatch refuses it before
 * any upstream call), every other one (a refusal before dispatch: 401, 404, 400, 503 no_healthy_provider, a 413...)
 * by the gateway's edge through {@link #answered}. Its labels take only the catalog's values and {@value #NONE}, so a
 * client cannot create series: an org or alias the gateway could not tell (no valid key, refused before the key was
 * read, a name that is not one of the caller's aliases, the model list) is {@value #NONE}, which no org id or alias
 * can be (they begin with a letter or digit).
 *
 * <p>The meters every request moves are kept by their tag values, so a request looks each up in one map rather
 * than having the registry build, sort and find its tags (the registry still holds them all, as before).
 */
public final class GatewayMetrics implements DispatchObserver {
    /** The org or alias label of a request whose org or alias the gateway could not tell. */
    public static final String NONE = "_none";

    private final MeterRegistry registry;
    private final Counter wasted;
    /** Requests dispatch finished (the JIT warm-up gate's count; refusals before dispatch are not in it). */
    private final LongAdder dispatched = new LongAdder();
    /** By name and tags (name, tag, value, ...): every counter here, looked up in one map per increment. */
    private final Map<List<String>, Counter> counters = new ConcurrentHashMap<>();
    private final Map<String, Timer> ttft = new ConcurrentHashMap<>();

    public GatewayMetrics(MeterRegistry registry) {
        this.registry = registry;
        this.wasted = Counter.builder("hedgerow_hedge_wasted_tokens").description(
                "Prompt tokens sent upstream on hedge attempts that lost the race").register(registry);
    }

    /**
     * The bucket bounds of {@code hedgerow_ttft_seconds} (with {@code +Inf}: 18 bucket series per route, beside sum,
     * count and max): times to first token run from ~50 ms (a warm cache, a short prompt) to a minute (a long prompt's
     * prefill, a reasoning model thinking first), so the bounds step by at most 2x across that range, and a quantile
     * Prometheus interpolates ({@code histogram_quantile}) is off by less than its bucket's width. Micrometer's own
     * percentile histogram would publish 66 buckets per route for its default 1 ms..30 s, and none above 30 s.
     */
    static final Duration[] TTFT_BUCKETS = Stream.of(50, 100, 200, 300, 500, 750, 1_000, 1_500, 2_000, 3_000,
            5_000, 7_500, 10_000, 15_000, 20_000, 30_000, 60_000).map(Duration::ofMillis).toArray(Duration[]::new);

    @Override
    public void firstToken(Candidate route, int promptTokens, long ttftMs, boolean reasoningFirst) {
        ttft.computeIfAbsent(route.id(), id -> Timer.builder("hedgerow_ttft")
                        .description("Time to first content per route").tag("route", id)
                        .serviceLevelObjectives(TTFT_BUCKETS).register(registry))
                .record(Duration.ofMillis(ttftMs));
    }

    @Override
    public void finished(DispatchRequest request, int status, List<AttemptRecord> trail, UsageSample billed,
                         Candidate winner) {
        String org = request.org().id();
        answered(org, request.alias(), status);
        dispatched.increment();
        for (AttemptRecord a : trail) {
            counter("hedgerow_attempts", "org", org, "route", a.route(), "kind", a.kind(),
                    "outcome", a.outcome()).increment();
        }
        if (billed != null) {
            counter("hedgerow_billed_tokens", "org", org, "alias", request.alias())
                    .increment(billed.totalTokens());
        }
    }

    @Override
    public void refused(DispatchRequest request, int status, String reason, String message) {
        answered(request.org().id(), request.alias(), status);
    }

    /**
     * A request the gateway answered without dispatching it (a refusal), with its status; {@code org} and
     * {@code alias} are catalog values or {@link #NONE}, never a client's text.
     */
    public void answered(String org, String alias, int status) {
        counter("hedgerow_requests", "org", org, "alias", alias, "status", Integer.toString(status)).increment();
    }

    /** The counter {@code name} with these tags (name, value, ...), registered on first use. */
    private Counter counter(String name, String... tags) {
        String[] key = new String[tags.length + 1];
        key[0] = name;
        System.arraycopy(tags, 0, key, 1, tags.length);
        return counters.computeIfAbsent(List.of(key), k -> registry.counter(name, tags));
    }

    /**
     * Requests dispatch finished since this process started, whatever their status (the JIT warm-up gate reads it
     * every 30 s): the work that warms the JIT up, which refusals before dispatch barely do.
     */
    public long finishedRequests() {
        return dispatched.sum();
    }

    /**
     * {@code hedgerow_judge_total{org,result}}: answers of {@code llm_accuracy} groups sampled for judging, by what
     * became of each ({@code scored}, {@code unparsable}, {@code failed}, {@code skipped}).
     */
    @Override
    public void judged(String orgId, AccuracyJudge.Outcome outcome) {
        counter("hedgerow_judge", "org", orgId, "result", outcome.wireName()).increment();
    }

    @Override
    public void hedge(DispatchRequest request, boolean fired) {
        counter("hedgerow_hedges", "org", request.org().id(), "result", fired ? "fired" : "budget_refused")
                .increment();
    }

    @Override
    public void wastedTokens(long tokens) {
        wasted.increment(tokens);
    }

    @Override
    public void headBeforeContent(DispatchRequest request) {
        counter("hedgerow_early_heads", "org", request.org().id(), "alias", request.alias()).increment();
    }

    @Override
    public void resumed(DispatchRequest request, String reason) {
        counter("hedgerow_resumes", "org", request.org().id(), "reason", reason).increment();
    }

    @Override
    public void malformedFrame(Candidate route) {
        counter("hedgerow_malformed_frames", "route", route.id()).increment();
    }
}
