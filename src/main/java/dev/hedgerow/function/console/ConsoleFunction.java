package dev.hedgerow.function.console;

import dev.hedgerow.api.ApiError;
import dev.hedgerow.api.RequestException;
import dev.hedgerow.function.HedgerowApp;
import dev.hedgerow.function.JsonReplies;
import dev.hedgerow.function.SizeGuard;
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

    @Inject
    SizeGuard sizes;

    void mount(@Observes Router router) {
        // the admin API judges the key before anything else, a declared body over the server's limit or a URI over
        // SizeGuard's included
        long limit = sizes.limit();
        router.route("/admin/*").order(JsonReplies.EDGE_SIZE_GUARD_ORDER).handler(ctx -> {
            boolean longUri = SizeGuard.uriTooLong(ctx.request());
            if (!longUri && !JsonReplies.declaresMoreThan(ctx.request(), limit)) {
                ctx.next();
                return;
            }
            ApiError refusal = longUri ? ApiError.uriTooLong(SizeGuard.MAX_URI_BYTES) : ApiError.tooLarge(limit);
            if (!ctx.request().path().startsWith("/admin/openapi")) { // public, like the messages that point to it
                try {
                    AdminGuard.org(app, ctx.request().getHeader("authorization"));
                } catch (RequestException e) {
                    refusal = e.error();
                }
            }
            JsonReplies.refuseUnread(ctx, refusal);
        });
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
