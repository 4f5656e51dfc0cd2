package dev.hedgerow.catalog;

import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.json.JsonMapper;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.hedgerow.catalog.GroupSettings.Balancer;
import dev.hedgerow.catalog.GroupSettings.Breaker;
import dev.hedgerow.catalog.GroupSettings.Retry;
import dev.hedgerow.catalog.GroupSettings.Slo;
import dev.hedgerow.catalog.GroupSettings.Timeouts;

import java.time.Duration;
import java.time.format.DateTimeParseException;
import java.util.ArrayList;
import java.util.Collection;
import java.util.LinkedHashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import java.util.function.Function;

/**
 * The JSON form of one org's catalog, as kept in the state store ({@code VersionedDoc.json}). Field names are
 * written out here, not derived from record components, so renaming a Java accessor never changes stored data.
 * Output is stable: lists in declaration order, sets sorted, groups by alias, durations as ISO-8601
 * ({@code PT30S}); {@code fromJson(toJson(org))} equals {@code org}.
 *
 * <p>Decoding is lenient towards newer writers (unknown fields are ignored, missing optional ones take the
 * defaults) and strict about types. Client and admin keys appear only as their SHA-256. A provider's upstream
 * {@code api_key} must be readable by every instance, so it cannot be hashed: the stored form
 * ({@link #toJson(Org, SecretBox)}) seals it with AES-GCM ({@code "enc:v1:..."}); {@link #toJson(Org)} is the
 * plain canonical form, for hashing and tests only, never to be stored, returned or logged.
 *
 * <p>Thread-safe: static methods over a shared, fully configured {@link ObjectMapper}.
 */
public final class CatalogCodec {
    /** Bumped when a change would make older readers misread a document. */
    public static final int SCHEMA = 1;

    private static final ObjectMapper MAPPER = JsonMapper.builder().build();

    private CatalogCodec() {
    }

    /** SHA-256 hex of a configuration text whose {@code ${...}} references were already substituted. */
    public static String sourceHash(String substitutedYamlText) {
        return Keys.sha256Hex(substitutedYamlText);
    }

    /** SHA-256 hex of the org's JSON form: equal for equal orgs, whatever file or admin edit produced them. */
    public static String contentHash(Org org) {
        return Keys.sha256Hex(toJson(org));
    }

    /** The plain canonical form (provider keys in clear): for hashing and tests, never for storage or output. */
    public static String toJson(Org org) {
        return toJson(org, null);
    }

    /** The stored form: provider API keys sealed by {@code box} (null: the plain canonical form). */
    public static String toJson(Org org, SecretBox box) {
        try {
            return MAPPER.writeValueAsString(encode(org, box == null ? k -> k : box::seal));
        } catch (JsonProcessingException e) {
            throw new IllegalStateException("a tree of plain nodes always serializes", e);
        }
    }

    /** @throws IllegalArgumentException when the text is not a stored org catalog */
    public static Org fromJson(String json) {
        return fromJson(json, null);
    }

    /**
     * Reads a stored org, opening sealed provider keys with {@code box}.
     *
     * @throws IllegalArgumentException when the text is not a stored org catalog, or holds a sealed key that
     *                                  {@code box} (null: none) cannot open
     */
    public static Org fromJson(String json, SecretBox box) {
        JsonNode root;
        try {
            root = MAPPER.readTree(json);
        } catch (JsonProcessingException e) {
            throw new IllegalArgumentException("stored catalog is not JSON: " + e.getOriginalMessage());
        }
        SecretBox opener = box == null ? SecretBox.plaintext() : box;
        return decode(root, opener::open);
    }

    // ---- encode ----------------------------------------------------------------------------------------------

