package dev.hedgerow.routing;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.JsonNodeFactory;
import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.hedgerow.api.Json;

import java.io.IOException;
import java.util.Optional;

/**
 * What a serving operator reports about a route's headroom right now (Keln: "queue depth, memory pressure,
 * measured speed"), pushed to {@code POST /v1/capacity} or scraped from vLLM / SGLang metrics. Stored with a TTL so
 * a stale report expires by itself. Immutable.
 *
 * @param queueDepth       requests waiting (not yet running)
 * @param maxQueue         the queue depth at which the route has no headroom left
 * @param memoryPressure   KV-cache / memory use in [0, 1]
 * @param tokensPerSecond  measured decode speed (0 = not reported)
 */
public record CapacityReport(int queueDepth, int maxQueue, double memoryPressure, double tokensPerSecond) {
    /** Above this memory pressure a route has no real headroom. */
    public static final double MAX_PRESSURE = 0.95;

    public boolean hasHeadroom() {
        return queueDepth < maxQueue && memoryPressure < MAX_PRESSURE;
    }

    public String encode() {
        ObjectNode n = JsonNodeFactory.instance.objectNode();
        n.put("queue_depth", queueDepth);
        n.put("max_queue", maxQueue);
        n.put("memory_pressure", memoryPressure);
        n.put("tokens_per_second", tokensPerSecond);
        return Json.write(n);
    }

    public static Optional<CapacityReport> decode(String s) {
        if (s == null) {
            return Optional.empty();
        }
        try {
            JsonNode n = Json.parse(s);
            return Optional.of(new CapacityReport(n.path("queue_depth").asInt(0), n.path("max_queue").asInt(64),
                    n.path("memory_pressure").asDouble(0), n.path("tokens_per_second").asDouble(0)));
        } catch (IOException | RuntimeException e) {
            return Optional.empty();
        }
    }
}
