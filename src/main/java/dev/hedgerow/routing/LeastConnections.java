package dev.hedgerow.routing;

import java.util.ArrayList;
import java.util.List;
import java.util.function.ToIntFunction;

/**
 * Weighted <b>least connections</b> (Kong's {@code least_connections}): members ordered by
 * {@code (inflight + 1) / weight} ascending, so the member with the most spare capacity for one more request comes
 * first and a weight-2 member carries twice the in-flight requests of a weight-1 member before it loses.
 * Ties break by a rotating cursor (position {@code cursor mod n} of the given list first, then the members after
 * it, wrapping), so equally loaded members share new requests instead of the first one taking them all.
 * Members with weight ≤ 0 come last (in the same rotation). Scores compare as exact fractions. Stateless;
 * thread-safe.
 */
public final class LeastConnections {
    private LeastConnections() {
    }

    /**
     * @param inflight live in-flight requests per member, fleet-wide (negative counts as 0)
     * @param cursor   any counter that advances per request (the group's round-robin counter)
     */
    public static List<String> order(List<String> members, ToIntFunction<String> inflight,
                                     ToIntFunction<String> weight, long cursor) {
        int n = members.size();
        List<Entry> entries = new ArrayList<>(n);
        for (int i = 0; i < n; i++) {
            String m = members.get(i);
            entries.add(new Entry(m, Math.max(0, inflight.applyAsInt(m)) + 1L, weight.applyAsInt(m),
                    (int) Math.floorMod(i - cursor, (long) n)));
        }
        entries.sort(LeastConnections::compare);
        List<String> out = new ArrayList<>(n);
        for (Entry e : entries) {
            out.add(e.member());
        }
        return List.copyOf(out);
    }

    private static int compare(Entry x, Entry y) {
        boolean xOff = x.weight() <= 0;
        boolean yOff = y.weight() <= 0;
        if (xOff != yOff) {
            return xOff ? 1 : -1;
        }
        if (!xOff) {
            // x.load / x.weight vs y.load / y.weight, cross-multiplied (both weights positive)
            int c = Long.compare(x.load() * y.weight(), y.load() * x.weight());
            if (c != 0) {
                return c;
            }
        }
        return Integer.compare(x.rotation(), y.rotation());
    }

    private record Entry(String member, long load, long weight, int rotation) {
    }
}
