package dev.hedgerow.state;

import java.time.LocalDate;

/**
 * The one place that builds state keys. Every key starts with {@code hr:}, its fixed words are lowercase and
 * colon-separated, and the entity it belongs to sits inside a Redis Cluster hash tag, so every key one operation
 * touches hashes to one slot:
 *
 * <pre>
 * hr:{r:&lt;routeId&gt;}:cool               cooldown marker            TTL failTimeout
 * hr:{r:&lt;routeId&gt;}:fails              total failures (Kong)      TTL failTimeout + idle expiry
 * hr:{r:&lt;routeId&gt;}:lastfail           last-failure marker        TTL failTimeout
 * hr:{r:&lt;routeId&gt;}:probe              half-open probe: owner     TTL probe ttl
 * hr:{r:&lt;routeId&gt;}:ra                 Retry-After hold           TTL the hold
 * hr:{r:&lt;routeId&gt;}:leases             zset leaseId -&gt; expiry ms  TTL the longest lease
 * hr:{r:&lt;routeId&gt;}:usage:&lt;bucket&gt;     hash p, c, cost            TTL window + bucket
 * hr:{r:&lt;routeId&gt;}:blob:&lt;name&gt;        named value                TTL given (or none)
 * hr:{r:&lt;routeId&gt;}:blobs              set of blob names          TTL the longest blob
 * hr:{g:&lt;org&gt;/&lt;alias&gt;}:cursor         rotation cursor            TTL idle expiry
 * hr:{o:&lt;org&gt;}:catalog                hash json, source, revision, version (kept)
 * hr:{o:&lt;org&gt;}:catalog:version        version alone, for MGET    (kept)
 * hr:{o:&lt;org&gt;}:audit                  stream, trimmed by length  (kept, MAXLEN ~)
 * hr:{o:&lt;org&gt;}:ledger:&lt;yyyy-mm-dd&gt;    hash &lt;alias&gt;:n|p|c|cost   expires 400 days after the day
 * hr:{o:&lt;org&gt;}:ledger-writers:&lt;day&gt; hash &lt;writer&gt;|&lt;alias&gt; -&gt; last write number   TTL 7 days
 * hr:{o:&lt;org&gt;}:affinity:&lt;hash&gt;        zset routeId -&gt; expiry ms  TTL of its last route
 * hr:{o:&lt;org&gt;}:hedge:&lt;windowMs&gt;:&lt;b&gt;   hash r (requests), h (hedges)   TTL window + bucket
 * hr:{o:&lt;org&gt;}:blob:&lt;name&gt;            named value                TTL given (or none)
 * hr:orgs                              set of org ids             (kept)
 * hr:{lock:&lt;name&gt;}                     owner                      TTL given
 * </pre>
 *
 * Bucketed keys ({@code usage}, {@code hedge}) are named inside Lua scripts from a prefix built here plus a bucket
 * number taken from the server clock; the prefix carries the hash tag, so the bucket keys share its slot.
 *
 * <p>Entity ids are kept as given (case-sensitive) except that {@code %}, <code>{</code>, <code>}</code> and
 * whitespace are percent-encoded: a brace inside an id would otherwise move the hash tag. Stateless and thread-safe.
 */
public final class StateKeys {

    public static final String PREFIX = "hr:";
    /** Set of every org id whose catalog was ever stored. */
    public static final String ORGS = "hr:orgs";

    private StateKeys() {
    }

    // ---- per route --------------------------------------------------------------------------------------------

    public static String route(String routeId) {
        return PREFIX + "{r:" + escape(routeId) + "}";
    }

    public static String cool(String routeId) {
        return route(routeId) + ":cool";
    }

    public static String fails(String routeId) {
        return route(routeId) + ":fails";
    }

    public static String lastFail(String routeId) {
        return route(routeId) + ":lastfail";
    }

    public static String probe(String routeId) {
        return route(routeId) + ":probe";
    }

