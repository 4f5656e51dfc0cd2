package dev.hedgerow.routing;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.JsonNodeFactory;
import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.hedgerow.api.Json;

import java.io.IOException;
import java.time.Duration;
import java.util.Optional;

/**
 * What a serving operator reports about a route's headroom right now (Keln: "health, queue depth, memory pressure,
 * measured speed"), pushed to {@code POST /v1/capacity} or scraped from vLLM / SGLang metrics
 * ({@link PrometheusCapacity}). Stored as the route's {@value LearnedModels#CAPACITY} blob with a TTL, so a stale
 * report expires by itself and the route is judged as if it had never reported. Immutable.
 *
 * <p>A route has real headroom while it reports itself healthy, its waiting queue is shorter than {@code maxQueue} and
 * its memory (KV-cache) pressure is below {@value #MAX_PRESSURE}: past either bound, a new request waits for a slot, so
 * its first token is late whatever the model's own speed; a serving node that says it is unhealthy (draining, a failed
 * health check) should get no new work while other capacity can take it.
 *
 * @param queueDepth      requests waiting (not yet running), ≥ 0
 * @param maxQueue        the queue depth at which the route has no headroom left, ≥ 1
 * @param memoryPressure  KV-cache / memory use in [0, 1]
 * @param tokensPerSecond measured decode speed per stream (0 = not reported)
 * @param healthy         false when the operator reports the route unhealthy
 */
public record CapacityReport(int queueDepth, int maxQueue, double memoryPressure, double tokensPerSecond,
                             boolean healthy) {
    /** At or above this memory pressure a route has no real headroom. */
    public static final double MAX_PRESSURE = 0.95;
    /** The queue bound assumed when the operator reports none (vLLM and SGLang do not export theirs). */
    public static final int DEFAULT_MAX_QUEUE = 16;
    /** How long a report counts when it names no TTL. */
    public static final Duration DEFAULT_TTL = Duration.ofSeconds(30);
    /** The longest a report may count: capacity changes by the second, a report is no standing order. */
    public static final Duration MAX_TTL = Duration.ofMinutes(10);

    public CapacityReport {
        if (queueDepth < 0 || maxQueue < 1 || !(memoryPressure >= 0 && memoryPressure <= 1)
                || !(tokensPerSecond >= 0) || Double.isInfinite(tokensPerSecond)) {
            throw new IllegalArgumentException("capacity report needs queue_depth >= 0, max_queue >= 1, "
                    + "0 <= memory_pressure <= 1 and a finite tokens_per_second >= 0");
        }
    }

    /** A report from a route that says it is healthy (scraped metrics say nothing else). */
    public CapacityReport(int queueDepth, int maxQueue, double memoryPressure, double tokensPerSecond) {
        this(queueDepth, maxQueue, memoryPressure, tokensPerSecond, true);
    }

    public boolean hasHeadroom() {
        return healthy && queueDepth < maxQueue && memoryPressure < MAX_PRESSURE;
    }

    /** Why the route has no headroom (null when it has). */
    public String shortage() {
        if (!healthy) {
            return "reported unhealthy";
        }
        if (queueDepth >= maxQueue) {
            return "queue full (" + queueDepth + " waiting, bound " + maxQueue + ")";
        }
        if (memoryPressure >= MAX_PRESSURE) {
            return "memory pressure " + memoryPressure;
        }
        return null;
    }

    public ObjectNode toNode() {
        ObjectNode n = JsonNodeFactory.instance.objectNode();
        n.put("queue_depth", queueDepth);
        n.put("max_queue", maxQueue);
        n.put("memory_pressure", memoryPressure);
        n.put("tokens_per_second", tokensPerSecond);
        n.put("healthy", healthy);
        return n;
    }

    public String encode() {
        return Json.write(toNode());
    }

    /** The report in {@code s}, or empty when it is missing or damaged. Never throws. */
    public static Optional<CapacityReport> decode(String s) {
        if (s == null) {
            return Optional.empty();
        }
        try {
            JsonNode n = Json.parse(s);
            return Optional.of(new CapacityReport(n.path("queue_depth").asInt(0),
                    n.path("max_queue").asInt(DEFAULT_MAX_QUEUE), n.path("memory_pressure").asDouble(0),
                    n.path("tokens_per_second").asDouble(0), n.path("healthy").asBoolean(true)));
        } catch (IOException | RuntimeException e) {
            return Optional.empty();
        }
    }
}
