package dev.hedgerow.function.console;

import com.fasterxml.jackson.core.JsonProcessingException;
import dev.hedgerow.api.ApiError;
import dev.hedgerow.api.Json;
import dev.hedgerow.api.RequestException;
import dev.hedgerow.catalog.Catalog;
import dev.hedgerow.catalog.Keys;
import dev.hedgerow.catalog.Org;
import dev.hedgerow.function.HedgerowApp;
import dev.hedgerow.function.MetricsLabels;
import dev.hedgerow.function.gateway.GatewayRoutes;
import io.vertx.core.http.HttpServerRequest;
import jakarta.inject.Inject;
import jakarta.ws.rs.WebApplicationException;
import jakarta.ws.rs.container.ContainerRequestContext;
import jakarta.ws.rs.core.HttpHeaders;
import jakarta.ws.rs.core.Response;
import org.jboss.resteasy.reactive.server.ServerExceptionMapper;
import org.jboss.resteasy.reactive.server.ServerRequestFilter;

import java.util.Optional;

/**
 * The admin API's door: the admin key is checked before anything else about a request is judged (its path, method,
 * content type, body), so a caller without one learns only that; and every refusal the JAX-RS layer itself makes
 * (unknown path 404, method 405, content type 415, unreadable body 400) answers in the OpenAI envelope.
 */
public class AdminGuard {
    @Inject
    HedgerowApp app;

    /** The admin key's org; throws the 401/403/404 answer otherwise. */
    static Org org(HedgerowApp app, String authorization) {
        if (!app.functions().has("console")) {
            throw new RequestException(ApiError.notFound("The console function is not enabled here."));
        }
        String hash = Keys.sha256Hex(Keys.bearer(authorization)
                .orElseThrow(() -> new RequestException(ApiError.unauthorized())));
        Catalog catalog = app.core().catalog().current();
        return catalog.orgForAdminKeyHash(hash).orElseThrow(() -> catalog.orgForKeyHash(hash).isPresent()
                ? new RequestException(new ApiError(403, "permission_error", "admin_key_required",
                "This is a client key; the admin API needs an admin key of your organization.", null, null))
                : new RequestException(ApiError.unauthorized()));
    }

    /**
     * Before matching: null lets an admin request with a valid admin key go on; anything else is answered here. With a
     * valid key, OPTIONS is answered here too, 204 with the path's own {@code Allow} as on every Hedgerow path (Quarkus
     * REST answered 200 naming every method of the resource, whatever the path), or 404 for a path it does not serve.
     */
    @ServerRequestFilter(preMatching = true)
    public Response authenticate(ContainerRequestContext ctx) {
        String path = ctx.getUriInfo().getPath();
        if (!isAdmin(path)) {
            return null;
        }
        try {
            org(app, ctx.getHeaderString(HttpHeaders.AUTHORIZATION));
            // a compressed edit was read as it came (a gzip body "not valid UTF-8", a plain one labelled gzip saved)
            // where /admin/explain and the gateway refuse it: every admin body is refused so (found by hunt5)
            GatewayRoutes.refuseEncoded(ctx.getHeaderString(HttpHeaders.CONTENT_ENCODING),
                    ctx.getHeaderString("Transfer-Encoding"));
        } catch (RequestException e) {
            MetricsLabels.uriTemplate(MetricsLabels.REFUSED_ADMIN);
            return AdminResource.error(e.error(), null);
        }
        if (!ctx.getMethod().equals(jakarta.ws.rs.HttpMethod.OPTIONS)) {
            return null;
        }
        return AdminMethods.allow(path)
                .map(a -> {
                    MetricsLabels.uriTemplate(MetricsLabels.ADMIN_PREFLIGHT);
                    return Response.noContent().header(HttpHeaders.ALLOW, a + ", OPTIONS").build();
                })
                .orElseGet(() -> {
                    MetricsLabels.uriTemplate(MetricsLabels.REFUSED_ADMIN);
                    return AdminResource.error(ApiError.notFound(NO_ADMIN_PATH), null);
                });
    }

    private static final String NO_ADMIN_PATH = "No admin API path matches this request; see /admin/openapi.";

    /**
     * JAX-RS's own refusals. Quarkus REST also receives every request no Vert.x route took, so its 404 is the answer to
     * any unknown path (an SDK calling {@code /v1/audio/speech} gets an envelope it can read, not an HTML page).
     */
    @ServerExceptionMapper
    public Response refused(WebApplicationException e, HttpServerRequest request) {
        int status = e.getResponse().getStatus();
        boolean admin = isAdmin(request.path());
        if (admin) {
            // refused for its method, content type or Accept before Quarkus set the path's template
            MetricsLabels.uriTemplate(MetricsLabels.REFUSED_ADMIN);
        }
        // RFC 9110: a 405 names the methods the path answers, in Allow
        Optional<String> allow = status == 405 ? AdminMethods.allow(request.path()) : Optional.empty();
        ApiError err = switch (status) {
            case 404 -> ApiError.notFound(admin ? NO_ADMIN_PATH
                    : "No such endpoint: " + request.method() + " " + request.path()
                    + ". This instance serves " + app.functions().edges() + ".");
            case 405 -> ApiError.methodNotAllowed("Method " + request.method() + " is not allowed here; "
                    + allow.map(a -> request.path() + " answers " + a + "; ").orElse("")
                    + "see /admin/openapi.");
            case 415 -> ApiError.unsupportedMediaType("Send the body as application/json.");
            case 406 -> new ApiError(406, "invalid_request_error", "not_acceptable",
                    "The admin API answers application/json.", null, null);
            case 400 -> e.getCause() instanceof JsonProcessingException j ? invalidJson(j)
                    : ApiError.invalidRequest("The request could not be read.", null);
            default -> status >= 400 && status < 500
                    ? ApiError.invalidRequest("The request could not be read.", null).withStatus(status)
                    : ApiError.internal();
        };
        Response answer = AdminResource.error(err, null);
        return allow.map(a -> Response.fromResponse(answer).header(HttpHeaders.ALLOW, a + ", OPTIONS").build())
                .orElse(answer);
    }

    private static boolean isAdmin(String path) {
        return path != null && (path.equals("/admin") || path.startsWith("/admin/"));
    }

    @ServerExceptionMapper
    public Response unreadable(JsonProcessingException e) {
        return AdminResource.error(invalidJson(e), null);
    }

    private static ApiError invalidJson(JsonProcessingException e) {
        return ApiError.invalidRequest("invalid_json", "The request body is not valid JSON: " + Json.describe(e),
                null);
    }
}
