package dev.hedgerow.function.console;

import dev.hedgerow.api.ApiError;
import dev.hedgerow.function.HedgerowApp;
import dev.hedgerow.function.JsonReplies;
import io.vertx.ext.web.Router;
import jakarta.enterprise.context.ApplicationScoped;
import jakarta.enterprise.event.Observes;
import jakarta.inject.Inject;

/**
 * The console function's dashboard: static files under {@code META-INF/resources/console/} (plain HTML, CSS and
 * JavaScript on the admin API, no build step). {@code /console} redirects to {@code /console/}; when this process
 * does not serve the console function the dashboard and {@code /admin/openapi} answer 404 in the envelope.
 */
@ApplicationScoped
public class ConsoleFunction {
    @Inject
    HedgerowApp app;

    void mount(@Observes Router router) {
        // a Vert.x path also matches its trailing-slash form: redirect only the bare one
        router.get("/console").handler(ctx -> {
            if (ctx.request().path().equals("/console")) {
                ctx.response().setStatusCode(301).putHeader("location", "/console/").end();
            } else {
                ctx.next();
            }
        });
        if (!app.functions().has("console")) {
            // the dashboard and the admin API's OpenAPI document (served by SmallRye, not the guarded resource)
            for (String path : new String[]{"/console/*", "/admin/openapi*"}) {
                router.route(path).order(-100).handler(ctx -> JsonReplies.error(ctx.response(),
                        ApiError.notFound("The console function is not enabled here.")));
            }
        }
    }
}
