package dev.hedgerow.routing;

import java.util.ArrayList;
import java.util.Collections;
import java.util.Comparator;
import java.util.LinkedHashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.function.Predicate;
import java.util.function.ToIntFunction;

/**
 * nginx's <b>smooth weighted round-robin</b>, unrolled into its circular sequence so that a shared counter can
 * drive it: each step every member's current weight grows by its weight, the largest (the earliest member on a
 * tie) is picked and loses the total. The sequence for 70/25/5 holds each member exactly 70, 25 and 5 times per
 * 100 positions, interleaved ({@code A A B A A A B A ...}), never 70 {@code A}s in a row. With one counter
 * {@code INCR}ed per request in the shared store and {@link #pick(long, Predicate)} at that value, the whole fleet
 * rotates as one weighted round-robin.
 *
 * <p>Members with weight ≤ 0 are drained: never picked, and absent from {@link #orderFrom} too. The sequence is
 * built on the weights divided by their greatest common divisor (the same picks, a shorter cycle); a cycle longer
 * than {@value #MAX_PERIOD} is built on proportionally scaled weights (each positive weight stays ≥ 1).
 *
 * <p>Instances are immutable and thread-safe, and cached per weight vector ({@link #of(Map)}), so building one per
 * request costs a map lookup. The map's iteration order is the tie-break order: pass an ordered map
 * ({@code LinkedHashMap}), never {@code Map.of}.
 */
public final class SmoothWeightedSequence {
    static final int MAX_PERIOD = 10_000;
    private static final int CACHE_LIMIT = 1024;
    private static final Map<List<Map.Entry<String, Integer>>, SmoothWeightedSequence> CACHE =
            new ConcurrentHashMap<>();

    private final Map<String, Integer> weights;     // as given, in order
    private final String[] sequence;
    private final List<String> byWeight;            // positive-weight members, weight descending, then given order

    private SmoothWeightedSequence(Map<String, Integer> weights) {
        this.weights = Collections.unmodifiableMap(new LinkedHashMap<>(weights));
        List<String> members = new ArrayList<>();
        List<Integer> w = new ArrayList<>();
        weights.forEach((m, wt) -> {
            if (wt != null && wt > 0) {
                members.add(m);
                w.add(wt);
            }
        });
        this.sequence = build(members, reduce(w));
        List<String> ordered = new ArrayList<>(members);
        ordered.sort(Comparator.comparingInt((String m) -> weights.get(m)).reversed());   // stable sort
        this.byWeight = List.copyOf(ordered);
    }

    /** The sequence of an ordered member → weight map, from the cache when built before. */
    public static SmoothWeightedSequence of(Map<String, Integer> weights) {
        List<Map.Entry<String, Integer>> key = new ArrayList<>(weights.size());
        weights.forEach((m, w) -> key.add(Map.entry(m, w == null ? 0 : w)));
        SmoothWeightedSequence cached = CACHE.get(key);
        if (cached != null) {
            return cached;
        }
        if (CACHE.size() >= CACHE_LIMIT) {
            CACHE.clear();   // weight vectors change rarely; a full reset beats bookkeeping an LRU
        }
        return CACHE.computeIfAbsent(List.copyOf(key), k -> new SmoothWeightedSequence(weights));
    }

    /** The sequence of {@code members} (in this order) weighted by {@code weight}. */
    public static SmoothWeightedSequence of(List<String> members, ToIntFunction<String> weight) {
        Map<String, Integer> map = new LinkedHashMap<>();
        for (String m : members) {
            map.put(m, weight.applyAsInt(m));
        }
        return of(map);
    }

    public Map<String, Integer> weights() {
        return weights;
    }

    /** The length of one cycle (0 when every weight is ≤ 0). */
    public int period() {
        return sequence.length;
    }

    /** One cycle of the sequence. */
    public List<String> sequence() {
        return List.of(sequence);
    }

