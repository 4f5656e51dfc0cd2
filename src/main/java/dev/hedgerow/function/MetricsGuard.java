package dev.hedgerow.function;

import dev.hedgerow.api.ApiError;
import io.quarkus.runtime.StartupEvent;
import io.vertx.ext.web.Router;
import io.vertx.ext.web.RoutingContext;
import jakarta.enterprise.context.ApplicationScoped;
import jakarta.enterprise.event.Observes;
import org.eclipse.microprofile.config.inject.ConfigProperty;

import java.util.Optional;

/**
 * Guards {@code /q/metrics}, which names every org, alias and route of the catalog with their traffic: on the
 * gateway's public URL it would show each tenant the others. With {@code hedgerow.metrics.token}
 * ({@code HEDGEROW_METRICS_TOKEN}) set, a scrape must send it as a bearer token (Prometheus' {@code authorization}
 * of a scrape config), else 401; unset, a process serving a catalog file answers 403 {@code metrics_token_not_set}
 * (closed unless the operator opens it: one artifact runs on Lambda, where the public URL is the only HTTP entry,
 * and on Knative, so no separate port can stand in). The bundled demo (no {@code HEDGEROW_CONFIG}) has one made-up
 * org and serves its metrics openly, as {@code scripts/run} prints. Runs after {@link ReadOnlyEdges}' method check
 * (order -99), so only GET and HEAD get here. Thread-safe.
 */
@ApplicationScoped
public class MetricsGuard {
    private static final System.Logger LOG = System.getLogger("dev.hedgerow");
    static final int ORDER = -98;

    @ConfigProperty(name = "hedgerow.metrics.token")
    Optional<String> token;

    @ConfigProperty(name = "hedgerow.config")
    Optional<String> configPath;

    void mount(@Observes Router router) {
        BearerToken expected = BearerToken.of(token);
        if (!expected.set() && HedgerowApp.demoCatalog(configPath)) {
            return;
        }
        router.route("/q/metrics*").order(ORDER).handler(ctx -> check(ctx, expected));
    }

    void onStart(@Observes StartupEvent ev) {
        if (!BearerToken.of(token).set() && !HedgerowApp.demoCatalog(configPath)) {
            LOG.log(System.Logger.Level.INFO, "/q/metrics is closed (403) until HEDGEROW_METRICS_TOKEN is set; "
                    + "Prometheus then sends it as a bearer token");
        }
    }

    private static void check(RoutingContext ctx, BearerToken expected) {
        if (!expected.set()) {
            JsonReplies.error(ctx.response(), new ApiError(403, "permission_error", "metrics_token_not_set",
                    "Metrics name every organization's aliases and routes, so this deployment serves them only with "
                            + "a token: set HEDGEROW_METRICS_TOKEN and scrape with 'Authorization: Bearer <token>'.",
                    null, null));
            return;
        }
        if (!expected.presentedBy(ctx.request().getHeader("authorization"))) {
            JsonReplies.error(ctx.response(), ApiError.unauthorized("the metrics token (HEDGEROW_METRICS_TOKEN)"));
            return;
        }
        ctx.next();
    }
}
