package dev.hedgerow.api;

import com.fasterxml.jackson.databind.JsonNode;

import java.util.ArrayList;
import java.util.Iterator;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Set;

/**
 * OpenRouter-style per-request provider preferences (the request's {@code provider} object), matched by provider
 * slug. {@code only} is strict, {@code ignore} excludes, {@code order} is a soft preference, {@code allowFallbacks}
 * false keeps the request on the providers {@code order} names and no other (OpenRouter's meaning), or without an
 * order on its first choice; {@code sort} re-orders by latency, throughput or price.
 * Immutable.
 */
public record ProviderPrefs(List<String> only, List<String> ignore, List<String> order, boolean allowFallbacks,
                            boolean requireParameters, Sort sort, Double maxPromptPrice, Double maxCompletionPrice) {

    public static final ProviderPrefs NONE = new ProviderPrefs(List.of(), List.of(), List.of(), true, false, null,
            null, null);

    public enum Sort { LATENCY, THROUGHPUT, PRICE }

    /** The fields Hedgerow reads. */
    private static final Set<String> READ = Set.of("only", "ignore", "order", "allow_fallbacks", "require_parameters",
            "sort", "max_price");

    /**
     * OpenRouter's hints that only rank (its routing already predicts each route's latency and speed): accepted so a
     * request written for OpenRouter is served, and not used.
     */
    private static final Set<String> HINTS = Set.of("preferred_min_throughput", "preferred_max_latency");

    /**
     * OpenRouter's restrictions on attributes Hedgerow's routes do not declare (data policy, quantization): accepted
     * at their permissive default, refused otherwise, since serving the request would silently break the promise the
     * client asked for (a {@code zdr: true} request sent to a route that keeps prompts).
     */
    private static final Map<String, String> UNDECLARED = Map.of(
            "data_collection", "routes declare no data-collection policy",
            "zdr", "routes declare no data-retention policy",
            "enforce_distillable_text", "routes declare no distillation policy",
            "quantizations", "routes declare no quantization");

    public boolean isEmpty() {
        return this.equals(NONE);
    }

    /** Parses the {@code provider} field; throws {@link RequestException} naming the bad parameter. */
    public static ProviderPrefs parse(JsonNode node) {
        if (node == null || node.isNull() || node.isMissingNode()) {
            return NONE;
        }
        if (!node.isObject()) {
            throw new RequestException(ApiError.invalidRequest("'provider' must be an object.", "provider"));
        }
        for (Iterator<Map.Entry<String, JsonNode>> it = node.fields(); it.hasNext(); ) {
            Map.Entry<String, JsonNode> f = it.next();
            checkField(f.getKey(), f.getValue());
        }
        List<String> only = slugs(node, "only");
        List<String> ignore = slugs(node, "ignore");
        List<String> order = slugs(node, "order");
        boolean allowFallbacks = bool(node, "allow_fallbacks", true);
        boolean requireParameters = bool(node, "require_parameters", false);
        Sort sort = null;
        JsonNode s = node.get("sort");
        if (s != null && !s.isNull()) {
            if (!s.isTextual()) {
                throw new RequestException(ApiError.invalidRequest("'provider.sort' must be a string.", "provider.sort"));
            }
            try {
                sort = Sort.valueOf(s.asText().toUpperCase(Locale.ROOT));
            } catch (IllegalArgumentException e) {
                throw new RequestException(ApiError.invalidRequest(
                        "'provider.sort' must be one of latency, throughput, price.", "provider.sort"));
            }
        }
        Double maxPrompt = null;
        Double maxCompletion = null;
        JsonNode mp = node.get("max_price");
        if (mp != null && !mp.isNull()) {
            if (!mp.isObject()) {
                throw new RequestException(ApiError.invalidRequest("'provider.max_price' must be an object.",
                        "provider.max_price"));
            }
            for (Iterator<Map.Entry<String, JsonNode>> it = mp.fields(); it.hasNext(); ) {
                Map.Entry<String, JsonNode> f = it.next();
                if (!f.getKey().equals("prompt") && !f.getKey().equals("completion") && !f.getValue().isNull()) {
                    String param = "provider.max_price." + f.getKey();
                    throw new RequestException(ApiError.invalidRequest("unsupported_provider_preference", "'" + param
                            + "' cannot be honoured: routes are priced per prompt and completion token only.", param));
                }
            }
            maxPrompt = number(mp, "prompt", "provider.max_price.prompt");
            maxCompletion = number(mp, "completion", "provider.max_price.completion");
        }
        return new ProviderPrefs(only, ignore, order, allowFallbacks, requireParameters, sort, maxPrompt, maxCompletion);
    }

    /** Refuses a field Hedgerow does not know, and a restriction it cannot honour (see {@link #UNDECLARED}). */
    private static void checkField(String name, JsonNode value) {
        if (READ.contains(name) || HINTS.contains(name)) {
            return;
        }
        String param = "provider." + name;
        String why = UNDECLARED.get(name);
        if (why == null) {
            throw new RequestException(ApiError.invalidRequest("unknown_field", "Unknown field '" + param
                    + "'. The provider object takes only, ignore, order, allow_fallbacks, require_parameters, sort, "
                    + "max_price (and OpenRouter's preferred_min_throughput, preferred_max_latency, data_collection, "
                    + "zdr, enforce_distillable_text, quantizations at their defaults).", param));
        }
        boolean permissive = value.isNull()
                || (name.equals("data_collection") && value.isTextual() && value.asText().equals("allow"))
                || (name.equals("quantizations") && value.isArray() && value.isEmpty())
                || (value.isBoolean() && !value.asBoolean());
        if (!permissive) {
            throw new RequestException(ApiError.invalidRequest("unsupported_provider_preference", "'" + param
                    + "' cannot be honoured: Hedgerow's " + why + ", so no route could be shown to meet it. Leave it "
                    + "out (or at its default).", param));
        }
    }

    private static List<String> slugs(JsonNode node, String field) {
        JsonNode n = node.get(field);
        if (n == null || n.isNull()) {
            return List.of();
        }
        String param = "provider." + field;
        if (!n.isArray()) {
            throw new RequestException(ApiError.invalidRequest("'" + param + "' must be an array of provider slugs.",
                    param));
        }
        List<String> out = new ArrayList<>();
        for (JsonNode e : n) {
            if (!e.isTextual() || e.asText().isBlank()) {
                throw new RequestException(ApiError.invalidRequest("'" + param + "' must hold non-empty strings.",
                        param));
            }
            out.add(e.asText().trim().toLowerCase(Locale.ROOT));
        }
        return List.copyOf(out);
    }

    private static boolean bool(JsonNode node, String field, boolean dflt) {
        JsonNode n = node.get(field);
        if (n == null || n.isNull()) {
            return dflt;
        }
        if (!n.isBoolean()) {
            throw new RequestException(ApiError.invalidRequest("'provider." + field + "' must be a boolean.",
                    "provider." + field));
        }
        return n.asBoolean();
    }

    private static Double number(JsonNode node, String field, String param) {
        JsonNode n = node.get(field);
        if (n == null || n.isNull()) {
            return null;
        }
        if (!n.isNumber() || n.asDouble() < 0) {
            throw new RequestException(ApiError.invalidRequest("'" + param + "' must be a non-negative number.", param));
        }
        return n.asDouble();
    }
}
