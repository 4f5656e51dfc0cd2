package dev.hedgerow.routing;

/**
 * The compact text form shared by the routing blocks' {@code encode()}/{@code decode(String)}: a short type tag
 * with a format version, then numbers, all separated by {@code ;} (for example {@code pe1;412.5;1718000000000;7}).
 * Decoding never throws: a missing, foreign or damaged string yields {@code null} and the caller starts fresh,
 * because everything in the shared store can be lost and rebuilt from traffic. Stateless; thread-safe.
 */
final class Codec {
    private Codec() {
    }

    static String encode(String tag, double... values) {
        StringBuilder sb = new StringBuilder(tag);
        for (double v : values) {
            sb.append(';').append(format(v));
        }
        return sb.toString();
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
