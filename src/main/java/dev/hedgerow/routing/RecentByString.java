package dev.hedgerow.routing;

/**
 * A small memory of values computed from strings, shared by all threads without locks: a fixed number of slots,
 * one per string hash (a new string replaces whatever shared its slot). A slot is replaced whole by an immutable
 * entry, so a reader sees an earlier entry or a later one, never a mix; a lost race only costs a recomputation.
 * For the request path's repeated work on repeated strings (model strings decoded, prompt texts tokenized).
 *
 * @param <V> the remembered value; immutable, or never changed once remembered
 */
final class RecentByString<V> {
    private record Slot<V>(String key, V value) {
    }

    private final Slot<V>[] slots;

    /** @param size the number of slots, a power of two */
    @SuppressWarnings("unchecked")
    RecentByString(int size) {
        if (size <= 0 || Integer.bitCount(size) != 1) {
            throw new IllegalArgumentException("size must be a power of two: " + size);
        }
        slots = (Slot<V>[]) new Slot[size];
    }

    /** The value remembered for exactly this string, or null. */
    V get(String key) {
        Slot<V> s = slots[key.hashCode() & (slots.length - 1)];
        return s != null && s.key.equals(key) ? s.value : null;
    }

    void put(String key, V value) {
        slots[key.hashCode() & (slots.length - 1)] = new Slot<>(key, value);
    }
}
