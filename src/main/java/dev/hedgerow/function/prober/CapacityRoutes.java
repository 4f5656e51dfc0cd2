package dev.hedgerow.function.prober;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.JsonNodeFactory;
import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.hedgerow.api.ApiError;
import dev.hedgerow.api.RetryAdvice;
import dev.hedgerow.api.RequestJson;
import dev.hedgerow.function.gateway.GatewayRoutes;
import dev.hedgerow.function.JsonReplies;
import dev.hedgerow.catalog.Keys;
import dev.hedgerow.routing.CapacityIntake;
import dev.hedgerow.runtime.Hedgerow;
import io.vertx.core.buffer.Buffer;
import io.vertx.core.http.HttpMethod;
import io.vertx.ext.web.Router;
import io.vertx.ext.web.RoutingContext;
import io.vertx.ext.web.handler.BodyHandler;

import java.util.function.Supplier;

/**
 * The prober function's {@code POST /v1/capacity}: a serving operator reports a route's health, queue depth, memory
 * pressure and measured speed (see {@link CapacityIntake} for the body and the rules). Thin: read the bearer key
 * and the body, call the core, write. Answers 200 with the route ids the report was stored for, 400 for a bad
 * body, 401 for an unknown capacity key, 403 for a route the key's provider does not serve. Thread-safe.
 */
public final class CapacityRoutes {
    private static final long BODY_LIMIT = 16 * 1024;
    private final Supplier<Hedgerow> core;

    public CapacityRoutes(Supplier<Hedgerow> core) {
        this.core = core;
    }

    public void mount(Router router) {
        JsonReplies.refuseDeclaredOversize(router, JsonReplies.EDGE_SIZE_GUARD_ORDER, BODY_LIMIT, "/v1/capacity");
        router.post("/v1/capacity").handler(BodyHandler.create(false).setBodyLimit(BODY_LIMIT))
                .handler(this::report).failureHandler(JsonReplies.failureHandler(BODY_LIMIT, "report"));
        JsonReplies.methodNotAllowed(router, HttpMethod.POST, "/v1/capacity");
    }

    private void report(RoutingContext ctx) {
        Hedgerow h = core.get();
        String key = Keys.bearer(ctx.request().getHeader("authorization")).orElse(null);
        // read as strictly as every edge reads a body (hunt20: trailing text, bad UTF-8, a route named twice, a
        // compressed body taken as plain were all "not a JSON object" or worse, accepted)
        Supplier<JsonNode> body = () -> {
            GatewayRoutes.refuseEncoded(ctx.request().getHeader("content-encoding"),
                    ctx.request().getHeader("transfer-encoding"));
            GatewayRoutes.refuseMultipart(ctx.request().getHeader("content-type"));
            Buffer b = ctx.body().buffer();
            return b == null || b.length() == 0 ? null : RequestJson.parseEdit(b.getBytes());
        };
        new CapacityIntake(h.store(), () -> h.catalog().current()).submit(key, body).subscribe().with(
                outcome -> {
                    if (outcome instanceof CapacityIntake.Outcome.Refused r) {
                        JsonReplies.error(ctx.response(), r.error());
                        return;
                    }
                    CapacityIntake.Outcome.Accepted a = (CapacityIntake.Outcome.Accepted) outcome;
                    ObjectNode out = JsonNodeFactory.instance.objectNode();
                    a.routes().forEach(out.putArray("routes")::add);
                    out.set("report", a.report().toNode());
                    out.put("has_headroom", a.report().hasHeadroom());
                    out.put("ttl_seconds", a.ttl().toSeconds());
                    JsonReplies.json(ctx.response(), 200, out);
                },
                t -> JsonReplies.error(ctx.response(), new ApiError(503, "server_error", "state_unavailable",
                        "The report could not be stored; retry shortly.", null, RetryAdvice.after(1000))));
    }

}
