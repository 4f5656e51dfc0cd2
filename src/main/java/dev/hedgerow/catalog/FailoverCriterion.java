package dev.hedgerow.catalog;

import java.util.EnumSet;
import java.util.Locale;
import java.util.Set;

/** Kong's {@code failover_criteria}: which failures move a request to another target. */
public enum FailoverCriterion {
    ERROR, TIMEOUT, HTTP_429, HTTP_500, HTTP_502, HTTP_503, HTTP_504, HTTP_529, HTTP_403, HTTP_404, NON_IDEMPOTENT;

    /**
     * Hedgerow's default: Trifrost's triggers (transport errors, timeouts, 429/500/502/503/504/529), and
     * {@code non_idempotent} because a chat completion is safe to retry before its first content reaches the client
     * (the head is held and usage is billed once). A Kong-style list without {@code non_idempotent} retries only
     * failures before the request was sent, as nginx does for a POST.
     */
    public static Set<FailoverCriterion> defaults() {
        return EnumSet.of(ERROR, TIMEOUT, HTTP_429, HTTP_500, HTTP_502, HTTP_503, HTTP_504, HTTP_529,
                NON_IDEMPOTENT);
    }

    public static FailoverCriterion parse(String s) {
        return FailoverCriterion.valueOf(s.trim().toUpperCase(Locale.ROOT));
    }

    /** The criterion an HTTP status falls under, or null when no criterion names it. */
    public static FailoverCriterion forStatus(int status) {
        return switch (status) {
            case 429 -> HTTP_429;
            case 500 -> HTTP_500;
            case 502 -> HTTP_502;
            case 503 -> HTTP_503;
            case 504 -> HTTP_504;
            case 529 -> HTTP_529;
            case 403 -> HTTP_403;
            case 404 -> HTTP_404;
            default -> null;
        };
    }

    public String wireName() {
        return name().toLowerCase(Locale.ROOT);
    }
}
