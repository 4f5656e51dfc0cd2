package dev.hedgerow.function.console;

import dev.hedgerow.function.HedgerowApp;
import io.vertx.ext.web.Router;
import jakarta.enterprise.context.ApplicationScoped;
import jakarta.enterprise.event.Observes;
import jakarta.inject.Inject;

/**
 * The console function's dashboard: static files under {@code META-INF/resources/console/} (plain HTML, CSS and
 * JavaScript on the admin API, no build step). {@code /console} redirects to {@code /console/}; when this process
 * does not serve the console function the dashboard answers 404.
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
            router.route("/console/*").order(-100).handler(ctx -> ctx.response().setStatusCode(404).end());
        }
    }
}
