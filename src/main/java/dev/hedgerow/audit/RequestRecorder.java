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
    private final StateStore store;
    private final AuditLog audit;
    private final System.Logger log = System.getLogger("dev.hedgerow.request");

    public RequestRecorder(StateStore store, AuditLog audit) {
        this.store = store;
        this.audit = audit;
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
        ArrayNode arr = JsonNodeFactory.instance.arrayNode();
        trail.forEach(a -> arr.add(a.toNode()));
        if (log.isLoggable(System.Logger.Level.INFO)) {
            // a plain concatenation: MessageFormat parsing per request cost more than the rest of the line
            log.log(System.Logger.Level.INFO, "request " + r.requestId() + " org=" + org + " alias=" + r.alias()
                    + " status=" + status + " route=" + (winner == null ? "-" : winner.id()) + " attempts="
                    + Json.write(arr));
        }
        if (status != 200 || trail.size() > 1) {
            audit.request(org, r.alias(), r.requestId(), status, arr, winner == null ? null : winner.id())
                    .subscribe().with(v -> { }, t -> { });
        }
    }
}
