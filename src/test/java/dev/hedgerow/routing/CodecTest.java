package dev.hedgerow.routing;

import org.junit.jupiter.api.Test;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;

/** The shared text form, including the per-thread memory of recent decodes. */
class CodecTest {

    @Test
    void decodesWhatItEncodes() {
        String s = Codec.encode("t1", 1, 2.5, -3e-7, 1718000000000.0);
        assertArrayEquals(new double[] {1, 2.5, -3e-7, 1718000000000.0}, Codec.decode(s, "t1", 4));
        assertArrayEquals(new double[] {1, 2.5, -3e-7, 1718000000000.0}, Codec.decode(s, "t1", 4), "again, remembered");
    }

    @Test
    void aRememberedDecodeIsTheCallersOwnCopy() {
        String s = Codec.encode("t1", 4, 5);
        double[] first = Codec.decode(s, "t1", 2);
        first[0] = 99;
        assertArrayEquals(new double[] {4, 5}, Codec.decode(s, "t1", 2));
        Codec.decode(s, "t1", 2)[1] = 77;
        assertArrayEquals(new double[] {4, 5}, Codec.decode(s, "t1", 2));
    }

    @Test
    void aRememberedStringIsStillCheckedForTagAndCount() {
        String s = Codec.encode("t1", 4, 5);
        Codec.decode(s, "t1", 2);
        assertNull(Codec.decode(s, "t2", 2), "another tag");
        assertNull(Codec.decode(s, "t1", 3), "another field count");
        assertArrayEquals(new double[] {4, 5}, Codec.decode(s, "t1", 2));
    }

    @Test
    void damagedOrForeignStringsDecodeToNullEveryTime() {
        for (int i = 0; i < 2; i++) {
            assertNull(Codec.decode("t1;1;x", "t1", 2));
            assertNull(Codec.decode("t1;1;NaN", "t1", 2));
            assertNull(Codec.decode("t1;1", "t1", 2));
            assertNull(Codec.decode(null, "t1", 2));
        }
    }

    @Test
    void stringsSharingASlotDoNotMixUp() {
        // more strings than slots: every one still decodes to its own numbers
        for (int round = 0; round < 2; round++) {
            for (int i = 0; i < Codec.RECENT * 4; i++) {
                assertArrayEquals(new double[] {i, i + 0.5}, Codec.decode(Codec.encode("t1", i, i + 0.5), "t1", 2));
            }
        }
    }

    @Test
    void whatTheEncodingThreadRemembersIsExactlyWhatAnotherThreadParses() throws Exception {
        double[][] cases = {{0.1, 1e-300, 123456789.125}, {-0.0, 5}, {1e15, 1e16, -2.5}, {Double.MIN_VALUE, 7}};
        for (double[] values : cases) {
            String s = Codec.encode("t1", values);
            double[] here = Codec.decode(s, "t1", values.length);
            java.util.concurrent.CompletableFuture<double[]> there = new java.util.concurrent.CompletableFuture<>();
            new Thread(() -> there.complete(Codec.decode(s, "t1", values.length))).start();
            double[] parsed = there.get(10, java.util.concurrent.TimeUnit.SECONDS);
            for (int i = 0; i < values.length; i++) {
                assertEquals(Double.doubleToRawLongBits(parsed[i]), Double.doubleToRawLongBits(here[i]), s);
            }
        }
        assertNull(Codec.decode(Codec.encode("t1", Double.NaN, 1), "t1", 2), "never a number decode refuses");
    }
}
