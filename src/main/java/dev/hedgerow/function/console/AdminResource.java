package dev.hedgerow.function.console;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.hedgerow.admin.AdminService;
import dev.hedgerow.admin.InvalidEdit;
import dev.hedgerow.api.ApiError;
import dev.hedgerow.audit.AuditLog;
import dev.hedgerow.api.RequestException;
import dev.hedgerow.api.RequestJson;
import dev.hedgerow.catalog.ApiKey;
import dev.hedgerow.catalog.CatalogError;
import dev.hedgerow.catalog.CatalogService;
import dev.hedgerow.catalog.Keys;
import dev.hedgerow.catalog.Org;
import dev.hedgerow.function.HedgerowApp;
import dev.hedgerow.function.gateway.GatewayFunction;
import dev.hedgerow.function.gateway.GatewayRoutes;
import io.smallrye.common.annotation.Blocking;
import io.smallrye.mutiny.Uni;
import jakarta.inject.Inject;
import jakarta.ws.rs.Consumes;
import jakarta.ws.rs.DefaultValue;
import jakarta.ws.rs.GET;
import jakarta.ws.rs.POST;
import jakarta.ws.rs.PUT;
import jakarta.ws.rs.Path;
import jakarta.ws.rs.PathParam;
import jakarta.ws.rs.Produces;
import jakarta.ws.rs.QueryParam;
import jakarta.ws.rs.core.HttpHeaders;
import jakarta.ws.rs.core.MediaType;
import jakarta.ws.rs.core.Response;
import jakarta.ws.rs.core.UriInfo;
import org.eclipse.microprofile.config.inject.ConfigProperty;
import org.eclipse.microprofile.openapi.annotations.Operation;
import org.eclipse.microprofile.openapi.annotations.enums.ParameterIn;
import org.eclipse.microprofile.openapi.annotations.enums.SchemaType;
import org.eclipse.microprofile.openapi.annotations.media.Content;
import org.eclipse.microprofile.openapi.annotations.media.Schema;
import org.eclipse.microprofile.openapi.annotations.parameters.Parameter;
import org.eclipse.microprofile.openapi.annotations.parameters.RequestBody;
import org.eclipse.microprofile.openapi.annotations.tags.Tag;
import org.jboss.resteasy.reactive.server.ServerExceptionMapper;

import java.time.LocalDate;
import java.time.format.DateTimeParseException;
import java.util.HashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Set;

/**
 * The console function's admin API under {@code /admin}: org-scoped by the admin key in
 * {@code Authorization: Bearer <admin key>} (another org's data is never visible; a client key is refused with
 * 403), errors in the OpenAI envelope. Thin: authenticate, call {@link AdminService}, answer JSON. Answers 404 when
 * this process does not serve the console function.
 */
@Path("/admin")
@Produces(MediaType.APPLICATION_JSON)
@Tag(name = "admin")
public class AdminResource {
    @Inject
    HedgerowApp app;

    /** The gateway's body limit: explain refuses a larger request as the gateway would. */
    @ConfigProperty(name = "hedgerow.gateway.body-limit", defaultValue = GatewayFunction.DEFAULT_BODY_LIMIT)
    long gatewayBodyLimit;

    private volatile AdminService service;

    private AdminService service() {
        AdminService s = service;
        if (s == null) {
            s = new AdminService(app.core());
            service = s;
        }
        return s;
    }

    /** The admin key's org (checked once already by {@link AdminGuard} before the request was matched). */
    private Org org(HttpHeaders headers) {
        return AdminGuard.org(app, headers.getHeaderString(HttpHeaders.AUTHORIZATION));
    }

    @GET
    @Path("/whoami")
    @Operation(summary = "The organization of the admin key: its id, aliases and client key names")
    public ObjectNode whoami(HttpHeaders headers) {
        Org org = org(headers);
        ObjectNode n = com.fasterxml.jackson.databind.node.JsonNodeFactory.instance.objectNode();
        n.put("org", org.id());
        ArrayNode aliases = n.putArray("aliases");
        org.aliases().forEach(aliases::add);
        ArrayNode keys = n.putArray("keys"); // names only, what usage is billed to (the secrets exist only as hashes)
        org.keys().forEach(k -> keys.add(k.name()));
        return n;
    }

    @GET
    @Path("/groups")
    @Operation(summary = "Alias groups with their strategy and members")
    public ObjectNode groups(HttpHeaders headers) {
        return service().groups(org(headers));
    }

