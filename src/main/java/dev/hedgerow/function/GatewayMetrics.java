package dev.hedgerow.function;

import dev.hedgerow.dispatch.AttemptRecord;
import dev.hedgerow.dispatch.DispatchObserver;
import dev.hedgerow.dispatch.DispatchRequest;
import dev.hedgerow.routing.Candidate;
import dev.hedgerow.state.UsageSample;
import io.micrometer.core.instrument.Counter;
import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.Timer;

import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;

/**
 * Prometheus metrics of dispatch, exposed at {@code /q/metrics}: requests by status, attempts by outcome, hedges
 * fired and refused by the budget, upstream tokens wasted on hedge losers, resumes by cause, malformed upstream
 * frames, streams whose head went out before their content (head_hold), and time to first token per route.
 * Thread-safe (Micrometer meters are).
 *
 * <p>The meters every request moves are kept by their tag values, so a request looks each up in one map rather
 * than having the registry build, sort and find its tags (the registry still holds them all, as before).
 */
public final class GatewayMetrics implements DispatchObserver {
    private final MeterRegistry registry;
    private final Counter wasted;
    /** By name and tags (name, tag, value, ...): every counter here, looked up in one map per increment. */
    private final Map<List<String>, Counter> counters = new ConcurrentHashMap<>();
    private final Map<String, Timer> ttft = new ConcurrentHashMap<>();

    public GatewayMetrics(MeterRegistry registry) {
        this.registry = registry;
        this.wasted = Counter.builder("hedgerow_hedge_wasted_tokens").description(
                "Prompt tokens sent upstream on hedge attempts that lost the race").register(registry);
    }

    @Override
    public void firstToken(Candidate route, int promptTokens, long ttftMs, boolean reasoningFirst) {
        ttft.computeIfAbsent(route.id(), id -> Timer.builder("hedgerow_ttft")
                        .description("Time to first content per route").tag("route", id)
                        .publishPercentileHistogram(false).register(registry))
                .record(Duration.ofMillis(ttftMs));
    }

    @Override
    public void finished(DispatchRequest request, int status, List<AttemptRecord> trail, UsageSample billed,
                         Candidate winner) {
        String org = request.org().id();
        counter("hedgerow_requests", "org", org, "alias", request.alias(),
                "status", Integer.toString(status)).increment();
        for (AttemptRecord a : trail) {
            counter("hedgerow_attempts", "org", org, "route", a.route(), "kind", a.kind(),
                    "outcome", a.outcome()).increment();
        }
        if (billed != null) {
            counter("hedgerow_billed_tokens", "org", org, "alias", request.alias())
                    .increment(billed.totalTokens());
        }
    }

    /** The counter {@code name} with these tags (name, value, ...), registered on first use. */
    private Counter counter(String name, String... tags) {
        String[] key = new String[tags.length + 1];
        key[0] = name;
        System.arraycopy(tags, 0, key, 1, tags.length);
        return counters.computeIfAbsent(List.of(key), k -> registry.counter(name, tags));
    }

    /**
     * Requests finished since this process started, whatever their status: the sum of the {@code hedgerow_requests}
     * counters (the JIT warm-up gate reads it every 30 s; nothing extra is counted per request).
     */
    public long finishedRequests() {
        double sum = 0;
        for (Counter c : registry.find("hedgerow_requests").counters()) {
            sum += c.count();
        }
        return (long) sum;
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
