package dev.hedgerow.function.gateway;

import dev.hedgerow.function.HedgerowApp;
import io.vertx.ext.web.Router;
import jakarta.enterprise.context.ApplicationScoped;
import jakarta.enterprise.event.Observes;
import jakarta.inject.Inject;
import org.eclipse.microprofile.config.inject.ConfigProperty;

/** Mounts the gateway's routes when this process serves the gateway function. */
@ApplicationScoped
public class GatewayFunction {
    @Inject
    HedgerowApp app;

    /** The default of {@code hedgerow.gateway.body-limit}: 8 MiB. */
    public static final String DEFAULT_BODY_LIMIT = "8388608";

    @ConfigProperty(name = "hedgerow.gateway.body-limit", defaultValue = DEFAULT_BODY_LIMIT)
    long bodyLimit;

    @ConfigProperty(name = "hedgerow.gateway.body-timeout", defaultValue = GatewayRoutes.DEFAULT_BODY_TIMEOUT)
    java.time.Duration bodyTimeout;

    void mount(@Observes Router router) {
        if (app.functions().has("gateway")) {
            new GatewayRoutes(app::core, app::metrics, bodyLimit, bodyTimeout).mount(router);
        }
    }
}