    static ObjectNode encode(Org org, Function<String, String> sealApiKey) {
        ObjectNode o = MAPPER.createObjectNode();
        o.put("schema", SCHEMA);
        o.put("id", org.id());
        o.set("keys", keys(org.keys()));
        o.set("admin_keys", keys(org.adminKeys()));
        ArrayNode providers = o.putArray("providers");
        for (Provider p : org.providers()) {
            ObjectNode n = providers.addObject();
            n.put("id", p.id());
            n.put("base_url", p.baseUrl());
            n.put("api_key", sealApiKey.apply(p.apiKey()));
            n.put("dialect", p.dialect().wireName());
            n.put("metrics_url", p.metricsUrl());
            n.put("capacity_key_sha256", p.capacityKeyHash());
        }
        ArrayNode routes = o.putArray("routes");
        for (Route r : org.routes()) {
            ObjectNode n = routes.addObject();
            n.put("id", r.id());
            n.put("alias", r.alias());
            n.put("provider", r.provider());
            n.put("model", r.model());
            n.put("weight", r.weight());
            n.put("priority", r.priority());
            n.put("context_window", r.contextWindow());
            strings(n.putArray("capabilities"), r.capabilities().stream().sorted().toList());
            strings(n.putArray("parameters"), r.parameters().stream().sorted().toList());
            ObjectNode price = n.putObject("price");
            price.put("prompt_per_mtok", r.price().promptPerMtok());
            price.put("completion_per_mtok", r.price().completionPerMtok());
            n.put("description", r.description());
            strings(n.putArray("tags"), r.tags());
            n.put("embeddings", r.embeddings());
        }
        ObjectNode groups = o.putObject("groups");
        new TreeMap<>(org.groups()).forEach((alias, g) -> groups.set(alias, group(g)));
        ObjectNode routing = o.putObject("routing");
        routing.put("alias_header", org.routing().aliasHeader());
        routing.put("path_alias", org.routing().pathAlias());
        if (!org.routing().names().isEmpty()) {
            ObjectNode names = routing.putObject("aliases");
            org.routing().namesByAlias().forEach((alias, list) -> strings(names.putArray(alias), list));
        }
        o.putObject("hedge_budget").put("ratio", org.hedgeBudget().ratio())
                .put("min_per_window", org.hedgeBudget().minPerWindow())
                .put("window", org.hedgeBudget().window().toString());
        return o;
    }

    private static ArrayNode keys(List<ApiKey> keys) {
        ArrayNode a = MAPPER.createArrayNode();
        keys.forEach(k -> a.addObject().put("name", k.name()).put("sha256", k.sha256()));
        return a;
    }

    private static void strings(ArrayNode a, Collection<String> values) {
        values.forEach(a::add);
    }

    private static ObjectNode group(GroupSettings g) {
        ObjectNode n = MAPPER.createObjectNode();
        n.put("strategy", g.strategy().wireName());
        n.put("resume_mid_stream", g.resumeMidStream());
        n.put("hedging", g.hedging());
        n.put("head_hold", g.headHold().toString());
        n.putObject("breaker")
                .put("max_fails", g.breaker().maxFails())
                .put("fail_timeout", g.breaker().failTimeout().toString());
        ObjectNode retry = n.putObject("retry");
        retry.put("max_attempts", g.retry().maxAttempts());
        retry.put("max_resumes", g.retry().maxResumes());
        strings(retry.putArray("failover_criteria"), FailoverCriterion.ordered(g.retry().failoverCriteria()).stream()
                .map(FailoverCriterion::wireName).toList());
        retry.put("max_retry_after_wait", g.retry().maxRetryAfterWait().toString());
        Timeouts t = g.timeouts();
        n.putObject("timeouts")
                .put("connect", t.connect().toString())
                .put("read", t.read().toString())
                .put("write", t.write().toString())
                .put("first_token_floor", t.firstTokenFloor().toString())
                .put("first_token_ceiling", t.firstTokenCeiling().toString())
                .put("stall_floor", t.stallFloor().toString())
                .put("request", t.request().toString());
        Balancer b = g.balancer();
        ObjectNode bal = n.putObject("balancer")
                .put("hash_on_header", b.hashOnHeader())
                .put("latency_strategy", b.latencyStrategy().wireName())
                .put("tokens_count_strategy", b.tokensCountStrategy().wireName())
                .put("usage_window", b.usageWindow().toString())
                .put("embeddings_route", b.embeddingsRoute())
                .put("distance_metric", b.distanceMetric().wireName())
                .put("threshold", b.threshold())
                .put("slow_bar", b.slowBar());
        if (b.judge() != null) {
            GroupSettings.Judge j = b.judge();
            bal.putObject("judge")
                    .put("route", j.route())
                    .put("prompt", j.prompt())
                    .put("sampling_rate", j.samplingRate())
                    .put("message_countback", j.messageCountback())
                    .put("ignore_system_prompts", j.ignoreSystemPrompts())
                    .put("ignore_assistant_prompts", j.ignoreAssistantPrompts())
                    .put("ignore_tool_prompts", j.ignoreToolPrompts())
                    .put("max_tokens", j.maxTokens())
                    .put("timeout", j.timeout().toString());
        }
        n.putObject("slo")
                .put("decode_tokens_per_second", g.slo().decodeTokensPerSecond())
                .put("first_token", g.slo().firstToken().toString())
                .put("standard_prompt_max_tokens", g.slo().standardPromptMaxTokens());
        return n;
    }