    @GET
    @Path("/groups/{alias: .+}")
    @Operation(summary = "One alias group; its ETag is the group's revision", description = "settings has every"
            + " setting of the group named and written as hedgerow.yaml writes it under groups.<alias> (strategy,"
            + " resume_mid_stream, hedging, head_hold, breaker {max_fails, fail_timeout}, retries, max_resumes,"
            + " failover_criteria, max_retry_after_wait, connect_timeout, read_timeout, write_timeout,"
            + " first_token_floor, first_token_ceiling, stall_floor, request_timeout, hash_on_header, latency_strategy,"
            + " tokens_count_strategy, usage_window, embeddings_route, distance_metric, threshold, slow_bar, judge"
            + " {route, prompt, sampling_rate, message_countback, ignore_system_prompts, ignore_assistant_prompts,"
            + " ignore_tool_prompts, max_tokens, timeout} (only when tokens_count_strategy is llm_accuracy), slo"
            + " {decode_tokens_per_second, first_token, standard_prompt_max_tokens}); it is a valid PUT body as is."
            + " The revision covers the settings and the members' weights and priorities.")
    public Response group(HttpHeaders headers, @PathParam("alias") String alias) {
        return withRevision(service().group(org(headers), alias));
    }

    @PUT
    @Path("/groups/{alias: .+}")
    @Consumes(MediaType.APPLICATION_JSON)
    @Operation(summary = "Edit a group's settings and its members' weights and priorities (validated). With "
            + "If-Match: \"<revision>\" the edit is refused with 412 group_changed when the group changed since",
            description = "Body: any setting of the group, named and written as in hedgerow.yaml under"
            + " groups.<alias> (the settings of GET /admin/groups/{alias}; also the file's other names: algorithm,"
            + " max_attempts, Kong's nested balancer {...}), and members [{route, weight, priority}]. A field left"
            + " out keeps its value, a nested mapping (breaker, slo, judge) is merged field by field, and null gives a"
            + " setting its default, as a key missing from the file does. The catalog file's loader judges the"
            + " result: a refusal is 400 with every problem in error.errors[] ({path, param, route, message}) and"
            + " error.param naming the first one's field (breaker.max_fails); a field the file does not know is"
            + " unknown_field, another refusal invalid_catalog. The edit reaches every instance within"
            + " hedgerow.catalog.poll and survives restarts; the balancer keeps its position and health memory.")
    @RequestBody(content = @Content(mediaType = MediaType.APPLICATION_JSON, schema = @Schema(type = SchemaType.OBJECT)))
    @Parameter(name = "If-Match", in = ParameterIn.HEADER, description = "The group revision(s) the edit is based on",
            schema = @Schema(type = SchemaType.STRING))
    public Uni<Response> editGroup(HttpHeaders headers, @PathParam("alias") String alias, byte[] body) {
        Org org = org(headers);
        return service().editGroup(org, alias, json(body), ifMatch(headers), adminKeyName(org, headers))
                .map(AdminResource::withRevision);
    }

    /** A group's answer with its revision as the (strong) ETag, the value an edit's If-Match names. */
    private static Response withRevision(ObjectNode group) {
        return Response.ok(group, MediaType.APPLICATION_JSON)
                .header(HttpHeaders.ETAG, "\"" + group.path("revision").asText() + "\"").build();
    }

    @POST
    @Path("/members/pin")
    @Consumes(MediaType.APPLICATION_JSON)
    @Operation(summary = "Pin a member: only it takes its alias's traffic. Body {\"route\": id}")
    @RequestBody(content = @Content(mediaType = MediaType.APPLICATION_JSON, schema = @Schema(type = SchemaType.OBJECT)))
    public Uni<ObjectNode> pin(HttpHeaders headers, byte[] bytes) {
        Org org = org(headers);
        return service().pin(org, text(json(bytes, "route"), "route"), adminKeyName(org, headers));
    }

    @POST
    @Path("/members/unpin")
    @Consumes(MediaType.APPLICATION_JSON)
    @Operation(summary = "Remove the pin of an alias. Body {\"alias\": alias}")
    @RequestBody(content = @Content(mediaType = MediaType.APPLICATION_JSON, schema = @Schema(type = SchemaType.OBJECT)))
    public Uni<ObjectNode> unpin(HttpHeaders headers, byte[] bytes) {
        Org org = org(headers);
        return service().unpin(org, text(json(bytes, "alias"), "alias"), adminKeyName(org, headers));
    }

