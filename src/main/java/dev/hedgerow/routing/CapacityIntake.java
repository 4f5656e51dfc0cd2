package dev.hedgerow.routing;

import com.fasterxml.jackson.databind.JsonNode;
import dev.hedgerow.api.ApiError;
import dev.hedgerow.api.RequestException;
import dev.hedgerow.catalog.Catalog;
import dev.hedgerow.catalog.Keys;
import dev.hedgerow.catalog.Org;
import dev.hedgerow.catalog.Provider;
import dev.hedgerow.catalog.Route;
import dev.hedgerow.state.StateStore;
import io.smallrye.mutiny.Uni;

import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.Iterator;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Set;
import java.util.TreeSet;
import java.util.function.Supplier;

/**
 * Takes serving operators' capacity reports ({@code POST /v1/capacity}): authenticates the provider by its
 * capacity key ({@code Authorization: Bearer <capacity_key>}, compared by SHA-256 with
 * {@link Provider#capacityKeyHash()}), checks that the named route (or every route serving the named upstream
 * model) is served by that provider, and stores the report as each route's {@value LearnedModels#CAPACITY} blob
 * with the report's TTL. A provider may only report its own routes; one capacity key configured for the same
 * operator in several orgs reports for all of them. Body:
 * <pre>{"route":"&lt;route id&gt;" | "model":"&lt;upstream model&gt;", "queue_depth":n, "max_queue":m,
 *  "memory_pressure":0..1, "tokens_per_second":x, "healthy":true|false, "ttl_seconds":30}</pre>
 * Only one of {@code route} / {@code model}; at least one of {@code queue_depth}, {@code memory_pressure} or
 * {@code healthy}; any other field is refused (400 {@code unknown_field}, naming it in {@code param}), as the admin
 * API refuses one.
 * Thread-safe.
 */
public final class CapacityIntake {
    /** Every field a report may have (any other is refused as {@code unknown_field}), in alphabetical order. */
    static final Set<String> FIELDS = Collections.unmodifiableSortedSet(new TreeSet<>(Set.of("route", "model",
            "queue_depth", "max_queue", "memory_pressure", "tokens_per_second", "healthy", "ttl_seconds")));

    private final StateStore store;
    private final Supplier<Catalog> catalog;

    public CapacityIntake(StateStore store, Supplier<Catalog> catalog) {
        this.store = store;
        this.catalog = catalog;
    }

    /** What became of a report. */
    public sealed interface Outcome {
        /** Stored for these route ids, for {@code ttl}. */
        record Accepted(List<String> routes, CapacityReport report, Duration ttl) implements Outcome {
        }

        record Refused(ApiError error) implements Outcome {
        }
    }

    /**
     * Handles one report; {@code capacityKey} is the bearer token as sent (null when missing), {@code read} reads the
     * body once the key is known (null when there is none; a {@link RequestException} for one that is not JSON, refused
     * as such).
     */
    public Uni<Outcome> submit(String capacityKey, Supplier<JsonNode> read) {
        if (capacityKey == null || capacityKey.isBlank()) {
            return refused(unauthorized());
        }
        String hash = Keys.sha256Hex(capacityKey.trim());
        List<Org> orgs = new ArrayList<>();
        List<Provider> providers = new ArrayList<>();
        for (Org o : catalog.get().orgs()) {
            for (Provider p : o.providers()) {
                if (hash.equals(p.capacityKeyHash())) {
                    orgs.add(o);
                    providers.add(p);
                }
            }
        }
        if (providers.isEmpty()) {
            return refused(unauthorized());
        }
        JsonNode body;
        try {
            body = read.get();
        } catch (RequestException e) {
            return refused(e.error());
        }
        if (body == null || !body.isObject()) {
            return refused(ApiError.invalidRequest("The body must be a JSON object.", null));
        }
        for (Iterator<String> names = body.fieldNames(); names.hasNext(); ) {
            String field = names.next();
            if (!FIELDS.contains(field)) { // a typo (queue_dept) is refused, never a report without it
                return refused(ApiError.invalidRequest("unknown_field", "'" + field + "' is not a field of a "
                        + "capacity report; its fields: " + String.join(", ", FIELDS) + ".", field));
            }
        }
        String route = text(body, "route");
        String model = text(body, "model");
        if ((route == null) == (model == null)) {
            return refused(ApiError.invalidRequest("Name exactly one of 'route' (a route id) or 'model' (an upstream "
                    + "model).", route == null ? "route" : "model"));
        }
        Parsed parsed;
        try {
            parsed = parse(body);
        } catch (BadField e) {
            return refused(ApiError.invalidRequest(e.getMessage(), e.field));
        }
        List<String> keys = new ArrayList<>();
        Set<String> ids = new LinkedHashSet<>();
        for (int i = 0; i < providers.size(); i++) {
            Org o = orgs.get(i);
            for (Route r : o.routes()) {
                if (r.provider().equals(providers.get(i).id())
                        && (route != null ? r.id().equals(route) : r.model().equals(model))) {
                    keys.add(Router.key(o, r));
                    ids.add(r.id());
                }
            }
        }
        if (keys.isEmpty()) {
            String what = route != null ? "route '" + route + "'" : "model '" + model + "'";
            return refused(new ApiError(403, "permission_error", "route_not_owned",
                    "No " + what + " is served by the provider of this capacity key.", route != null ? "route"
                    : "model", null));
        }
        List<Uni<Void>> writes = keys.stream().map(k -> put(store, k, parsed.report, parsed.ttl)).toList();
        return Uni.join().all(writes).andFailFast()
                .map(v -> (Outcome) new Outcome.Accepted(List.copyOf(ids), parsed.report, parsed.ttl));
    }

