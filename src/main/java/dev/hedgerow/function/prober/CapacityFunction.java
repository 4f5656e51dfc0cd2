package dev.hedgerow.function.prober;

import dev.hedgerow.function.HedgerowApp;
import io.vertx.ext.web.Router;
import jakarta.enterprise.context.ApplicationScoped;
import jakarta.enterprise.event.Observes;
import jakarta.inject.Inject;

/** Mounts {@code POST /v1/capacity} when this process serves the prober function. */
@ApplicationScoped
public class CapacityFunction {
    @Inject
    HedgerowApp app;

    void mount(@Observes Router router) {
        if (app.functions().has("prober")) {
            new CapacityRoutes(app::core).mount(router);
        }
    }
}
