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

import java.util.Map;

/**
 * The console function's dashboard: static files under {@code META-INF/resources/console/} (plain HTML, CSS and
 * JavaScript on the admin API, no build step). {@code /console} redirects to {@code /console/}; when this process
 * does not serve the console function the dashboard and {@code /admin/openapi} answer 404 in the envelope.
 * The dashboard's files go out with {@link #DASHBOARD_HEADERS}.
 */
@ApplicationScoped
public class ConsoleFunction {
    /**
     * Headers on every dashboard file. {@code no-cache}: the browser asks again each load (a 304 when the file is
     * unchanged), so a new release's dashboard is seen at once; the static handler's default was
     * {@code public, immutable, max-age=86400}, a day of the old dashboard against the new admin API after an
     * upgrade. The page holds an admin key, so: a policy that runs only its own script and style and talks only to
     * its own origin (it has no inline script, style or handler), no framing (clickjacking the Drain and Reset
     * buttons), no MIME sniffing, and no referrer.
     */
    static final Map<String, String> DASHBOARD_HEADERS = Map.of(
            "cache-control", "no-cache",
            "content-security-policy", "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
                    + "connect-src 'self'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'",
            "x-frame-options", "DENY",
            "x-content-type-options", "nosniff",
            "referrer-policy", "no-referrer");

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
        boolean console = app.functions().has("console");
        // the static handler decodes %2F, which the routes below do not match: /console%2Findex.html was the dashboard
        // without its headers, and served where the console is off (found by hunt21); only /console/ serves it
        router.route().order(-101).handler(ctx -> {
            String raw = ctx.request().path();
            if (raw != null && raw.indexOf('%') >= 0 && !raw.startsWith("/console/")
                    && percentDecoded(raw).startsWith("/console/")) {
                JsonReplies.error(ctx.response(), ApiError.notFound(console
                        ? "No such endpoint: the console is served at /console/."
                        : "The console function is not enabled here."));
                return;
            }
            ctx.next();
        });
        if (console) {
            // set as the head goes out, over what the static handler put there
            router.route("/console/*").order(-98).handler(ctx -> {
                ctx.addHeadersEndHandler(v -> DASHBOARD_HEADERS.forEach(ctx.response().headers()::set));
                ctx.next();
            });
        } else {
            // the dashboard and the admin API's OpenAPI document (served by SmallRye, not the guarded resource)
            for (String path : new String[]{"/console/*", "/admin/openapi*"}) {
                router.route(path).order(-100).handler(ctx -> JsonReplies.error(ctx.response(),
                        ApiError.notFound("The console function is not enabled here.")));
            }
        }
    }

    /** {@code path} with every {@code %XX} escape decoded as one character (an invalid one left as it is). */
    static String percentDecoded(String path) {
        StringBuilder out = new StringBuilder(path.length());
        for (int i = 0; i < path.length(); i++) {
            char c = path.charAt(i);
            if (c == '%' && i + 2 < path.length() && Character.digit(path.charAt(i + 1), 16) >= 0
                    && Character.digit(path.charAt(i + 2), 16) >= 0) {
                out.append((char) Integer.parseInt(path.substring(i + 1, i + 3), 16));
                i += 2;
            } else {
                out.append(c);
            }
        }
        return out.toString();
    }
}
