package dev.hedgerow.catalog;

import java.util.List;
import java.util.Map;

/**
 * The result of loading {@code hedgerow.yaml}: its orgs, validated and with every key hashed, and the hash of the
 * substituted source text (to tell whether the file, or the environment it references, changed). Immutable.
 */
public record LoadedCatalog(List<Org> orgs, String sourceHash) {

    public LoadedCatalog {
        orgs = List.copyOf(orgs);
    }

    /** A catalog snapshot of these orgs with no stored versions yet. */
    public Catalog toCatalog() {
        return new Catalog(orgs, Map.of());
    }
}
