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

    public Catalog(List<Org> orgs, Map<String, Long> versions) {
        this.orgs = List.copyOf(orgs);
        this.versions = Map.copyOf(versions);
        for (Org o : this.orgs) {
            byId.put(o.id(), o);
            o.keys().forEach(k -> byKeyHash.put(k.sha256(), new Caller(o, k.name())));
            o.adminKeys().forEach(k -> byAdminKeyHash.put(k.sha256(), o));
        }
    }

    public static Catalog empty() {
        return new Catalog(List.of(), Map.of());
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
}
