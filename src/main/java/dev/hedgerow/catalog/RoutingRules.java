package dev.hedgerow.catalog;

import java.util.function.UnaryOperator;

/**
 * Where a request may name its alias besides the body's {@code model} (Kong's {@code config.route.model}).
 * Whatever names it, the alias resolves only inside the caller's org. Immutable.
 *
 * @param aliasHeader a request header whose value, when present, names the alias instead of the body's
 *                    {@code model}; null when only the body (or path) counts
 * @param pathAlias   whether {@code /models/{alias}/v1/chat/completions} is accepted
 */
public record RoutingRules(String aliasHeader, boolean pathAlias) {

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
}
