package dev.hedgerow.routing;

/**
 * Euclidean (L2) distance of two embedding vectors, {@code √Σ(aᵢ − bᵢ)²} (not squared), accumulated in double
 * precision. For unit-length vectors it is {@code √(2 − 2·cosine)}, in [0, 2]. Vectors of different length come
 * from different embedding models and cannot be compared: {@link IllegalArgumentException}. Stateless; thread-safe.
 */
public final class Euclidean {
    private Euclidean() {
    }

    public static double distance(float[] a, float[] b) {
        if (a.length != b.length) {
            throw new IllegalArgumentException("embedding lengths differ: " + a.length + " vs " + b.length);
        }
        double sum = 0;
        for (int i = 0; i < a.length; i++) {
            double d = (double) a[i] - b[i];
            sum += d * d;
        }
        return Math.sqrt(sum);
    }
}