    /**
     * The first available member at or after position {@code cursor} (taken modulo the period, negative cursors
     * included); an unavailable member's turn passes to the next member in the sequence. Empty when no
     * positive-weight member is available.
     */
    public Optional<String> pick(long cursor, Predicate<String> available) {
        if (sequence.length == 0) {
            return Optional.empty();
        }
        // ask the predicate once per member, not once per position
        Map<String, Boolean> up = new LinkedHashMap<>();
        boolean any = false;
        for (String m : byWeight) {
            boolean ok = available.test(m);
            up.put(m, ok);
            any |= ok;
        }
        if (!any) {
            return Optional.empty();
        }
        int start = (int) Math.floorMod(cursor, (long) sequence.length);
        for (int i = 0; i < sequence.length; i++) {
            String m = sequence[(start + i) % sequence.length];
            if (up.get(m)) {
                return Optional.of(m);
            }
        }
        return Optional.empty();
    }

    /**
     * {@link #orderFrom} over every member, then the members with no share (weight ≤ 0: standbys, never first but a
     * last resort) in their given order: the whole order a weighted group fails over in.
     */
    public List<String> orderWithStandbys(long cursor) {
        List<String> out = new ArrayList<>(orderFrom(cursor, m -> true));
        weights.keySet().forEach(m -> {
            if (!out.contains(m)) {
                out.add(m);
            }
        });
        return out;
    }

    /**
     * The failover order for this request: {@link #pick} first, then the other available positive-weight members
     * by weight descending (the given order on ties), as Trifrost's {@code weighted} strategy orders failover.
     */
    public List<String> orderFrom(long cursor, Predicate<String> available) {
        Optional<String> first = pick(cursor, available);
        if (first.isEmpty()) {
            return List.of();
        }
        List<String> out = new ArrayList<>();
        out.add(first.get());
        for (String m : byWeight) {
            if (!m.equals(first.get()) && available.test(m)) {
                out.add(m);
            }
        }
        return List.copyOf(out);
    }

    /**
     * Every positive-weight member in the order the sequence reaches it from position {@code cursor} (modulo the
     * period, wrapping): the member at the cursor, then each other member at its first turn after it. Over
     * consecutive cursors the first member follows the weights exactly, as {@link #pick} does, and the rest is a
     * failover order that keeps to the rotation. This is how a strategy that ranks by a measure breaks a tie among
     * members that may take a share: a rotation over every position would give a drained member's turn to the
     * member after it. Empty when every weight is ≤ 0.
     */
    public List<String> rotationFrom(long cursor) {
        if (sequence.length == 0) {
            return List.of();
        }
        int start = (int) Math.floorMod(cursor, (long) sequence.length);
        Set<String> seen = new LinkedHashSet<>();
        for (int i = 0; i < sequence.length && seen.size() < byWeight.size(); i++) {
            seen.add(sequence[(start + i) % sequence.length]);
        }
        return List.copyOf(seen);
    }

    private static int[] reduce(List<Integer> weights) {
        int g = 0;
        long sum = 0;
        for (int w : weights) {
            g = gcd(g, w);
            sum += w;
        }
        int[] out = new int[weights.size()];
        if (weights.isEmpty()) {
            return out;
        }
        long reducedSum = sum / g;
        for (int i = 0; i < out.length; i++) {
            int w = weights.get(i) / g;
            if (reducedSum > MAX_PERIOD) {
                w = (int) Math.max(1, Math.round((double) w * MAX_PERIOD / reducedSum));
            }
            out[i] = w;
        }
        return out;
    }

    private static String[] build(List<String> members, int[] w) {
        int total = 0;
        for (int x : w) {
            total += x;
        }
        String[] seq = new String[total];
        long[] current = new long[w.length];
        for (int step = 0; step < total; step++) {
            int best = -1;
            for (int i = 0; i < w.length; i++) {
                current[i] += w[i];
                if (best < 0 || current[i] > current[best]) {
                    best = i;
                }
            }
            current[best] -= total;
            seq[step] = members.get(best);
        }
        return seq;
    }

    private static int gcd(int a, int b) {
        while (b != 0) {
            int t = a % b;
            a = b;
            b = t;
        }
        return a;
    }
}
