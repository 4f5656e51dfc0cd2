package dev.hedgerow.catalog;

import java.util.List;
import java.util.Locale;

/**
 * A catalog enum as it is written in configuration: one canonical wire name (lowercase with underscores, what
 * Hedgerow itself writes in the stored catalog and in admin answers) and the other spellings it accepts on input,
 * Kong AI Gateway's hyphenated ones ({@code consistent-hashing}, {@code total-tokens}), so a Kong configuration
 * ports without renaming. {@link WireNames} looks both up. Implemented by immutable enums: thread-safe.
 */
public interface Spelled {
    /** The enum constant's name in lowercase: {@code CONSISTENT_HASHING} is {@code consistent_hashing}. */
    default String wireName() {
        return ((Enum<?>) this).name().toLowerCase(Locale.ROOT);
    }

    /** Spellings accepted beside {@link #wireName()} (Kong's); never written out. */
    default List<String> synonyms() {
        return List.of();
    }
}