    public static String retryAfter(String routeId) {
        return route(routeId) + ":ra";
    }

    public static String leases(String routeId) {
        return route(routeId) + ":leases";
    }

    /** Prefix of the route's usage buckets; a bucket is {@code <prefix>:<bucketNumber>}. */
    public static String usagePrefix(String routeId) {
        return route(routeId) + ":usage";
    }

    public static String usageBucket(String routeId, long bucket) {
        return usagePrefix(routeId) + ":" + bucket;
    }

    /** Prefix of the route's blobs; a blob is {@code <prefix><name>}. */
    public static String routeBlobPrefix(String routeId) {
        return route(routeId) + ":blob:";
    }

    public static String routeBlob(String routeId, String name) {
        return routeBlobPrefix(routeId) + escape(name);
    }

    /** Index of the route's blob names (so a snapshot can read them all without scanning). */
    public static String routeBlobIndex(String routeId) {
        return route(routeId) + ":blobs";
    }

    // ---- per group --------------------------------------------------------------------------------------------

    public static String cursor(String orgId, String alias) {
        return PREFIX + "{g:" + escape(orgId) + "/" + escape(alias) + "}:cursor";
    }

    // ---- per org ----------------------------------------------------------------------------------------------

    public static String org(String orgId) {
        return PREFIX + "{o:" + escape(orgId) + "}";
    }

    public static String catalog(String orgId) {
        return org(orgId) + ":catalog";
    }

    public static String catalogVersion(String orgId) {
        return org(orgId) + ":catalog:version";
    }

    public static String audit(String orgId) {
        return org(orgId) + ":audit";
    }

    /** The org's operators' audit stream (its {@code admin} events), kept apart from the request events. */
    public static String adminAudit(String orgId) {
        return org(orgId) + ":audit:admin";
    }

    /** The org's ledger of one UTC day. */
    public static String ledger(String orgId, LocalDate day) {
        return org(orgId) + ":ledger:" + day;
    }

    /** Each writer's last applied write number to the org's ledger of one UTC day (see addLedgerOnce). */
    public static String ledgerWriters(String orgId, LocalDate day) {
        return org(orgId) + ":ledger-writers:" + day;
    }

    public static String affinity(String orgId, String prefixHash) {
        return org(orgId) + ":affinity:" + escape(prefixHash);
    }

    /** Prefix of the org's hedge-window buckets for one window length; a bucket is {@code <prefix>:<bucket>}. */
    public static String hedgePrefix(String orgId, long windowMillis) {
        return org(orgId) + ":hedge:" + windowMillis;
    }

    public static String hedgeBucket(String orgId, long windowMillis, long bucket) {
        return hedgePrefix(orgId, windowMillis) + ":" + bucket;
    }

    public static String orgBlob(String orgId, String name) {
        return org(orgId) + ":blob:" + escape(name);
    }

    // ---- coordination -----------------------------------------------------------------------------------------

    public static String lock(String name) {
        return PREFIX + "{lock:" + escape(name) + "}";
    }

    /** Percent-encodes the characters that would break a hash tag or a key's readability. */
    static String escape(String id) {
        if (id == null || id.isEmpty()) {
            throw new IllegalArgumentException("empty id in a state key");
        }
        StringBuilder out = null;
        for (int i = 0; i < id.length(); i++) {
            char c = id.charAt(i);
            boolean bad = c == '%' || c == '{' || c == '}' || Character.isWhitespace(c) || Character.isISOControl(c);
            if (bad && out == null) {
                out = new StringBuilder(id.length() + 8).append(id, 0, i);
            }
            if (out != null) {
                if (bad) {
                    out.append(c <= 0xff ? String.format("%%%02x", (int) c) : String.format("%%u%04x", (int) c));
                } else {
                    out.append(c);
                }
            }
        }
        return out == null ? id : out.toString();
    }
}
