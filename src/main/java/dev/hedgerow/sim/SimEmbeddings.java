package dev.hedgerow.sim;

import java.util.Locale;

/**
 * Deterministic embeddings: a signed hashed bag of words (the "hashing trick"), L2-normalised, so texts that share
 * words have a high cosine similarity and unrelated texts a low one. Stateless and thread-safe.
 */
public final class SimEmbeddings {

    public static final int DIMENSION = 64;

    private SimEmbeddings() {
    }

    public static float[] embed(String text, int dimension) {
        float[] v = new float[dimension];
        for (String w : (text == null ? "" : text).toLowerCase(Locale.ROOT).split("[^\\p{L}\\p{N}]+")) {
            if (w.isEmpty()) {
                continue;
            }
            long h = SimText.mix(17, SimText.hash(w));
            int idx = (int) Math.floorMod(h, (long) dimension);
            v[idx] += ((h >>> 63) == 0) ? 1f : -1f;
        }
        double norm = 0;
        for (float x : v) {
            norm += x * x;
        }
        if (norm > 0) {
            float inv = (float) (1 / Math.sqrt(norm));
            for (int i = 0; i < dimension; i++) {
                v[i] *= inv;
            }
        }
        return v;
    }

    public static double cosine(float[] a, float[] b) {
        double dot = 0, na = 0, nb = 0;
        for (int i = 0; i < a.length; i++) {
            dot += a[i] * b[i];
            na += a[i] * a[i];
            nb += b[i] * b[i];
        }
        return na == 0 || nb == 0 ? 0 : dot / Math.sqrt(na * nb);
    }
}