    /**
     * Stores a report for one route ({@link Router#key} form) for {@code ttl}: the prober calls this with what
     * {@link PrometheusCapacity#parse} read from a route's metrics.
     */
    public static Uni<Void> put(StateStore store, String routeKey, CapacityReport report, Duration ttl) {
        return store.putRouteBlob(routeKey, LearnedModels.CAPACITY, report.encode(), ttl);
    }

    private record Parsed(CapacityReport report, Duration ttl) {
    }

    private static final class BadField extends Exception {
        final String field;

        BadField(String field, String message) {
            super(message, null, false, false);
            this.field = field;
        }
    }

    private static Parsed parse(JsonNode body) throws BadField {
        if (!body.has("queue_depth") && !body.has("memory_pressure") && !body.has("healthy")) {
            throw new BadField("queue_depth", "Report at least one of 'queue_depth', 'memory_pressure' or 'healthy'.");
        }
        int queue = (int) integer(body, "queue_depth", 0, 0, Integer.MAX_VALUE);
        int maxQueue = (int) integer(body, "max_queue", CapacityReport.DEFAULT_MAX_QUEUE, 1, Integer.MAX_VALUE);
        double pressure = number(body, "memory_pressure", 0, 0, 1);
        double tps = number(body, "tokens_per_second", 0, 0, 1e7);
        boolean healthy = bool(body, "healthy", true);
        long ttl = integer(body, "ttl_seconds", CapacityReport.DEFAULT_TTL.toSeconds(), 1,
                CapacityReport.MAX_TTL.toSeconds());
        return new Parsed(new CapacityReport(queue, maxQueue, pressure, tps, healthy), Duration.ofSeconds(ttl));
    }

    private static boolean bool(JsonNode body, String field, boolean dflt) throws BadField {
        JsonNode n = body.get(field);
        if (n == null || n.isNull()) {
            return dflt;
        }
        if (!n.isBoolean()) {
            throw new BadField(field, "'" + field + "' must be true or false.");
        }
        return n.asBoolean();
    }

    private static long integer(JsonNode body, String field, long dflt, long min, long max) throws BadField {
        JsonNode n = body.get(field);
        if (n == null || n.isNull()) {
            return dflt;
        }
        if (!n.isIntegralNumber() || !n.canConvertToLong() || n.asLong() < min || n.asLong() > max) {
            throw new BadField(field, "'" + field + "' must be an integer from " + min + " to " + max + ".");
        }
        return n.asLong();
    }

    private static double number(JsonNode body, String field, double dflt, double min, double max) throws BadField {
        JsonNode n = body.get(field);
        if (n == null || n.isNull()) {
            return dflt;
        }
        if (!n.isNumber() || !(n.asDouble() >= min && n.asDouble() <= max)) {
            throw new BadField(field, "'" + field + "' must be a number from " + Codec.format(min) + " to "
                    + Codec.format(max) + ".");
        }
        return n.asDouble();
    }

    private static String text(JsonNode body, String field) {
        JsonNode n = body.get(field);
        return n != null && n.isTextual() && !n.asText().isBlank() ? n.asText() : null;
    }

    private static Uni<Outcome> refused(ApiError e) {
        return Uni.createFrom().item(new Outcome.Refused(e));
    }

    private static ApiError unauthorized() {
        return new ApiError(401, "invalid_request_error", "invalid_capacity_key",
                "Send 'Authorization: Bearer <capacity_key>' with the capacity key of the provider serving the route.",
                null, null);
    }
}
