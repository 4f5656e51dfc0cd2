package dev.hedgerow.catalog;

/**
 * One problem found while loading {@code hedgerow.yaml}.
 *
 * @param path    where it is, in the form {@code orgs[0].routes[2].provider}; empty for the whole document
 * @param message what is wrong, never containing a secret's value
 * @param line    the 1-based line in the source, or 0 when unknown
 */
public record CatalogError(String path, String message, int line) {
    /** How the message of a key the schema does not have begins (a hint at the nearest known key may follow). */
    static final String UNKNOWN_FIELD = "unknown field";

    public CatalogError(String path, String message) {
        this(path, message, 0);
    }

    /** Whether this is a key the schema does not have (a typo, or a setting that does not exist). */
    public boolean unknownField() {
        return message.startsWith(UNKNOWN_FIELD);
    }

    /** {@code path: message}, or the message alone for the whole document. */
    @Override
    public String toString() {
        return path.isEmpty() ? message : path + ": " + message;
    }
}
