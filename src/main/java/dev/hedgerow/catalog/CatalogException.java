package dev.hedgerow.catalog;

import java.util.List;
import java.util.stream.Collectors;

/**
 * Thrown when a configuration cannot be loaded; carries every error found, not just the first, so an operator
 * fixes a file in one pass. Immutable.
 */
public final class CatalogException extends RuntimeException {
    private final List<CatalogError> errors;

    public CatalogException(List<CatalogError> errors) {
        super(format(errors));
        this.errors = List.copyOf(errors);
    }

    /** Every error, in document order of discovery. */
    public List<CatalogError> errors() {
        return errors;
    }

    private static String format(List<CatalogError> errors) {
        String lines = errors.stream()
                .map(e -> "  " + e + (e.line() > 0 ? " (line " + e.line() + ")" : ""))
                .collect(Collectors.joining("\n"));
        return "invalid Hedgerow configuration (" + errors.size() + (errors.size() == 1 ? " error" : " errors")
                + "):\n" + lines;
    }
}