    // ---- decode ----------------------------------------------------------------------------------------------

    static Org decode(JsonNode o, Function<String, String> openApiKey) {
        Doc d = new Doc(o, "");
        int schema = d.integer("schema", SCHEMA);
        if (schema > SCHEMA) {
            throw new IllegalArgumentException("stored catalog has schema " + schema + "; this build reads up to "
                    + SCHEMA);
        }
        List<ApiKey> keys = d.list("keys", k -> new ApiKey(k.text("name"), k.text("sha256")));
        List<ApiKey> adminKeys = d.list("admin_keys", k -> new ApiKey(k.text("name"), k.text("sha256")));
        List<Provider> providers = d.list("providers", p -> new Provider(p.text("id"), p.text("base_url"),
                openApiKey.apply(p.optText("api_key")), Dialect.parse(p.optText("dialect", "openai")), p.optText("metrics_url"),
                p.optText("capacity_key_sha256")));
        List<Route> routes = d.list("routes", r -> {
            Doc price = r.obj("price");
            return new Route(r.text("id"), r.text("alias"), r.text("provider"), r.text("model"),
                    r.integer("weight", CatalogLoader.DEFAULT_WEIGHT),
                    r.integer("priority", CatalogLoader.DEFAULT_PRIORITY),
                    r.integer("context_window", CatalogLoader.DEFAULT_CONTEXT_WINDOW),
                    new LinkedHashSet<>(r.strings("capabilities")), new LinkedHashSet<>(r.strings("parameters")),
                    price == null ? Route.Price.FREE : new Route.Price(price.number("prompt_per_mtok", 0),
                            price.number("completion_per_mtok", 0)),
                    r.optText("description"), r.strings("tags"), r.bool("embeddings", false));
        });
        Map<String, GroupSettings> groups = new LinkedHashMap<>();
        Doc g = d.obj("groups");
        if (g != null) {
            g.node.fieldNames().forEachRemaining(alias -> {
                Doc settings = g.obj(alias);
                groups.put(alias, settings == null ? GroupSettings.defaults() : group(settings));
            });
        }
        Doc routing = d.obj("routing");
        Map<String, String> names = new LinkedHashMap<>();
        Doc aliasNames = routing == null ? null : routing.obj("aliases");
        if (aliasNames != null) {
            aliasNames.node.fieldNames().forEachRemaining(alias ->
                    aliasNames.strings(alias).forEach(name -> names.put(name, alias)));
        }
        RoutingRules rr = routing == null ? RoutingRules.defaults()
                : new RoutingRules(routing.optText("alias_header"),
                routing.bool("path_alias", RoutingRules.defaults().pathAlias()), names);
        Doc hb = d.obj("hedge_budget");
        HedgeBudget dh = HedgeBudget.defaults();
        HedgeBudget budget;
        try {
            budget = hb == null ? dh : new HedgeBudget(hb.number("ratio", dh.ratio()),
                    hb.integer("min_per_window", dh.minPerWindow()), hb.duration("window", dh.window()));
        } catch (IllegalArgumentException e) {
            throw hb.bad("hedge_budget", e.getMessage());
        }
        return new Org(d.text("id"), keys, adminKeys, providers, routes, groups, rr, budget);
    }

