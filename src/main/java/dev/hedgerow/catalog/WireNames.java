package dev.hedgerow.catalog;

import java.util.ArrayList;
import java.util.List;
import java.util.Locale;

/**
 * Looks catalog enums up by how they are written: the canonical wire name, or for a {@link Spelled} enum one of
 * its synonyms (Kong's spellings), and lists what is accepted for error messages. Stateless; thread-safe.
 */
final class WireNames {
    private WireNames() {
    }

    /** The constant written exactly {@code s} (a wire name or a synonym), or null. */
    static <E extends Enum<E>> E find(Class<E> type, String s) {
        for (E e : type.getEnumConstants()) {
            if (wireName(e).equals(s)) {
                return e;
            }
        }
        for (E e : type.getEnumConstants()) {
            if (e instanceof Spelled sp && sp.synonyms().contains(s)) {
                return e;
            }
        }
        return null;
    }

    /**
     * As {@link #find} after trimming and lowercasing (the stored catalog and the admin API).
     *
     * @throws IllegalArgumentException naming the value and what is accepted
     */
    static <E extends Enum<E>> E parse(Class<E> type, String noun, String s) {
        E e = s == null ? null : find(type, s.trim().toLowerCase(Locale.ROOT));
        if (e == null) {
            throw new IllegalArgumentException("unknown " + noun + " \"" + s + "\" (allowed: " + allowed(type) + ")");
        }
        return e;
    }

    /**
     * The accepted spellings: wire names, then synonyms, each marked with what it means where that is not simply
     * its hyphenated form ({@code round-robin (= weighted)}).
     */
    static <E extends Enum<E>> String allowed(Class<E> type) {
        List<String> names = new ArrayList<>();
        List<String> synonyms = new ArrayList<>();
        for (E e : type.getEnumConstants()) {
            names.add(wireName(e));
            if (e instanceof Spelled sp) {
                for (String syn : sp.synonyms()) {
                    synonyms.add(syn.replace('-', '_').equals(sp.wireName()) ? syn
                            : syn + " (= " + sp.wireName() + ")");
                }
            }
        }
        return String.join(", ", names) + (synonyms.isEmpty() ? "" : "; Kong's spellings: "
                + String.join(", ", synonyms));
    }

    private static String wireName(Enum<?> e) {
        return e instanceof Spelled sp ? sp.wireName() : e.name().toLowerCase(Locale.ROOT);
    }
}
