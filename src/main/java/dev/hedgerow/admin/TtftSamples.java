package dev.hedgerow.admin;

import dev.hedgerow.state.RouteSnapshot;
import dev.hedgerow.state.StateStore;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;

/**
 * The last few measured (prompt tokens, time to first token) points of each route, from live traffic and probes,
 * kept in a small route blob so the console can plot them against the learned TTFT line. Like the learned models,
 * an instance chains its own samples from its newest local copy and the last writer wins across instances (only
 * points are lost; they are illustration, not state routing depends on). Thread-safe.
 */
public final class TtftSamples {
    /** The route blob holding the points: {@code prompt:ms} pairs, oldest first, comma-separated. */
    public static final String BLOB = "ttft_samples";
    public static final int DEFAULT_KEEP = 40;
    private static final Duration TTL = Duration.ofDays(7);

    /** One measured point. */
    public record Sample(int promptTokens, long ttftMs) {
    }

    private final StateStore store;
    private final int keep;
    private final Map<String, String> latest = new ConcurrentHashMap<>();

    public TtftSamples(StateStore store, int keep) {
        this.store = store;
        this.keep = keep;
    }

    /** Appends a point to the route's blob (fire-and-forget), dropping the oldest beyond the limit. */
    public void record(RouteSnapshot base, int promptTokens, long ttftMs) {
        String next = latest.compute(base.routeId(), (k, local) -> {
            List<Sample> points = decode(local != null ? local : base.blob(BLOB).orElse(null));
            points.add(new Sample(promptTokens, ttftMs));
            while (points.size() > keep) {
                points.remove(0);
            }
            return encode(points);
        });
        store.putRouteBlob(base.routeId(), BLOB, next, TTL).subscribe().with(v -> { }, t -> { });
    }

    public static String encode(List<Sample> points) {
        StringBuilder sb = new StringBuilder();
        for (Sample s : points) {
            if (!sb.isEmpty()) {
                sb.append(',');
            }
            sb.append(s.promptTokens()).append(':').append(s.ttftMs());
        }
        return sb.toString();
    }

    /** The points in {@code encoded}, skipping anything damaged; never throws. */
    public static List<Sample> decode(String encoded) {
        List<Sample> out = new ArrayList<>();
        if (encoded == null || encoded.isBlank() || encoded.length() > 16_384) {
            return out;
        }
        for (String part : encoded.split(",")) {
            int colon = part.indexOf(':');
            if (colon <= 0) {
                continue;
            }
            try {
                int p = Integer.parseInt(part.substring(0, colon).trim());
                long ms = Long.parseLong(part.substring(colon + 1).trim());
                if (p >= 0 && ms >= 0) {
                    out.add(new Sample(p, ms));
                }
            } catch (NumberFormatException e) {
                // a damaged point is skipped: the rest still plot
            }
        }
        return out;
    }
}
