package dev.hedgerow.audit;

import com.fasterxml.jackson.databind.node.ArrayNode;
import dev.hedgerow.api.Json;
import dev.hedgerow.api.Text;
import dev.hedgerow.state.AuditRecord;
import dev.hedgerow.state.StateStore;
import io.smallrye.mutiny.Uni;

import java.time.InstantSource;
import java.util.LinkedHashMap;
import java.util.Map;

/**
 * Writes the audit stream: one {@code blocked} event per refusal (reason, org, alias, time), one {@code request} event
 * per request that needed more than one attempt or failed (its attempt trail), and one {@code admin} event per operator
 * action on live state (a route's health reset: who, which route, what its health was).
 * Writes are fire-and-forget: an audit write never delays or fails a request. Thread-safe.
 */
public final class AuditLog {
    public static final int MAX_EVENTS = 10_000;
    /** The most of a refused request's alias (the model its client named) an event keeps. */
    static final int MAX_ALIAS = 200;
    /** The most of a refusal's message an event keeps. */
    static final int MAX_MESSAGE = 2000;

    private final StateStore store;
    private final InstantSource clock;
    private final System.Logger log = System.getLogger("dev.hedgerow.audit");

    /** An event of a refused request. */
    public static final String BLOCKED = "blocked";
    /** An event of a request that ran (its status, route and attempt trail). */
    public static final String REQUEST = "request";
    /** An event of an operator's action through the admin API (its {@code action}, e.g. {@link #RESET_HEALTH}). */
    public static final String ADMIN = AuditRecord.OWN_STREAM_TYPE;
    /** The admin action that put a route back into service ({@code POST /admin/routes/reset}). */
    public static final String RESET_HEALTH = "reset_health";
    /** Admin actions on a group's catalog ({@code PUT /admin/groups/{alias}}, {@code POST /admin/members/...}). */
    public static final String EDIT_GROUP = "edit_group";
    public static final String PIN = "pin";
    public static final String UNPIN = "unpin";
    public static final String DRAIN = "drain";
    public static final String UNDRAIN = "undrain";
    /** Admin actions on a route's operator flags ({@code PUT /admin/routes/standing}, {@code .../verification}). */
    public static final String STANDING = "standing";
    public static final String VERIFICATION = "verification";
    /** The admin action that gave a route another alias ({@code PUT /admin/routes/alias}): it joined that group. */
    public static final String MOVE = "move";
    /** An admin edit made on an instance cut off from the shared store, dropped there once it answered. */
    public static final String EDIT_DROPPED = "edit_dropped";
    /** Every admin action an {@link #ADMIN} event names. */
    public static final java.util.List<String> ADMIN_ACTIONS = java.util.List.of(EDIT_GROUP, PIN, UNPIN, DRAIN,
            UNDRAIN, STANDING, VERIFICATION, RESET_HEALTH, MOVE, EDIT_DROPPED);
    /** Every event type the log writes. */
    public static final java.util.List<String> TYPES = java.util.List.of(BLOCKED, REQUEST, ADMIN);

    public AuditLog(StateStore store, InstantSource clock) {
        this.store = store;
        this.clock = clock;
    }

    /**
     * A refused request. Its alias is whatever the client named (a model that does not exist, megabytes of it, line
     * breaks in it), and the refusal's message may quote it: the event keeps {@value #MAX_ALIAS} and
     * {@value #MAX_MESSAGE} characters of them, and the log line shows the alias quoted when it is not a plain name.
     */
    public Uni<String> blocked(String orgId, String alias, String reason, String message, String requestId) {
        String named = Text.clip(alias, MAX_ALIAS, "\u2026");
        Map<String, String> e = event(BLOCKED, orgId, named);
        e.put("reason", reason);
        e.put("message", message == null ? "" : Text.clip(message, MAX_MESSAGE, "\u2026"));
        e.put("request_id", requestId == null ? "" : requestId);
        log.log(System.Logger.Level.INFO, "blocked org={0} alias={1} reason={2} request={3}", orgId,
                Text.logged(named), reason, requestId);
        return append(orgId, e);
    }

    public Uni<String> request(String orgId, String alias, String requestId, int status, ArrayNode trail,
                               String route) {
        Map<String, String> e = event(REQUEST, orgId, alias);
        e.put("request_id", requestId);
        e.put("status", Integer.toString(status));
        e.put("route", route == null ? "" : route);
        e.put("attempt_trail", Json.write(trail));
        return append(orgId, e);
    }

    /**
     * An operator's action through the admin API: {@code action} (one of {@link #ADMIN_ACTIONS}), the route it acted on
     * ("" for an action on a whole group: an edit, an unpin), the admin key's name ({@code by}, never the secret),
     * what it changed from ({@code previousState}: the route's health, its flag's value, the pinned member, the
     * group's revision) and a sentence saying what was done.
     */
    public Uni<String> admin(String orgId, String action, String alias, String route, String by, String previousState,
                             String message) {
        Map<String, String> e = event(ADMIN, orgId, alias);
        e.put("action", action);
        e.put("route", route);
        e.put("admin_key", by == null ? "" : by);
        e.put("previous_state", previousState == null ? "" : previousState);
        e.put("message", message == null ? "" : message);
        // the values are free text an admin of any org gave (a verification verdict's reason, a key's name): a line
        // break or escape sequence in one forged a log line that looked like another org's (found by hunt21)
        log.log(System.Logger.Level.INFO, "admin org={0} action={1} route={2} by={3} was={4}", orgId, action,
                Text.logged(route), Text.logged(by), Text.logged(previousState));
        return append(orgId, e);
    }

    /** An event's fields every type has (its type, org and alias); the caller adds its own. */
    private static Map<String, String> event(String type, String orgId, String alias) {
        Map<String, String> e = new LinkedHashMap<>();
        e.put("type", type);
        e.put("org", orgId);
        e.put("alias", alias == null ? "" : alias);
        return e;
    }

    /** Stamps the event with the time and appends it to the org's audit stream (capped at {@value #MAX_EVENTS}). */
    private Uni<String> append(String orgId, Map<String, String> e) {
        e.put("time", clock.instant().toString());
        return store.appendAudit(orgId, e, MAX_EVENTS);
    }
}
