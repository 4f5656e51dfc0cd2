package dev.hedgerow.dispatch;

import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.JsonNodeFactory;
import com.fasterxml.jackson.databind.node.ObjectNode;

import java.util.List;

/**
 * One line of a request's attempt trail: which route, why it started, how it ended, and its timings.
 *
 * @param kind     primary | failover | hedge | resume
 * @param outcome  success | failed | cancelled | lost_race | client_cancelled | client_error | shutdown (the
 *                 instance's grace period for requests in flight ended)
 * @param status   upstream HTTP status (0 when none arrived)
 * @param error    the error class ({@code http_503}, {@code transport_reset}, {@code zero_content}, ...) or null
 * @param ttftMs   time to first content from the attempt's start (-1 when none)
 */
public record AttemptRecord(int index, String route, String provider, String kind, String outcome, int status,
                            String error, long startMs, long ttftMs, long durationMs) {

    /** A trail as the JSON array clients, the audit stream and the request log show. */
    public static ArrayNode toArray(List<AttemptRecord> trail) {
        ArrayNode arr = JsonNodeFactory.instance.arrayNode();
        trail.forEach(r -> arr.add(r.toNode()));
        return arr;
    }

    public ObjectNode toNode() {
        ObjectNode n = JsonNodeFactory.instance.objectNode();
        n.put("attempt", index);
        n.put("route", route);
        n.put("provider", provider);
        n.put("kind", kind);
        n.put("outcome", outcome);
        n.put("status", status);
        if (error == null) {
            n.putNull("error");
        } else {
            n.put("error", error);
        }
        n.put("start_ms", startMs);
        n.put("ttft_ms", ttftMs);
        n.put("duration_ms", durationMs);
        return n;
    }
}
