package dev.hedgerow.routing;

/**
 * Cosine similarity of two embedding vectors: {@code a·b / (|a|·|b|)}, in [−1, 1], accumulated in double
 * precision. A zero vector is similar to nothing (0). Vectors of different length come from different embedding
 * models and cannot be compared: {@link IllegalArgumentException}. Stateless; thread-safe.
 */
public final class Cosine {
    private Cosine() {
    }

    public static double similarity(float[] a, float[] b) {
        if (a.length != b.length) {
            throw new IllegalArgumentException("embedding lengths differ: " + a.length + " vs " + b.length);
        }
        double dot = 0;
        double na = 0;
        double nb = 0;
        for (int i = 0; i < a.length; i++) {
            dot += (double) a[i] * b[i];
            na += (double) a[i] * a[i];
            nb += (double) b[i] * b[i];
        }
        return finish(dot, na, nb);
    }

    public static double similarity(double[] a, double[] b) {
        if (a.length != b.length) {
            throw new IllegalArgumentException("embedding lengths differ: " + a.length + " vs " + b.length);
        }
        double dot = 0;
        double na = 0;
        double nb = 0;
        for (int i = 0; i < a.length; i++) {
            dot += a[i] * b[i];
            na += a[i] * a[i];
            nb += b[i] * b[i];
        }
        return finish(dot, na, nb);
    }

    private static double finish(double dot, double na, double nb) {
        if (na == 0 || nb == 0) {
            return 0;
        }
        double s = dot / (Math.sqrt(na) * Math.sqrt(nb));
        return Math.max(-1, Math.min(1, s));   // rounding can step just outside [-1, 1]
    }
}
