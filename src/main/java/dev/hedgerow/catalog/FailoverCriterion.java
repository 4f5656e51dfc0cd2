package dev.hedgerow.catalog;

import java.util.EnumSet;
import java.util.Locale;
import java.util.Set;

/**
 * Kong's {@code failover_criteria}: which failures before the first content move a request to another target.
 * {@code error}: the connection failed, or broke while the request was sent or the answer read; {@code timeout}:
 * one of those took too long; {@code invalid_header}: a 200 that is not a chat completion (another content type, a
 * body that is not one, an empty answer); {@code http_NNN}: the provider answered that status.
 * {@code non_idempotent} is accepted for Kong configurations and changes nothing: nginx retries a POST it has sent
 * only with it, but a chat completion is always safe to retry before its first content reaches the client (the
 * response head is held and usage is billed once), so the criteria alone decide.
 */
public enum FailoverCriterion {
    ERROR, TIMEOUT, INVALID_HEADER, HTTP_429, HTTP_500, HTTP_502, HTTP_503, HTTP_504, HTTP_529, HTTP_403, HTTP_404,
    NON_IDEMPOTENT;

    /** Hedgerow's default: Trifrost's triggers (transport errors, timeouts, 429/500/502/503/504/529, empty answers). */
    public static Set<FailoverCriterion> defaults() {
        return EnumSet.of(ERROR, TIMEOUT, INVALID_HEADER, HTTP_429, HTTP_500, HTTP_502, HTTP_503, HTTP_504,
                HTTP_529);
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
