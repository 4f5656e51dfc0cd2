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

/**
 * Prometheus metrics of dispatch, exposed at {@code /q/metrics}: requests by status, attempts by outcome, hedges
 * fired and refused by the budget, upstream tokens wasted on hedge losers, resumes by cause, malformed upstream
 * frames, and time to first token per route. Thread-safe (Micrometer meters are).
 */
public final class GatewayMetrics implements DispatchObserver {
    private final MeterRegistry registry;
    private final Counter wasted;

    public GatewayMetrics(MeterRegistry registry) {
        this.registry = registry;
        this.wasted = Counter.builder("hedgerow_hedge_wasted_tokens").description(
                "Prompt tokens sent upstream on hedge attempts that lost the race").register(registry);
    }

    @Override
    public void firstToken(Candidate route, int promptTokens, long ttftMs, boolean reasoningFirst) {
        Timer.builder("hedgerow_ttft").description("Time to first content per route")
                .tag("route", route.id()).publishPercentileHistogram(false)
                .register(registry).record(Duration.ofMillis(ttftMs));
    }

    @Override
    public void finished(DispatchRequest request, int status, List<AttemptRecord> trail, UsageSample billed,
                         Candidate winner) {
        registry.counter("hedgerow_requests", "org", request.org().id(), "alias", request.alias(),
                "status", Integer.toString(status)).increment();
        for (AttemptRecord a : trail) {
            registry.counter("hedgerow_attempts", "org", request.org().id(), "route", a.route(), "kind", a.kind(),
                    "outcome", a.outcome()).increment();
        }
        if (billed != null) {
            registry.counter("hedgerow_billed_tokens", "org", request.org().id(), "alias", request.alias())
                    .increment(billed.totalTokens());
        }
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
        registry.counter("hedgerow_hedges", "org", request.org().id(), "result", fired ? "fired" : "budget_refused")
                .increment();
    }

    @Override
    public void wastedTokens(long tokens) {
        wasted.increment(tokens);
    }

    @Override
    public void resumed(DispatchRequest request, String reason) {
        registry.counter("hedgerow_resumes", "org", request.org().id(), "reason", reason).increment();
    }

    @Override
    public void malformedFrame(Candidate route) {
        registry.counter("hedgerow_malformed_frames", "route", route.id()).increment();
    }
}
