package dev.hedgerow.routing;

/**
 * The compact text form shared by the routing blocks' {@code encode()}/{@code decode(String)}: a short type tag
 * with a format version, then numbers, all separated by {@code ;} (for example {@code pe1;412.5;1718000000000;7}).
 * Decoding never throws: a missing, foreign or damaged string yields {@code null} and the caller starts fresh,
 * because everything in the shared store can be lost and rebuilt from traffic. Thread-safe.
 *
 * <p>The codec remembers its last few decodes and encodes ({@link #RECENT} slots of a {@link RecentByString},
 * shared by all threads): one request reads the same model string several times (ranking, then learning from it),
 * a cached snapshot serves the same strings to many requests, and the string one event loop just wrote is the one
 * the other reads next, so most decodes skip the number parsing.
 */
final class Codec {
    static final int RECENT = 64;

    /** Numbers decoded (or encoded) under a tag; the array is never changed once remembered. */
    private record Decoded(String tag, double[] values) {
    }

    private static final RecentByString<Decoded> RECENT_DECODES = new RecentByString<>(RECENT);

    private Codec() {
    }

    /** Encodes, and remembers the numbers for the next decode of the string (the next ranking's). */
    static String encode(String tag, double... values) {
        StringBuilder sb = new StringBuilder(tag);
        for (double v : values) {
            sb.append(';').append(format(v));
        }
        String encoded = sb.toString();
        double[] exact = tag.indexOf(';') < 0 ? decodable(values) : null;
        if (exact != null) {
            remember(encoded, tag, exact);
        }
        return encoded;
    }

    /** A copy of {@code values} when each parses back from its text exactly as it is, else null. */
    private static double[] decodable(double[] values) {
        for (double v : values) {
            if (!Double.isFinite(v) || v == 0 && Double.doubleToRawLongBits(v) != 0) {
                return null; // not finite: decode refuses it; -0.0 is written "0" and reads back as 0.0
            }
        }
        return values.clone();
    }

    private static void remember(String encoded, String tag, double[] values) {
        RECENT_DECODES.put(encoded, new Decoded(tag, values));
    }

    /** Writes integral values without a fraction, everything else so that it parses back exactly. */
    static String format(double v) {
        if (v == Math.rint(v) && Math.abs(v) < 1e15) {
            return Long.toString((long) v);
        }
        return Double.toString(v);
    }

    /**
     * @return the {@code count} finite numbers after {@code tag}, or {@code null} when the string is not exactly
     *         that (wrong tag or version, wrong field count, a field that is not a finite number)
     */
    static double[] decode(String encoded, String tag, int count) {
        if (encoded == null || encoded.length() > 4096) {
            return null;
        }
        Decoded seen = RECENT_DECODES.get(encoded);
        if (seen != null && seen.tag.equals(tag) && seen.values.length == count) {
            return seen.values.clone();
        }
        double[] out = parse(encoded, tag, count);
        if (out != null) {
            remember(encoded, tag, out.clone());
        }
        return out;
    }

    /** The numbers parsed from the text, bypassing the memory (null as for {@link #decode}). */
    static double[] parse(String encoded, String tag, int count) {
        String[] parts = encoded.trim().split(";", -1);
        if (parts.length != count + 1 || !parts[0].equals(tag)) {
            return null;
        }
        double[] out = new double[count];
        try {
            for (int i = 0; i < count; i++) {
                double v = Double.parseDouble(parts[i + 1]);
                if (!Double.isFinite(v)) {
                    return null;
                }
                out[i] = v;
            }
        } catch (NumberFormatException e) {
            return null;
        }
        return out;
    }
}