    @POST
    @Path("/members/drain")
    @Consumes(MediaType.APPLICATION_JSON)
    @Operation(summary = "Drain (or undrain) a member. Body {\"route\": id, \"drained\": true}; draining an"
            + " alias's last member taking traffic is 400 last_member_serving")
    @RequestBody(content = @Content(mediaType = MediaType.APPLICATION_JSON, schema = @Schema(type = SchemaType.OBJECT)))
    public Uni<ObjectNode> drain(HttpHeaders headers, byte[] bytes) {
        JsonNode body = json(bytes, "route", "drained");
        JsonNode drained = body == null ? null : body.get("drained");
        // absent means drain; null is refused with any other non-boolean, as a client meaning "undrain" may send it
        if (drained != null && !drained.isBoolean()) {
            throw new RequestException(ApiError.invalidRequest("'drained' must be true or false (or left out, which "
                    + "drains).", "drained"));
        }
        Org org = org(headers);
        return service().drain(org, text(body, "route"), drained == null || drained.booleanValue(),
                adminKeyName(org, headers));
    }

    @PUT
    @Path("/routes/standing")
    @Consumes(MediaType.APPLICATION_JSON)
    @Operation(summary = "Set a route's operator standing. Body {\"route\": id, \"standing\": \"good|suspended\"}")
    @RequestBody(content = @Content(mediaType = MediaType.APPLICATION_JSON, schema = @Schema(type = SchemaType.OBJECT)))
    public Uni<ObjectNode> standing(HttpHeaders headers, byte[] bytes) {
        JsonNode body = json(bytes, "route", "standing");
        Org org = org(headers);
        return service().standing(org, text(body, "route"), text(body, "standing"), adminKeyName(org, headers));
    }

    @PUT
    @Path("/routes/verification")
    @Consumes(MediaType.APPLICATION_JSON)
    @Operation(summary = "Set or clear the operator's verification of a route. Body {\"route\": id, \"verification\":"
            + " \"pass|fail:<why>\"|null}", description = "A verdict set here is kept and is the route's verification"
            + " whatever the prober's known-answer check finds, until it is cleared with \"verification\": null;"
            + " then the prober's verdicts apply again.")
    @RequestBody(content = @Content(mediaType = MediaType.APPLICATION_JSON, schema = @Schema(type = SchemaType.OBJECT)))
    public Uni<ObjectNode> verification(HttpHeaders headers, byte[] bytes) {
        JsonNode body = json(bytes, "route", "verification");
        Org org = org(headers);
        if (body != null && body.has("verification") && body.get("verification").isNull()) {
            return service().verification(org, text(body, "route"), null, adminKeyName(org, headers));
        }
        return service().verification(org, text(body, "route"), text(body, "verification"),
                adminKeyName(org, headers));
    }

    @PUT
    @Path("/routes/alias")
    @Consumes(MediaType.APPLICATION_JSON)
    @Operation(summary = "Give a route another alias: it joins that alias's group. Body {\"route\": id, \"alias\":"
            + " alias, \"new_alias\": false, \"weight\": n, \"priority\": n}", description = "Attaches a model row"
            + " (one model on one provider) to an alias, or moves it from one alias to another, as editing its alias in"
            + " hedgerow.yaml would: two or more routes under an alias are a load-balancing group, one alone is a pinned"
            + " route. The alias must exist unless new_alias is true (then it must not: the route becomes a new alias's"
            + " only member). weight and priority, optional, are its values in the group it joins (else it keeps its"
            + " own). The route keeps its id, health and learnt models; a pin it had is dropped, a drain kept. An alias"
            + " left with no member is removed with its group settings (removed_alias in the answer). The catalog"
            + " rules judge the result (400 invalid_catalog, every error's param alias). With If-Match: \"<revision>\""
            + " of the group joined, refused with 412 group_changed when it changed since. Answers {route, alias,"
            + " previous_alias, removed_alias, group, previous_group}; the ETag is the joined group's revision."
            + " Writes an admin audit event (action move, previous_state: the alias it had).")
    @RequestBody(content = @Content(mediaType = MediaType.APPLICATION_JSON, schema = @Schema(type = SchemaType.OBJECT)))
    @Parameter(name = "If-Match", in = ParameterIn.HEADER, description = "The group revision(s) the edit is based on",
            schema = @Schema(type = SchemaType.STRING))
    public Uni<Response> moveRoute(HttpHeaders headers, byte[] bytes) {
        String ifMatch = ifMatch(headers);
        JsonNode body = json(bytes, "route", "alias", "new_alias", "weight", "priority");
        String route = text(body, "route");
        String alias = text(body, "alias");
        JsonNode fresh = body.get("new_alias");
        if (fresh != null && !fresh.isBoolean()) {
            throw new RequestException(ApiError.invalidRequest("'new_alias' must be true or false (or left out: "
                    + "false).", "new_alias"));
        }
        Org org = org(headers);
        return service().moveRoute(org, route, alias, fresh != null && fresh.booleanValue(),
                        AdminService.integer(body, "weight"), AdminService.integer(body, "priority"), ifMatch,
                        adminKeyName(org, headers))
                .map(answer -> Response.ok(answer, MediaType.APPLICATION_JSON).header(HttpHeaders.ETAG, "\""
                        + answer.path("group").path("revision").asText() + "\"").build());
    }

