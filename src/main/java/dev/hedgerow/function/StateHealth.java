package dev.hedgerow.function;

import dev.hedgerow.state.ResilientStateStore;
import io.micrometer.core.instrument.Gauge;
import io.micrometer.core.instrument.MeterRegistry;
import io.quarkus.runtime.StartupEvent;
import io.smallrye.health.api.AsyncHealthCheck;
import io.smallrye.mutiny.Uni;
import jakarta.enterprise.context.ApplicationScoped;
import jakarta.enterprise.event.Observes;
import jakarta.inject.Inject;
import org.eclipse.microprofile.health.HealthCheckResponse;
import org.eclipse.microprofile.health.HealthCheckResponseBuilder;
import org.eclipse.microprofile.health.Readiness;

/**
 * Readiness detail and the {@code hedgerow_state_degraded} gauge for the state store.
 *
 * <p>Readiness stays UP while Redis is down: the gateway keeps serving on local state, and every instance shares the
 * same Redis, so a DOWN here would pull the whole fleet out of rotation at once and turn a degradation into an
 * outage. The check says {@code state: degraded} instead (with the breaker state and the last failure), and the
 * gauge is 1, so alerts can fire on it. Each check also pings Redis through the store's guard, which lets the circuit
 * breaker try Redis again and rejoin shared state even when no traffic arrives. Thread-safe (stateless).
 */
@Readiness
@ApplicationScoped
public class StateHealth implements AsyncHealthCheck {
    @Inject
    HedgerowApp app;

    void registerGauge(@Observes StartupEvent ev, MeterRegistry registry) {
        Gauge.builder("hedgerow.state.degraded", this, StateHealth::degradedValue)
                .description("1 while shared state (Redis) is unreachable and this instance serves on local state")
                .strongReference(true)
                .register(registry);
    }

    double degradedValue() {
        return app.sharedState().map(r -> r.degraded() ? 1 : 0).orElse(0);
    }

    @Override
    public Uni<HealthCheckResponse> call() {
        HealthCheckResponseBuilder b = HealthCheckResponse.named("hedgerow-state").up()
                .withData("mode", app.stateMode());
        ResilientStateStore r = app.sharedState().orElse(null);
        if (r == null) {
            return Uni.createFrom().item(b.withData("state", "local").build());
        }
        return r.ping().map(answered -> {
            b.withData("state", r.degraded() ? "degraded" : "shared")
                    .withData("redis", answered ? "up" : "unreachable")
                    .withData("breaker", r.breakerState())
                    .withData("fallbacks", r.fallbacks())
                    .withData("pending_edits", r.pendingEdits())
                    .withData("pending_usage", r.pendingLedger())
                    .withData("pending_audit", r.pendingAudit())
                    .withData("dropped_audit", r.droppedAudit())
                    .withData("pending_releases", r.pendingReleases())
                    .withData("dropped_releases", r.droppedReleases())
                    .withData("lost_edits", r.lostEdits())
                    .withData("restored_flags", r.restoredFlags())
                    .withData("restored_orgs", r.restoredOrgs())
                    .withData("learned_conflicts", r.learnedConflicts())
                    .withData("learned_dropped", r.learnedDropped());
            if (r.degraded()) {
                b.withData("last_failure", r.lastFailure());
            }
            return b.build();
        });
    }
}
