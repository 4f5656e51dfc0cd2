package dev.hedgerow.catalog;

import java.util.List;
import java.util.Map;

/**
 * The result of loading {@code hedgerow.yaml}: its orgs, validated and with every key hashed, the hash of the
 * substituted source text (to tell whether the file, or the environment it references, changed), and the file's
 * {@code revision} ({@link #NO_REVISION} when it has none), which orders files: an older one is never published over
 * a newer one. Immutable.
 */
public record LoadedCatalog(List<Org> orgs, String sourceHash, long revision) {
    /** The revision of a file without {@code revision:}: older than any file that has one. */
    public static final long NO_REVISION = 0;

    public LoadedCatalog {
        orgs = List.copyOf(orgs);
    }

    /** A catalog snapshot of these orgs with no stored versions yet. */
    public Catalog toCatalog() {
        return new Catalog(orgs, Map.of(), Map.of());
    }
}