    @POST
    @Path("/routes/reset")
    @Consumes(MediaType.APPLICATION_JSON)
    @Operation(summary = "Put a route back into service: clear its breaker, cooldown, half-open probe and Retry-After"
            + " hold. Body {\"route\": id}", description = "For when the provider is known to be fine again (a key"
            + " was fixed, an outage ended). Clears the route's failure count, cooldown, half-open probe slot and"
            + " Retry-After hold in the shared state, so every instance routes to it again (another instance within"
            + " hedgerow.state.snapshot-max-age); learnt latency models, standing, verification, drain and pin are"
            + " kept (they have their own calls). Writes an audit event of type admin (action reset_health, the admin"
            + " key's name, the route's previous state). Answers the route's health after the reset, as GET"
            + " /admin/health shows a member, with its alias and previous_state. An unknown route, or another"
            + " organization's, is 404 not_found with param route.")
    @RequestBody(content = @Content(mediaType = MediaType.APPLICATION_JSON, schema = @Schema(type = SchemaType.OBJECT)))
    public Uni<ObjectNode> resetHealth(HttpHeaders headers, byte[] bytes) {
        Org org = org(headers);
        JsonNode body = json(bytes, "route");
        return service().resetHealth(org, text(body, "route"), adminKeyName(org, headers));
    }

    /** The name of the admin key the request came with (what an audit event names; the secret exists only hashed). */
    private static String adminKeyName(Org org, HttpHeaders headers) {
        String hash = Keys.bearer(headers.getHeaderString(HttpHeaders.AUTHORIZATION)).map(Keys::sha256Hex).orElse("");
        return org.adminKeys().stream().filter(k -> k.sha256().equals(hash)).map(ApiKey::name).findFirst()
                .orElse("");
    }

    @GET
    @Path("/health")
    @Operation(summary = "Live health of every member: cooldown, half-open, breaker, SLO, predicted TTFT, leases, usage")
    public Uni<ObjectNode> health(HttpHeaders headers, UriInfo uri, @QueryParam("alias") String alias) {
        Org org = org(headers);
        once(uri, "alias");
        return service().health(org, alias == null || alias.isBlank() ? null : alias);
    }

    @GET
    @Path("/audit")
    @Operation(summary = "Audit events, newest first; filter by type, alias, reason")
    public Uni<ObjectNode> audit(HttpHeaders headers, @QueryParam("type") String type,
                                 @QueryParam("alias") String alias, @QueryParam("reason") String reason,
                                 @QueryParam("limit") @DefaultValue("50") String limit, UriInfo uri) {
        Org org = org(headers);
        once(uri, "type", "alias", "reason", "limit");
        return service().audit(org, auditType(blank(type)), blank(alias), blank(reason), limit(limit))
                .map(this::markedPartial);
    }

    /**
     * An answer read while the shared state store is unreachable holds what this instance recorded on its own, not
     * the fleet's: said in {@code partial} and {@code partial_reason}, where a usage total of 5 against the fleet's
     * 91 looked like the org's bill (found by hunt14).
     */
    private ObjectNode markedPartial(ObjectNode answer) {
        if (app.sharedState().map(r -> r.degraded()).orElse(false)) {
            answer.put("partial", true);
            answer.put("partial_reason", "The shared state store (Redis) is unreachable from this instance: this is"
                    + " what this instance recorded itself, not the fleet's. Ask again once it is reachable.");
        }
        return answer;
    }

