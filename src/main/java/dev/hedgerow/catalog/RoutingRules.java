package dev.hedgerow.catalog;

import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.function.UnaryOperator;

/**
 * Where a request may name its alias besides the body's {@code model}, and by which names (Kong's
 * {@code config.route.model}: its body, header and path matches, and its list of {@code values}). Whatever names
 * it, the alias resolves only inside the caller's org. Immutable.
 *
 * @param aliasHeader a request header whose value, when present, names the alias instead of the body's
 *                    {@code model}; null when only the body (or path) counts
 * @param pathAlias   whether {@code /models/{alias}/v1/chat/completions} is accepted
 * @param names       more names a request may give for an alias: name → alias (none is itself an alias), in the
 *                    order written
 */
public record RoutingRules(String aliasHeader, boolean pathAlias, Map<String, String> names) {

    public RoutingRules {
        names = names == null ? Map.of() : Collections.unmodifiableMap(new LinkedHashMap<>(names));
    }

    /** Rules without extra names. */
    public RoutingRules(String aliasHeader, boolean pathAlias) {
        this(aliasHeader, pathAlias, Map.of());
    }

    public static RoutingRules defaults() {
        return new RoutingRules(null, true);
    }

    /**
     * The alias these rules name for a request, or null when only the body's {@code model} counts: the path's alias
     * (already checked against {@link #pathAlias}), else the alias header's value, trimmed, when it is not blank.
     *
     * @param header reads a request header by name (case-insensitive), null when absent
     */
    public String routedAlias(String fromPath, UnaryOperator<String> header) {
        if (fromPath != null) {
            return fromPath;
        }
        String value = aliasHeader == null ? null : header.apply(aliasHeader);
        return value == null || value.isBlank() ? null : value.trim();
    }

    /** The alias a request's name stands for: the alias it is another name of, else the name itself. */
    public String alias(String requested) {
        if (requested == null || names.isEmpty()) {
            return requested;
        }
        return names.getOrDefault(requested, requested);
    }

    /** Every alias given other names, with them, as {@code routing.aliases} writes them (first seen first). */
    public Map<String, List<String>> namesByAlias() {
        Map<String, List<String>> out = new LinkedHashMap<>();
        names.forEach((name, alias) -> out.computeIfAbsent(alias, a -> new java.util.ArrayList<>()).add(name));
        return out;
    }

    /** The other names of {@code alias}, in the order written. */
    public List<String> namesOf(String alias) {
        return names.entrySet().stream().filter(e -> e.getValue().equals(alias)).map(Map.Entry::getKey).toList();
    }
}
