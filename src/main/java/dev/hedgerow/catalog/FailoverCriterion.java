package dev.hedgerow.catalog;

import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.Locale;
import java.util.Set;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * Kong's {@code failover_criteria}: which failures before the first content move a request to another target.
 * {@code error}: the connection failed, or broke while the request was sent or the answer read; {@code timeout}:
 * one of those took too long; {@code invalid_header}: a 200 that is not a chat completion (another content type, a
 * body that is not one, an empty answer); {@code http_NNN}: the provider answered that status, any 4xx or 5xx (Kong
 * lists 429, 500, 502, 503, 504, 403 and 404; providers behind Cloudflare also answer 520 to 524, and servers 501,
 * 505, 507, 508); {@code http_5xx}: the provider answered any 5xx (Hedgerow's, as Envoy's {@code 5xx} retry policy:
 * Trifrost fails a group over on every 5xx).
 * {@code non_idempotent} is accepted for Kong configurations and changes nothing: nginx retries a POST it has sent
 * only with it, but a chat completion is always safe to retry before its first content reaches the client (the
 * response head is held and usage is billed once), so the criteria alone decide. A value; immutable.
 *
 * @param wireName how the criterion is written ({@code error}, {@code http_520}, {@code http_5xx})
 */
public record FailoverCriterion(String wireName) {
    /** Initialised before the constants below, which it checks. */
    private static final Pattern HTTP = Pattern.compile("http_([45][0-9][0-9])");
    public static final FailoverCriterion ERROR = new FailoverCriterion("error");
    public static final FailoverCriterion TIMEOUT = new FailoverCriterion("timeout");
    public static final FailoverCriterion INVALID_HEADER = new FailoverCriterion("invalid_header");
    public static final FailoverCriterion NON_IDEMPOTENT = new FailoverCriterion("non_idempotent");
    /** Any 5xx the provider answers. */
    public static final FailoverCriterion HTTP_5XX = new FailoverCriterion("http_5xx");
    public static final FailoverCriterion HTTP_429 = http(429);
    public static final FailoverCriterion HTTP_500 = http(500);
    public static final FailoverCriterion HTTP_502 = http(502);
    public static final FailoverCriterion HTTP_503 = http(503);
    public static final FailoverCriterion HTTP_504 = http(504);
    public static final FailoverCriterion HTTP_529 = http(529);
    public static final FailoverCriterion HTTP_403 = http(403);
    public static final FailoverCriterion HTTP_404 = http(404);

    /** How a list is written: these first, in this order, then other statuses ascending, then non_idempotent. */
    private static final List<FailoverCriterion> ORDER = List.of(ERROR, TIMEOUT, INVALID_HEADER, HTTP_429, HTTP_5XX,
            HTTP_500, HTTP_502, HTTP_503, HTTP_504, HTTP_529, HTTP_403, HTTP_404);

    public FailoverCriterion {
        if (!isKnown(wireName)) {
            throw new IllegalArgumentException(unknown(wireName));
        }
    }

    /**
     * Hedgerow's default: Trifrost's triggers (transport errors, timeouts, a 429 or any 5xx, a 200 that is no
     * answer).
     */
    public static Set<FailoverCriterion> defaults() {
        return Set.of(ERROR, TIMEOUT, INVALID_HEADER, HTTP_429, HTTP_5XX);
    }

    /** The criterion of a provider's answer with this status ({@code http_NNN}). */
    public static FailoverCriterion http(int status) {
        return new FailoverCriterion("http_" + status);
    }

    /** The criterion written exactly {@code s}, or null for none. */
    public static FailoverCriterion find(String s) {
        return s != null && isKnown(s) ? new FailoverCriterion(s) : null;
    }

    /**
     * As {@link #find} after trimming and lowercasing (the stored catalog and the admin API).
     *
     * @throws IllegalArgumentException naming the value and what is accepted
     */
    public static FailoverCriterion parse(String s) {
        FailoverCriterion c = s == null ? null : find(s.trim().toLowerCase(Locale.ROOT));
        if (c == null) {
            throw new IllegalArgumentException(unknown(s));
        }
        return c;
    }

    /** What is accepted, for error messages. */
    public static String allowed() {
        return "error, timeout, invalid_header, non_idempotent, http_5xx, or http_NNN for a status 400 to 599"
                + " (Kong's: http_429, http_500, http_502, http_503, http_504, http_403, http_404)";
    }

    /**
     * The criterion an HTTP error status falls under ({@code http_NNN}), or null when none does: no 4xx or 5xx, or a
     * 401, the provider refusing Hedgerow's own key, which fails over whatever a group lists (as a refused connection
     * does), so that no list can keep it from failing over.
     */
    public static FailoverCriterion forStatus(int status) {
        return status >= 400 && status <= 599 && status != 401 ? http(status) : null;
    }

    /** Whether {@code criteria} let a failure of {@code c} fail over: listed, or a 5xx under {@code http_5xx}. */
    public static boolean listed(Set<FailoverCriterion> criteria, FailoverCriterion c) {
        return criteria.contains(c) || c.status() >= 500 && criteria.contains(HTTP_5XX);
    }

    /** The criteria as a list is written: Kong's order for its own, then other statuses ascending. */
    public static List<FailoverCriterion> ordered(Set<FailoverCriterion> criteria) {
        List<FailoverCriterion> out = new ArrayList<>(criteria);
        out.sort(Comparator.comparingInt(FailoverCriterion::rank).thenComparingInt(FailoverCriterion::status));
        return out;
    }

    /** The status of an {@code http_NNN} criterion, else 0. */
    public int status() {
        Matcher m = HTTP.matcher(wireName);
        return m.matches() ? Integer.parseInt(m.group(1)) : 0;
    }

    private int rank() {
        int i = ORDER.indexOf(this);
        return i >= 0 ? i : equals(NON_IDEMPOTENT) ? ORDER.size() + 1 : ORDER.size();
    }

    private static boolean isKnown(String s) {
        return s != null && (s.equals("error") || s.equals("timeout") || s.equals("invalid_header")
                || s.equals("non_idempotent") || s.equals("http_5xx") || HTTP.matcher(s).matches());
    }

    private static String unknown(String s) {
        return "unknown failover criterion \"" + s + "\" (allowed: " + allowed() + ")";
    }
}
