package dev.hedgerow.function;

import io.quarkus.vertx.http.runtime.RouteConstants;
import io.vertx.ext.web.Router;
import jakarta.enterprise.context.ApplicationScoped;
import jakarta.enterprise.event.Observes;
import jakarta.inject.Inject;

/**
 * Answers in the envelope every failure no edge's own failure handler took, before Quarkus' error page (a
 * {@code {"details":"Error id …"}} body, and an ERROR line per request) would: a request Vert.x refuses before any
 * route runs, such as HTTP/1.1 without a valid Host header, on the admin API, health, the dashboard or an unknown
 * path; or a fault of a framework handler (500, logged). Runs after every route (Quarkus' own error handler is last).
 */
@ApplicationScoped
public class LastResort {
    @Inject
    SizeGuard sizes;

    void mount(@Observes Router router) {
        router.route().order(RouteConstants.ROUTE_ORDER_AFTER_DEFAULT + 1000)
                .failureHandler(JsonReplies.failureHandler(sizes.limit(), "request"));
    }
}
