package dev.hedgerow.routing;

import org.junit.jupiter.api.Test;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

class CosineTest {
    @Test
    void parallelVectorsAreOneWhateverTheirLength() {
        assertEquals(1, Cosine.similarity(new float[]{1, 2, 3}, new float[]{2, 4, 6}), 1e-12);
    }

    @Test
    void orthogonalVectorsAreZeroAndOppositeOnesMinusOne() {
        assertEquals(0, Cosine.similarity(new float[]{1, 0}, new float[]{0, 5}), 1e-12);
        assertEquals(-1, Cosine.similarity(new double[]{1, 1}, new double[]{-2, -2}), 1e-12);
    }

    @Test
    void aZeroVectorIsSimilarToNothing() {
        assertEquals(0, Cosine.similarity(new float[]{0, 0}, new float[]{1, 1}));
    }

    @Test
    void vectorsOfDifferentLengthAreRejected() {
        assertThrows(IllegalArgumentException.class, () -> Cosine.similarity(new float[]{1}, new float[]{1, 2}));
    }
}