    private static GroupSettings group(Doc n) {
        GroupSettings d = GroupSettings.defaults();
        Doc b = n.obj("breaker");
        Breaker breaker = b == null ? d.breaker()
                : new Breaker(b.integer("max_fails", d.breaker().maxFails()),
                b.duration("fail_timeout", d.breaker().failTimeout()));
        Doc r = n.obj("retry");
        Retry retry = d.retry();
        if (r != null) {
            Set<FailoverCriterion> criteria = r.node.has("failover_criteria")
                    ? new java.util.HashSet<>() : retry.failoverCriteria();
            if (r.node.has("failover_criteria")) {
                r.strings("failover_criteria").forEach(c -> criteria.add(FailoverCriterion.parse(c)));
            }
            retry = new Retry(r.integer("max_attempts", retry.maxAttempts()),
                    r.integer("max_resumes", retry.maxResumes()), criteria,
                    r.duration("max_retry_after_wait", retry.maxRetryAfterWait()));
        }
        Doc t = n.obj("timeouts");
        Timeouts dt = d.timeouts();
        Timeouts timeouts = t == null ? dt : new Timeouts(t.duration("connect", dt.connect()),
                t.duration("read", dt.read()), t.duration("write", dt.write()),
                t.duration("first_token_floor", dt.firstTokenFloor()),
                t.duration("first_token_ceiling", dt.firstTokenCeiling()),
                t.duration("stall_floor", dt.stallFloor()), t.duration("request", dt.request()));
        Doc bal = n.obj("balancer");
        Balancer db = d.balancer();
        Balancer balancer = bal == null ? db : new Balancer(bal.optText("hash_on_header", db.hashOnHeader()),
                WireNames.parse(GroupSettings.LatencyStrategy.class, "latency_strategy",
                        bal.optText("latency_strategy", db.latencyStrategy().wireName())),
                WireNames.parse(GroupSettings.TokensCountStrategy.class, "tokens_count_strategy",
                        bal.optText("tokens_count_strategy", db.tokensCountStrategy().wireName())),
                usageWindow(bal.duration("usage_window", db.usageWindow())), bal.optText("embeddings_route"),
                // documents written before distance_metric existed were cosine
                WireNames.parse(GroupSettings.DistanceMetric.class, "distance_metric",
                        bal.optText("distance_metric", db.distanceMetric().wireName())),
                bal.number("threshold", db.threshold()), bal.number("slow_bar", db.slowBar()), judge(bal.obj("judge")));
        Doc s = n.obj("slo");
        Slo ds = d.slo();
        Slo slo = s == null ? ds : new Slo(s.number("decode_tokens_per_second", ds.decodeTokensPerSecond()),
                s.duration("first_token", ds.firstToken()),
                s.integer("standard_prompt_max_tokens", ds.standardPromptMaxTokens()));
        return new GroupSettings(Strategy.parse(n.optText("strategy", "auto")),
                n.bool("resume_mid_stream", d.resumeMidStream()), n.bool("hedging", d.hedging()), breaker, retry,
                timeouts, balancer, slo, n.duration("head_hold", d.headHold()));
    }

    /** A stored group's judge ({@code balancer.judge}), or null when it has none. */
    private static GroupSettings.Judge judge(Doc j) {
        if (j == null) {
            return null;
        }
        GroupSettings.Judge d = GroupSettings.Judge.defaults(j.text("route"));
        return new GroupSettings.Judge(d.route(), j.optText("prompt", d.prompt()),
                j.number("sampling_rate", d.samplingRate()), j.integer("message_countback", d.messageCountback()),
                j.bool("ignore_system_prompts", d.ignoreSystemPrompts()),
                j.bool("ignore_assistant_prompts", d.ignoreAssistantPrompts()),
                j.bool("ignore_tool_prompts", d.ignoreToolPrompts()), j.integer("max_tokens", d.maxTokens()),
                j.duration("timeout", d.timeout()));
    }

