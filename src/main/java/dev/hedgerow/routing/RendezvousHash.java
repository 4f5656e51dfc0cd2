package dev.hedgerow.routing;

import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.function.ToIntFunction;

/**
 * Weighted <b>rendezvous hashing</b> (highest random weight): each member scores {@code −weight / ln(u)} where
 * {@code u ∈ (0, 1)} is a uniform hash of (key, member), and members rank by score, highest first. The top member
 * of a key is the member that key would pick, and over many keys a member wins in proportion to its weight. When a
 * member leaves, only the keys it won move (each to the member that ranked second for it); nothing else is
 * reshuffled. This is Kong's {@code consistent_hashing} ({@code hash_on_header}) without a hash ring.
 *
 * <p>The hash (FNV-1a 64 over the UTF-8 bytes of key, a separator, and member, finished with murmur3's
 * {@code fmix64}) is fixed, so every instance in the fleet ranks the same key the same way. Members with weight
 * ≤ 0 score 0 and rank last. Ties (vanishingly rare) break by member name. Stateless; thread-safe.
 */
public final class RendezvousHash {
    private RendezvousHash() {
    }

    /** {@code members} ranked for {@code key}, best first. */
    public static List<String> rank(String key, List<String> members, ToIntFunction<String> weights) {
        String k = key == null ? "" : key;
        List<Scored> scored = new ArrayList<>(members.size());
        for (String m : members) {
            scored.add(new Scored(m, score(k, m, weights.applyAsInt(m))));
        }
        scored.sort(Comparator.comparingDouble(Scored::score).reversed().thenComparing(Scored::member));
        List<String> out = new ArrayList<>(scored.size());
        for (Scored s : scored) {
            out.add(s.member());
        }
        return List.copyOf(out);
    }

    /** The weighted score of {@code member} for {@code key}: {@code −weight / ln(u)}, 0 for weight ≤ 0. */
    public static double score(String key, String member, int weight) {
        if (weight <= 0) {
            return 0;
        }
        double u = ((hash(key, member) >>> 11) + 0.5) * 0x1.0p-53;   // strictly inside (0, 1)
        return -weight / Math.log(u);
    }

    static long hash(String key, String member) {
        long h = 0xcbf29ce484222325L;
        for (byte b : key.getBytes(StandardCharsets.UTF_8)) {
            h = (h ^ (b & 0xff)) * 0x100000001b3L;
        }
        h = (h ^ 0xff) * 0x100000001b3L;   // 0xff never occurs in UTF-8: ("ab","c") and ("a","bc") differ
        for (byte b : member.getBytes(StandardCharsets.UTF_8)) {
            h = (h ^ (b & 0xff)) * 0x100000001b3L;
        }
        h ^= h >>> 33;
        h *= 0xff51afd7ed558ccdL;
        h ^= h >>> 33;
        h *= 0xc4ceb9fe1a85ec53L;
        h ^= h >>> 33;
        return h;
    }

    private record Scored(String member, double score) {
    }
}
