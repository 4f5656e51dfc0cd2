package dev.hedgerow.catalog;

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
}
