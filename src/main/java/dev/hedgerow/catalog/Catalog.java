package dev.hedgerow.catalog;

import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;

/**
 * An immutable snapshot of every org's configuration, with lookup indexes. Thread-safe (immutable).
 * A new snapshot replaces the old one atomically whenever any org's stored version changes.
 */
public final class Catalog {
    private final List<Org> orgs;
    private final Map<String, Org> byId = new LinkedHashMap<>();
    private final Map<String, Caller> byKeyHash = new LinkedHashMap<>();
    private final Map<String, Org> byAdminKeyHash = new LinkedHashMap<>();
    private final Map<String, Long> versions;
    private final Map<String, Long> revisions;

    /**
     * @param versions  stored version per org id
     * @param revisions the configuration file revision each org was stored from (absent: none, or never stored)
     */
    public Catalog(List<Org> orgs, Map<String, Long> versions, Map<String, Long> revisions) {
        this.orgs = List.copyOf(orgs);
        this.versions = Map.copyOf(versions);
        this.revisions = Map.copyOf(revisions);
        for (Org o : this.orgs) {
            byId.put(o.id(), o);
            o.keys().forEach(k -> byKeyHash.put(k.sha256(), new Caller(o, k.name())));
            o.adminKeys().forEach(k -> byAdminKeyHash.put(k.sha256(), o));
        }
    }

    public static Catalog empty() {
        return new Catalog(List.of(), Map.of(), Map.of());
    }

    public List<Org> orgs() {
        return orgs;
    }

    public Optional<Org> org(String id) {
        return Optional.ofNullable(byId.get(id));
    }

    /** The org owning a client key, given the key's SHA-256 hex. */
    public Optional<Org> orgForKeyHash(String sha256Hex) {
        return callerForKeyHash(sha256Hex).map(Caller::org);
    }

    /** The org owning a client key and the key's name, given the key's SHA-256 hex. */
    public Optional<Caller> callerForKeyHash(String sha256Hex) {
        return Optional.ofNullable(byKeyHash.get(sha256Hex));
    }

    public Optional<Org> orgForAdminKeyHash(String sha256Hex) {
        return Optional.ofNullable(byAdminKeyHash.get(sha256Hex));
    }

    /** Who a client key authenticates: its org, and its name there (what the usage ledger bills). */
    public record Caller(Org org, String keyName) {
    }

    /** Stored version per org id (0 for an org never stored). */
    public Map<String, Long> versions() {
        return versions;
    }

    /** The configuration file revision each stored org came from, by org id (absent: none). */
    public Map<String, Long> revisions() {
        return revisions;
    }

    /** The highest configuration file revision the stored orgs came from ({@link LoadedCatalog#NO_REVISION}: none). */
    public long highestRevision() {
        return revisions.values().stream().mapToLong(Long::longValue).max().orElse(LoadedCatalog.NO_REVISION);
    }
}
