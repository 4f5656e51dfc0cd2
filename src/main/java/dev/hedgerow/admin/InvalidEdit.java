package dev.hedgerow.admin;

import dev.hedgerow.catalog.CatalogError;

import java.util.List;
import java.util.stream.Collectors;

/** An admin edit the catalog rules refuse; carries every error with its path. Immutable. */
public final class InvalidEdit extends RuntimeException {
    private final List<CatalogError> errors;

    public InvalidEdit(List<CatalogError> errors) {
        super("The edit was not saved: " + errors.stream().map(CatalogError::toString)
                .collect(Collectors.joining("; ")), null, false, false);
        this.errors = List.copyOf(errors);
    }

    public List<CatalogError> errors() {
        return errors;
    }
}
