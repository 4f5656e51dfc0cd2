package dev.hedgerow.dispatch;

import com.fasterxml.jackson.databind.node.ArrayNode;
import dev.hedgerow.dispatch.Attempt.Kind;
import dev.hedgerow.routing.Candidate;

import java.util.ArrayList;
import java.util.List;

/**
 * A dispatch's attempt trail: one {@link AttemptRecord} per ended or skipped attempt, in the order they were started
 * (a hedge that lost to its primary comes after it, though it ended first). It is what the client sees
 * ({@code x-hedgerow-attempts}, {@code attempt_trail}) and what the observer logs. Guarded by its dispatch.
 */
final class AttemptTrail {
    private final List<AttemptRecord> records = new ArrayList<>();

    /**
     * A route passed over without an attempt (its half-open probe slot was taken), {@code atMs} into the request;
     * {@code index} is its place among the request's attempts.
     */
    void skipped(int index, Candidate c, Kind kind, String error, long atMs) {
        add(new AttemptRecord(index, c.route().id(), c.route().provider(), kindName(kind), "skipped", 0, error, atMs,
                -1, 0));
    }

    /** An attempt ended, {@code startMs} into the request after running {@code durationMs}. */
    void ended(Attempt a, String outcome, String error, long startMs, long durationMs) {
        long ttft = a.firstContentNanos < 0 ? -1 : (a.firstContentNanos - a.startNanos) / 1_000_000L;
        add(new AttemptRecord(a.index, a.cand.route().id(), a.cand.route().provider(), kindName(a.kind),
                outcome, a.status, error, startMs, ttft, durationMs));
    }

    private void add(AttemptRecord r) {
        int at = records.size();
        while (at > 0 && records.get(at - 1).index() > r.index()) {
            at--;
        }
        records.add(at, r);
    }

    int size() {
        return records.size();
    }

    /** How many attempts failed so far (skipped routes and lost races are not failures). */
    int failures() {
        return (int) records.stream().filter(r -> "failed".equals(r.outcome())).count();
    }

    /** Whether the route answered 429 in this request (its Retry-After, if any, is honoured: no retry on it). */
    boolean rateLimited(String routeId) {
        for (AttemptRecord r : records) {
            if (r.route().equals(routeId) && r.status() == 429) {
                return true;
            }
        }
        return false;
    }

    /** How many attempts on the route failed so far. */
    int failuresOn(String routeId) {
        int n = 0;
        for (AttemptRecord r : records) {
            if (r.route().equals(routeId) && "failed".equals(r.outcome())) {
                n++;
            }
        }
        return n;
    }

    /** The records so far, as an immutable copy. */
    List<AttemptRecord> snapshot() {
        return List.copyOf(records);
    }

    ArrayNode toNode() {
        return AttemptRecord.toArray(records);
    }

    private static String kindName(Kind k) {
        return k.name().toLowerCase();
    }
}