    @GET
    @Path("/usage")
    @Operation(summary = "Billed usage per alias, client key and UTC day (requests, tokens, cost); from/to are dates,"
            + " YYYY-MM-DD", description = "Answers total, aliases[] (each alias's totals), keys[] (each client key's"
            + " totals) and days[] (one row per day and alias); each alias and day row splits its totals per client"
            + " key in its own keys[]. alias= and key= narrow every figure to one alias or one client key's requests;"
            + " key \"-\" is usage billed before keys were recorded. An alias none of the org's routes has, or a key"
            + " that is none of its client keys, that billed nothing in the range is refused (400, param alias or"
            + " key).")
    public Uni<ObjectNode> usage(HttpHeaders headers, @QueryParam("from") String from, @QueryParam("to") String to,
                                 @QueryParam("alias") String alias, @QueryParam("key") String key, UriInfo uri) {
        Org org = org(headers);
        once(uri, "from", "to", "alias", "key");
        return service().usage(org, date(blank(from), "from"), date(blank(to), "to"), blank(alias), blank(key))
                .map(this::markedPartial);
    }

    /**
     * Refuses a query parameter given more than once ({@code ?alias=a&alias=b}): JAX-RS would quietly take the first
     * and answer for it alone, which reads as an answer for both.
     */
    private static void once(UriInfo uri, String... params) {
        for (String p : params) {
            List<String> values = uri.getQueryParameters().get(p);
            if (values != null && values.size() > 1) {
                throw new RequestException(ApiError.invalidRequest("'" + p + "' is given " + values.size()
                        + " times; give it once.", p));
            }
        }
    }

    private static final java.util.regex.Pattern DATE = java.util.regex.Pattern.compile("[0-9]{4}-[0-9]{2}-[0-9]{2}");

    /** A {@code YYYY-MM-DD} query parameter (a 400 naming it otherwise, not the 404 JAX-RS gives). */
    private static LocalDate date(String raw, String param) {
        if (raw == null) {
            return null;
        }
        try {
            if (!DATE.matcher(raw.trim()).matches()) {   // LocalDate also reads a signed year, -0001-01-01
                throw new DateTimeParseException("not YYYY-MM-DD", raw, 0);
            }
            return LocalDate.parse(raw.trim());
        } catch (DateTimeParseException e) {
            throw new RequestException(ApiError.invalidRequest("'" + param + "' must be a date written YYYY-MM-DD"
                    + " (a UTC day).", param));
        }
    }

    /** {@code ?type=}: one of the event types the audit log writes (a 400 otherwise, not an always-empty list). */
    private static String auditType(String type) {
        if (type != null && !AuditLog.TYPES.contains(type)) {
            throw new RequestException(ApiError.invalidRequest("'type' must be one of "
                    + String.join(", ", AuditLog.TYPES) + ".", "type"));
        }
        return type;
    }

    @POST
    @Path("/explain")
    @Consumes(MediaType.WILDCARD)
    @Blocking // counts the prompt's tokens like the gateway: megabytes of prompt must not hold an event loop
    @Operation(summary = "Plan a chat request: each member's filters passed or failed, and the candidates' order")
    public Uni<ObjectNode> explain(HttpHeaders headers, byte[] body) {
        Org org = org(headers);
        // what the gateway refuses at its door is refused here too, not explained as if it would be routed
        if (body != null && body.length > gatewayBodyLimit) {
            throw new RequestException(ApiError.tooLarge(gatewayBodyLimit));
        }
        GatewayRoutes.refuseMultipart(headers.getHeaderString(HttpHeaders.CONTENT_TYPE));
        GatewayRoutes.refuseEncoded(headers.getHeaderString(HttpHeaders.CONTENT_ENCODING),
                headers.getHeaderString("Transfer-Encoding"));
        Map<String, String> h = new HashMap<>();
        headers.getRequestHeaders().forEach((k, v) -> {
            if (!v.isEmpty()) {
                h.put(k.toLowerCase(Locale.ROOT), v.get(0));
            }
        });
        h.remove("authorization");
        return service().explain(org, body == null ? new byte[0] : body, h);
    }

    /**
     * {@code ?limit=}: an integer from 1 to 1000 (a 400 otherwise, not the 404 JAX-RS gives an unparsable one); left
     * blank, the default 50, as a blank {@code type}, {@code alias} or {@code reason} is no filter.
     */
    private static int limit(String raw) {
        if (blank(raw) == null) {
            return 50;
        }
        try {
            int n = Integer.parseInt(raw.trim());
            if (n >= 1 && n <= 1000) {
                return n;
            }
        } catch (NumberFormatException e) {
            // answered below
        }
        throw new RequestException(ApiError.invalidRequest("'limit' must be an integer from 1 to 1000.", "limit"));
    }

