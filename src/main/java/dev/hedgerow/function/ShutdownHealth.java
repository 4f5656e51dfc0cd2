package dev.hedgerow.function;

import jakarta.enterprise.context.ApplicationScoped;
import jakarta.inject.Inject;
import org.eclipse.microprofile.health.HealthCheck;
import org.eclipse.microprofile.health.HealthCheckResponse;
import org.eclipse.microprofile.health.Readiness;

/**
 * Readiness check {@code hedgerow-shutdown}: UP while the instance takes requests, DOWN once it is shutting down
 * ({@link ShutdownGate}), with the requests still in flight. Thread-safe (stateless).
 */
@Readiness
@ApplicationScoped
public class ShutdownHealth implements HealthCheck {
    @Inject
    ShutdownGate gate;

    @Override
    public HealthCheckResponse call() {
        return HealthCheckResponse.named("hedgerow-shutdown").status(!gate.closed())
                .withData("shutting_down", gate.closed())
                .withData("requests_in_flight", gate.inFlight())
                .build();
    }
}
