package dev.hedgerow.routing;

import java.util.ArrayList;
import java.util.List;

/**
 * The codec of a route's last few measured (prompt tokens, time to first token) points, from live traffic and
 * probes, kept in the {@value LearnedModels#TTFT_SAMPLES} blob so the console can plot them against the learned TTFT
 * line. {@link LearnedModels#learnFirstToken} appends to it in the same batch as the models; points are
 * illustration, not state routing depends on. Stateless; thread-safe.
 */
public final class TtftSampleLog {
    /** Points kept per route. */
    public static final int KEEP = 40;

    /** One measured point. */
    public record Sample(int promptTokens, long ttftMs) {
    }

    private TtftSampleLog() {
    }

    /** {@code encoded} with one more point, dropping the oldest beyond {@code keep}. */
    public static String append(String encoded, int promptTokens, long ttftMs, int keep) {
        List<Sample> points = decode(encoded);
        points.add(new Sample(promptTokens, ttftMs));
        return encode(points.subList(Math.max(0, points.size() - keep), points.size()));
    }

    /** {@code prompt:ms} pairs, oldest first, comma-separated. */
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
