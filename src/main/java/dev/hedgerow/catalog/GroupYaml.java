package dev.hedgerow.catalog;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.JsonNodeFactory;
import com.fasterxml.jackson.databind.node.ObjectNode;

import java.math.BigDecimal;
import java.time.Duration;
import java.util.Iterator;
import java.util.List;
import java.util.Map;

/**
 * A group's settings in {@code hedgerow.yaml}'s own terms, for the admin API: {@link #write} gives every setting as
 * the file writes it (Hedgerow's names: {@code strategy}, {@code retries}, {@code breaker}, ...; durations with their
 * unit), which {@link CatalogLoader} reads back to the same settings; {@link #edited} applies an edit written in the
 * file's terms to that form, so that the loader, and nothing else, then judges the result.
 *
 * <p>An edit is a JSON Merge Patch (RFC 7396) of the group's mapping: a field left out keeps its value, a nested
 * mapping ({@code breaker}, {@code slo}) is merged field by field, and {@code null} removes a field, which the loader
 * then reads as it reads a key missing from the file: its default. A setting the file accepts under another name
 * ({@code algorithm} for {@code strategy}, {@code max_attempts} for {@code retries}, Kong's nested
 * {@code balancer.<key>}) replaces the written one whichever name the edit uses. Stateless; thread-safe.
 */
public final class GroupYaml {
    /**
     * Each setting the file accepts under several names: the path {@link #write} uses, then every path an edit may
     * name it by (Kong's {@code config.balancer} keys nested under {@code balancer}, and the flat synonyms).
     */
    private static final Map<String, List<String>> SPELLINGS = Map.ofEntries(
            Map.entry("strategy", List.of("strategy", "algorithm", "balancer.algorithm")),
            Map.entry("retries", List.of("retries", "max_attempts", "balancer.retries")),
            Map.entry("breaker.max_fails", List.of("breaker.max_fails", "balancer.max_fails")),
            Map.entry("breaker.fail_timeout", List.of("breaker.fail_timeout", "balancer.fail_timeout")),
            Map.entry("failover_criteria", List.of("failover_criteria", "balancer.failover_criteria")),
            Map.entry("connect_timeout", List.of("connect_timeout", "balancer.connect_timeout")),
            Map.entry("read_timeout", List.of("read_timeout", "balancer.read_timeout")),
            Map.entry("write_timeout", List.of("write_timeout", "balancer.write_timeout")),
            Map.entry("hash_on_header", List.of("hash_on_header", "balancer.hash_on_header")),
            Map.entry("latency_strategy", List.of("latency_strategy", "balancer.latency_strategy")),
            Map.entry("tokens_count_strategy", List.of("tokens_count_strategy", "balancer.tokens_count_strategy")));

    private GroupYaml() {
    }

    /** Every setting of the group, as {@code hedgerow.yaml} writes it; the loader reads it back to {@code g}. */
    public static ObjectNode write(GroupSettings g) {
        ObjectNode n = JsonNodeFactory.instance.objectNode();
        n.put("strategy", g.strategy().wireName());
        n.put("resume_mid_stream", g.resumeMidStream());
        n.put("hedging", g.hedging());
        n.put("head_hold", g.headHold().isZero() ? "off" : duration(g.headHold()));
        n.putObject("breaker").put("max_fails", g.breaker().maxFails())
                .put("fail_timeout", duration(g.breaker().failTimeout()));
        n.put("retries", g.retry().maxAttempts() - 1);
        n.put("max_resumes", g.retry().maxResumes());
        ArrayNode fc = n.putArray("failover_criteria");
        FailoverCriterion.ordered(g.retry().failoverCriteria()).forEach(c -> fc.add(c.wireName()));
        n.put("max_retry_after_wait", duration(g.retry().maxRetryAfterWait()));
        GroupSettings.Timeouts t = g.timeouts();
        n.put("connect_timeout", duration(t.connect()));
        n.put("read_timeout", duration(t.read()));
        n.put("write_timeout", duration(t.write()));
        n.put("first_token_floor", duration(t.firstTokenFloor()));
        n.put("first_token_ceiling", duration(t.firstTokenCeiling()));
        n.put("stall_floor", duration(t.stallFloor()));
        n.put("request_timeout", t.bounded() ? duration(t.request()) : "off");
        GroupSettings.Balancer b = g.balancer();
        n.put("hash_on_header", b.hashOnHeader());
        n.put("latency_strategy", b.latencyStrategy().wireName());
        n.put("tokens_count_strategy", b.tokensCountStrategy().wireName());
        n.put("usage_window", duration(b.usageWindow()));
        n.put("embeddings_route", b.embeddingsRoute());
        n.put("distance_metric", b.distanceMetric().wireName());
        n.put("threshold", b.threshold());
        n.put("slow_bar", b.slowBar());
        if (b.judge() != null) {
            n.set("judge", judge(b.judge()));
        }
        n.putObject("slo").put("decode_tokens_per_second", g.slo().decodeTokensPerSecond())
                .put("first_token", duration(g.slo().firstToken()))
                .put("standard_prompt_max_tokens", g.slo().standardPromptMaxTokens());
        return n;
    }

