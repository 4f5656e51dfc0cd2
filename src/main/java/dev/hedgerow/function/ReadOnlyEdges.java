package dev.hedgerow.function;

import dev.hedgerow.api.ApiError;
import io.vertx.core.http.HttpMethod;
import io.vertx.ext.web.Router;
import jakarta.enterprise.context.ApplicationScoped;
import jakarta.enterprise.event.Observes;

/**
 * The read-only documents the framework serves (health, metrics, the admin API's OpenAPI document, the dashboard's
 * static files) answer any other method than GET and HEAD with a 405 in the envelope, as every Hedgerow path does:
 * SmallRye served them to POST, PUT and DELETE alike, and the dashboard's files answered those with a 404. OPTIONS
 * gets {@link JsonReplies#options}. Runs after the console's "not enabled here" answer to {@code /admin/openapi} and
 * {@code /console/} (order -100).
 */
@ApplicationScoped
public class ReadOnlyEdges {
    static final String[] PATHS = {"/q/health*", "/q/metrics*", "/admin/openapi*", "/console/*"};
    static final String ALLOW = "GET, HEAD, OPTIONS";

    void mount(@Observes Router router) {
        for (String path : PATHS) {
            router.route(path).order(-99).handler(ctx -> {
                HttpMethod m = ctx.request().method();
                if (m.equals(HttpMethod.GET) || m.equals(HttpMethod.HEAD)) {
                    ctx.next();
                    return;
                }
                // answered here, before any match: labelled with the route, not the path as sent
                MetricsLabels.uriTemplate(path);
                if (m.equals(HttpMethod.OPTIONS)) {
                    JsonReplies.options(ctx.response(), ALLOW);
                    return;
                }
                ctx.response().putHeader("allow", ALLOW);
                JsonReplies.error(ctx.response(), ApiError.methodNotAllowed("Method " + m + " is not allowed here; "
                        + ctx.request().path() + " answers GET."));
            });
        }
    }
}