    /**
     * A JSON body read as strictly as the gateway reads one ({@link RequestJson}: UTF-8, one document, depth 64, no
     * lone surrogate), and no field named twice, as the catalog file's loader refuses a duplicate key (an edit took the
     * last value silently; found by hunt9); not by the framework's lenient mapper, which took
     * {@code {"strategy":"weighted"} xx} and saved it; null when there is none.
     */
    private static JsonNode json(byte[] body) {
        return body == null || body.length == 0 ? null : RequestJson.parseEdit(withinLimit(body));
    }

    /**
     * The largest body of an admin edit: 1 MiB, far more than any edit needs (a group of a thousand members is under
     * 100 KiB). A group edit is judged by the file loader on the event loop, whose YAML parse of a multi-megabyte value
     * held the loop (and the gateway's requests on it) for seconds.
     */
    static final int ADMIN_BODY_LIMIT = 1024 * 1024;

    private static byte[] withinLimit(byte[] body) {
        if (body.length > ADMIN_BODY_LIMIT) {
            throw new RequestException(ApiError.tooLarge(ADMIN_BODY_LIMIT));
        }
        return body;
    }

    /**
     * The body as a JSON object (null when empty; anything but an object is a 400 {@code invalid_json}, as on the
     * gateway's paths), refusing a field other than {@code fields} (400 {@code unknown_field}), as a group edit does: a
     * misspelt {@code "drianed": false} was ignored, and the drain it then defaulted to took the route out.
     */
    private static JsonNode json(byte[] body, String... fields) {
        if (body == null || body.length == 0) {
            return null;
        }
        JsonNode n = RequestJson.editObject(withinLimit(body));
        AdminService.onlyFields(n, "", Set.of(fields));
        return n;
    }

    private static String blank(String s) {
        return s == null || s.isBlank() ? null : s;
    }

    /**
     * The whole {@code If-Match} value, every tag of a list (RFC 9110: it matches when any tag does), however many
     * header lines carried it; a {@code @HeaderParam} String would hold only the first tag.
     */
    private static String ifMatch(HttpHeaders headers) {
        List<String> values = headers.getRequestHeader("If-Match");
        return values == null || values.isEmpty() ? null : String.join(",", values);
    }

    private static String text(JsonNode body, String field) {
        if (body == null || !body.hasNonNull(field)) {
            throw new RequestException(ApiError.invalidRequest("'" + field + "' is required.", field));
        }
        if (!body.get(field).isTextual()) {
            throw new RequestException(ApiError.invalidRequest("'" + field + "' must be a string.", field));
        }
        return body.get(field).asText();
    }

    @ServerExceptionMapper
    public Response requestError(RequestException e) {
        return error(e.error(), null);
    }

    /**
     * 400 with every problem in {@code error.errors[]}; {@code code} and {@code param} are the first problem's: a field
     * of the edit's body the catalog does not know is {@code unknown_field}, anything else {@code invalid_catalog}, and
     * {@code param} names the body's field it is about (a group setting, {@code breaker.max_fails}) when it is about one.
     */
    @ServerExceptionMapper
    public Response invalidEdit(InvalidEdit e) {
        ArrayNode errors = com.fasterxml.jackson.databind.node.JsonNodeFactory.instance.arrayNode();
        for (int i = 0; i < e.errors().size(); i++) {
            CatalogError err = e.errors().get(i);
            ObjectNode n = errors.addObject().put("path", err.path());
            e.route(i).ifPresent(r -> n.put("route", r));
            e.param(i).ifPresent(p -> n.put("param", p));
            n.put("message", err.message());
        }
        boolean unknown = !e.errors().isEmpty() && e.errors().get(0).unknownField() && e.param(0).isPresent();
        String param = e.errors().isEmpty() ? null : e.param(0).orElse(null);
        return error(ApiError.invalidRequest(unknown ? "unknown_field" : "invalid_catalog", e.getMessage(), param),
                errors);
    }

    /** Only this one: any other IllegalArgumentException is a server fault, not the admin's bad request. */
    @ServerExceptionMapper
    public Response unknownOrg(CatalogService.UnknownOrg e) {
        return error(ApiError.notFound(e.getMessage()), null);
    }

    static Response error(ApiError err, ArrayNode errors) {
        ObjectNode body = err.toNode();
        if (errors != null) {
            ((ObjectNode) body.get("error")).set("errors", errors);
        }
        Response.ResponseBuilder b = Response.status(err.status()).type(MediaType.APPLICATION_JSON).entity(body);
        err.retry().headers().forEach(b::header);
        return b.build();
    }
}
