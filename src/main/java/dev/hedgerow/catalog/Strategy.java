package dev.hedgerow.catalog;

import java.util.List;

/**
 * The ordering strategy of an alias group (DESIGN.md "Strategies"). Each also accepts Kong AI Gateway's spelling
 * of its {@code config.balancer.algorithm} where that differs: Kong's {@code round-robin} is weighted, so it is
 * {@link #WEIGHTED}.
 */
public enum Strategy implements Spelled {
    AUTO, RR_HEALTH, WEIGHTED("round-robin"), LEAST_LATENCY, LOWEST_LATENCY("lowest-latency"),
    CONSISTENT_HASHING("consistent-hashing"), LEAST_CONNECTIONS("least-connections"), LOWEST_USAGE("lowest-usage"),
    PRIORITY, SEMANTIC;

    private final List<String> synonyms;

    Strategy(String... synonyms) {
        this.synonyms = List.of(synonyms);
    }

    /**
     * Whether routes share the group's traffic by weight, a weight-0 route being a standby that serves only when the
     * others cannot (README "Configuration"); the other strategies rank by speed or rotation.
     */
    public boolean sharesByWeight() {
        return this == WEIGHTED || this == PRIORITY || this == CONSISTENT_HASHING || this == LEAST_CONNECTIONS
                || this == LOWEST_USAGE || this == SEMANTIC;
    }

    /**
     * The strategy written {@code s} (trimmed, any case): a wire name or Kong's spelling.
     *
     * @throws IllegalArgumentException naming the value and listing the accepted ones
     */
    public static Strategy parse(String s) {
        return WireNames.parse(Strategy.class, "strategy", s);
    }

    @Override
    public List<String> synonyms() {
        return synonyms;
    }
}
