package dev.hedgerow.catalog;

import java.util.Locale;

/** The ordering strategy of an alias group (DESIGN.md "Strategies"). */
public enum Strategy {
    AUTO, RR_HEALTH, WEIGHTED, LEAST_LATENCY, LOWEST_LATENCY, CONSISTENT_HASHING, LEAST_CONNECTIONS, LOWEST_USAGE,
    PRIORITY, SEMANTIC;

    public static Strategy parse(String s) {
        return Strategy.valueOf(s.trim().toUpperCase(Locale.ROOT));
    }

    public String wireName() {
        return name().toLowerCase(Locale.ROOT);
    }
}
