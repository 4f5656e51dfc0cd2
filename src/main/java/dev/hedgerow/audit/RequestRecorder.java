package dev.hedgerow.audit;

import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.JsonNodeFactory;
import dev.hedgerow.api.Json;
import dev.hedgerow.dispatch.AttemptRecord;
import dev.hedgerow.dispatch.DispatchObserver;
import dev.hedgerow.dispatch.DispatchRequest;
import dev.hedgerow.routing.Candidate;
import dev.hedgerow.state.StateStore;
import dev.hedgerow.state.UsageSample;

import java.util.List;

/**
 * The accounting side of a finished request: bills usage once into the route's usage window and the org's
 * ledger, keeps the attempt trail in the audit stream when anything but a clean single attempt happened, and
 * writes the request log line (499 for client cancels). Thread-safe.
 */
public final class RequestRecorder implements DispatchObserver {
    private static final System.Logger LOG = System.getLogger("dev.hedgerow.request");
    private final StateStore store;
    private final AuditLog audit;
    private final RequestLog requestLog;

    public RequestRecorder(StateStore store, AuditLog audit) {
        this.store = store;
        this.audit = audit;
        this.requestLog = RequestLog.shared();
    }

    @Override
    public void finished(DispatchRequest r, int status, List<AttemptRecord> trail, UsageSample billed,
                         Candidate winner) {
        String org = r.org().id();
        if (billed != null && winner != null) {
            store.addUsage(winner.id(), billed, r.settings().balancer().usageWindow()).subscribe().with(v -> { },
                    t -> { });
            store.addLedger(org, r.alias(), billed).subscribe().with(v -> { }, t -> { });
        }
        String route = winner == null ? null : winner.id();
        if (status != 200 || trail.size() > 1) {
            audit.request(org, r.alias(), r.requestId(), status, trailJson(trail), route)
                    .subscribe().with(v -> { }, t -> { });
        }
        if (LOG.isLoggable(System.Logger.Level.INFO)) { // the line is built on the log's own thread
            String requestId = r.requestId();
            String alias = r.alias();
            List<AttemptRecord> attempts = List.copyOf(trail);
            requestLog.add(() -> line(requestId, org, alias, status, route, attempts));
        }
    }

    /** The request log line (a plain concatenation: MessageFormat parsing per request cost more than the rest). */
    private static String line(String requestId, String org, String alias, int status, String route,
                       List<AttemptRecord> trail) {
        return "request " + requestId + " org=" + org + " alias=" + alias + " status=" + status + " route="
                + (route == null ? "-" : route) + " attempts=" + Json.write(trailJson(trail));
    }

    private static ArrayNode trailJson(List<AttemptRecord> trail) {
        ArrayNode arr = JsonNodeFactory.instance.arrayNode();
        trail.forEach(a -> arr.add(a.toNode()));
        return arr;
    }
}