    /** A JSON object being decoded, with its path for error messages. */
    private record Doc(JsonNode node, String path) {
        Doc {
            if (!node.isObject()) {
                throw new IllegalArgumentException("stored catalog: " + (path.isEmpty() ? "document" : path)
                        + " must be an object");
            }
        }

        private IllegalArgumentException bad(String field, String what) {
            return new IllegalArgumentException("stored catalog: " + (path.isEmpty() ? "" : path + ".") + field
                    + " " + what);
        }

        String text(String field) {
            String s = optText(field);
            if (s == null) {
                throw bad(field, "is required");
            }
            return s;
        }

        String optText(String field) {
            return optText(field, null);
        }

        String optText(String field, String def) {
            JsonNode v = node.get(field);
            if (v == null || v.isNull()) {
                return def;
            }
            if (!v.isTextual()) {
                throw bad(field, "must be a string");
            }
            return v.textValue();
        }

        int integer(String field, int def) {
            JsonNode v = node.get(field);
            if (v == null || v.isNull()) {
                return def;
            }
            if (!v.canConvertToExactIntegral() || !v.canConvertToInt()) {
                throw bad(field, "must be an integer");
            }
            return v.intValue();
        }

        double number(String field, double def) {
            JsonNode v = node.get(field);
            if (v == null || v.isNull()) {
                return def;
            }
            if (!v.isNumber()) {
                throw bad(field, "must be a number");
            }
            return v.doubleValue();
        }

        boolean bool(String field, boolean def) {
            JsonNode v = node.get(field);
            if (v == null || v.isNull()) {
                return def;
            }
            if (!v.isBoolean()) {
                throw bad(field, "must be true or false");
            }
            return v.booleanValue();
        }

        Duration duration(String field, Duration def) {
            String s = optText(field);
            if (s == null) {
                return def;
            }
            try {
                return Duration.parse(s);
            } catch (DateTimeParseException e) {
                throw bad(field, "must be an ISO-8601 duration");
            }
        }

        Doc obj(String field) {
            JsonNode v = node.get(field);
            return v == null || v.isNull() ? null : new Doc(v, path.isEmpty() ? field : path + "." + field);
        }

        List<String> strings(String field) {
            List<String> out = new ArrayList<>();
            JsonNode v = node.get(field);
            if (v == null || v.isNull()) {
                return out;
            }
            if (!v.isArray()) {
                throw bad(field, "must be an array");
            }
            for (JsonNode e : v) {
                if (!e.isTextual()) {
                    throw bad(field, "must hold strings");
                }
                out.add(e.textValue());
            }
            return out;
        }

        <T> List<T> list(String field, Function<Doc, T> each) {
            List<T> out = new ArrayList<>();
            JsonNode v = node.get(field);
            if (v == null || v.isNull()) {
                return out;
            }
            if (!v.isArray()) {
                throw bad(field, "must be an array");
            }
            for (int i = 0; i < v.size(); i++) {
                out.add(each.apply(new Doc(v.get(i), (path.isEmpty() ? "" : path + ".") + field + "[" + i + "]")));
            }
            return out;
        }
    }

    /**
     * A stored {@code usage_window}, at most {@link CatalogLoader#MAX_USAGE_WINDOW}: a catalog stored before the
     * bound (an admin edit of an older version, or one an old instance took during a rolling deploy) keeps a longer
     * one, which would sum that many minutes in Redis for every request's routing (found by review7).
     */
    static Duration usageWindow(Duration stored) {
        return stored.compareTo(CatalogLoader.MAX_USAGE_WINDOW) > 0 ? CatalogLoader.MAX_USAGE_WINDOW : stored;
    }
}