    /** A group's {@code judge} as the file writes it (its timeout as a duration with its unit). */
    private static ObjectNode judge(GroupSettings.Judge j) {
        ObjectNode n = JsonNodeFactory.instance.objectNode();
        n.put("route", j.route());
        n.put("prompt", j.prompt());
        n.put("sampling_rate", j.samplingRate());
        n.put("message_countback", j.messageCountback());
        n.put("ignore_system_prompts", j.ignoreSystemPrompts());
        n.put("ignore_assistant_prompts", j.ignoreAssistantPrompts());
        n.put("ignore_tool_prompts", j.ignoreToolPrompts());
        n.put("max_tokens", j.maxTokens());
        n.put("timeout", duration(j.timeout()));
        return n;
    }

    /**
     * {@code written} (a group as {@link #write} gives it) with {@code edit} applied, as a new mapping for the loader
     * to read: first every written setting the edit names under any of its names is dropped, then the edit is merged
     * in (RFC 7396). Nothing is judged here; a field the file does not know stays for the loader to refuse.
     */
    public static ObjectNode edited(ObjectNode written, ObjectNode edit) {
        ObjectNode out = written.deepCopy();
        SPELLINGS.forEach((at, names) -> {
            if (names.stream().anyMatch(name -> named(edit, name))) {
                remove(out, at);
            }
        });
        merge(out, edit);
        return out;
    }

    /**
     * A duration in the file's syntax, exactly: the largest of {@code h}, {@code m}, {@code s} and {@code ms} it is a
     * whole number of ({@code 45s}, {@code 10m}; zero is {@code 0s}), else milliseconds with the decimals it needs ({@code 0.25ms}).
     * Every duration key reads it back, Kong's millisecond timeouts included (they take a duration with its unit).
     */
    public static String duration(Duration d) {
        long nanos = d.toNanos();
        if (nanos == 0) {
            return "0s";
        }
        long[] units = {3_600_000_000_000L, 60_000_000_000L, 1_000_000_000L, 1_000_000L};
        String[] names = {"h", "m", "s", "ms"};
        for (int i = 0; i < units.length; i++) {
            if (nanos % units[i] == 0) {
                return nanos / units[i] + names[i];
            }
        }
        return BigDecimal.valueOf(nanos, 6).stripTrailingZeros().toPlainString() + "ms";
    }

    /** Whether the edit has the dotted path (a {@code null} value included: it names the setting to reset it). */
    private static boolean named(JsonNode edit, String path) {
        JsonNode at = edit;
        for (String part : path.split("\\.")) {
            if (!at.isObject() || !at.has(part)) {
                return false;
            }
            at = at.get(part);
        }
        return true;
    }

    private static void remove(ObjectNode n, String path) {
        int dot = path.indexOf('.');
        if (dot < 0) {
            n.remove(path);
        } else if (n.get(path.substring(0, dot)) instanceof ObjectNode inner) {
            remove(inner, path.substring(dot + 1));
        }
    }

    /** RFC 7396 JSON Merge Patch, in place: objects merge recursively, null removes, anything else replaces. */
    private static void merge(ObjectNode target, JsonNode patch) {
        for (Iterator<Map.Entry<String, JsonNode>> it = patch.fields(); it.hasNext(); ) {
            Map.Entry<String, JsonNode> e = it.next();
            JsonNode value = e.getValue();
            if (value.isNull()) {
                target.remove(e.getKey());
            } else if (value.isObject()) {
                ObjectNode inner = target.get(e.getKey()) instanceof ObjectNode o ? o
                        : target.putObject(e.getKey());
                merge(inner, value);
            } else {
                target.set(e.getKey(), value.deepCopy());
            }
        }
    }
}
