package dev.hedgerow.audit;

import dev.hedgerow.api.Json;
import dev.hedgerow.api.Text;
import dev.hedgerow.dispatch.AttemptRecord;
import dev.hedgerow.dispatch.DispatchObserver;
import dev.hedgerow.dispatch.DispatchRequest;
import dev.hedgerow.catalog.Org;
import dev.hedgerow.catalog.Route;
import dev.hedgerow.routing.Candidate;
import dev.hedgerow.routing.Router;
import dev.hedgerow.state.LedgerEntry;
import dev.hedgerow.state.StateStore;
import dev.hedgerow.state.UsageSample;

import java.time.InstantSource;
import java.time.LocalDate;
import java.time.ZoneOffset;
import java.util.List;

/**
 * The accounting side of a finished request: bills usage once into the org's ledger (on the UTC day it finished,
 * under its alias and client key name) and each route's part of it into that route's usage window, keeps the attempt
 * trail in the audit stream when anything but a clean single attempt happened, and writes the request log line (499
 * for client cancels); a request refused in dispatch is one blocked event.
 * Thread-safe.
 */
public final class RequestRecorder implements DispatchObserver {

    private final StateStore store;
    private final AuditLog audit;
    private final InstantSource clock;

    /** @param clock the wall clock, whose UTC date is the ledger day a request is billed on */
    public RequestRecorder(StateStore store, AuditLog audit, InstantSource clock) {
        this.store = store;
        this.audit = audit;
        this.clock = clock;
    }

    @Override
    public void finished(DispatchRequest r, int status, List<AttemptRecord> trail, UsageSample billed,
                         Candidate winner) {
        String org = r.org().id();
        if (billed != null && winner != null) {
            LocalDate day = LocalDate.ofInstant(clock.instant(), ZoneOffset.UTC);
            // billed per alias and client key: the key rides in the ledger's alias string (see LedgerLine)
            store.addLedger(org, day, new LedgerLine(r.alias(), r.keyName()).encode(), LedgerEntry.of(billed))
                    .subscribe().with(v -> { }, t -> { });
        }
        String route = winner == null ? null : winner.id();
        if (status != 200 || trail.size() > 1) {
            audit.request(org, r.alias(), r.requestId(), status, AttemptRecord.toArray(trail), route)
                    .subscribe().with(v -> { }, t -> { });
        }
        if (RequestLog.enabled()) { // the line is built on the log's own thread (the trail is an immutable snapshot)
            String requestId = r.requestId();
            String alias = r.alias();
            String key = r.keyName();
            RequestLog.shared().add(() -> line(requestId, org, key, alias, status, route, trail));
        }
    }

    /** A route's part of a finished answer, added to its usage window ({@code lowest_usage} ranks by it). */
    @Override
    public void routeUsage(DispatchRequest r, Candidate route, UsageSample usage) {
        store.addUsage(route.id(), usage, r.settings().balancer().usageWindow()).subscribe().with(v -> { }, t -> { });
    }

    /**
     * A judge call ({@code llm_accuracy}) answered: billed as one request of the judge route, in the org's ledger
     * under the judge route's alias and the key {@link LedgerLine#JUDGE}, and in the route's usage window (its own
     * group's {@code lowest_usage} counts it).
     */
    @Override
    public void judgeBilled(Org org, Route judge, UsageSample usage) {
        store.addUsage(Router.key(org, judge), usage, org.group(judge.alias()).balancer().usageWindow())
                .subscribe().with(v -> { }, t -> { });
        LocalDate day = LocalDate.ofInstant(clock.instant(), ZoneOffset.UTC);
        store.addLedger(org.id(), day, new LedgerLine(judge.alias(), LedgerLine.JUDGE).encode(), LedgerEntry.of(usage))
                .subscribe().with(v -> { }, t -> { });
    }

    /** A request refused in dispatch, before any upstream call: one blocked event, as a refusal by the router. */
    @Override
    public void refused(DispatchRequest r, int status, String reason, String message) {
        audit.blocked(r.org().id(), r.alias(), reason, message, r.requestId()).subscribe().with(v -> { }, t -> { });
    }

    /**
     * The request log line (a plain concatenation: MessageFormat parsing per request cost more than the rest). The
     * client key's name is free text: one with anything but an alias's characters is written as a JSON string.
     */
    private static String line(String requestId, String org, String key, String alias, int status, String route,
                               List<AttemptRecord> trail) {
        return "request " + requestId + " org=" + org + " key=" + Text.logged(key) + " alias=" + alias + " status=" + status
                + " route=" + (route == null ? "-" : route) + " attempts=" + Json.write(AttemptRecord.toArray(trail));
    }
}
