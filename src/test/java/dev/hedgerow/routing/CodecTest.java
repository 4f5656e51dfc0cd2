package dev.hedgerow.routing;

import dev.hedgerow.testsupport.AtOnce;
import org.junit.jupiter.api.Test;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;

/** The shared text form, including the memory of recent decodes that all threads share. */
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
    void whatEncodeRemembersIsExactlyWhatAParseOfTheTextGives() {
        double[][] cases = {{0.1, 1e-300, 123456789.125}, {-0.0, 5}, {1e15, 1e16, -2.5}, {Double.MIN_VALUE, 7}};
        for (double[] values : cases) {
            String s = Codec.encode("t1", values);
            double[] remembered = Codec.decode(s, "t1", values.length);
            double[] parsed = Codec.parse(s, "t1", values.length);
            for (int i = 0; i < values.length; i++) {
                assertEquals(Double.doubleToRawLongBits(parsed[i]), Double.doubleToRawLongBits(remembered[i]), s);
            }
        }
        assertNull(Codec.decode(Codec.encode("t1", Double.NaN, 1), "t1", 2), "never a number decode refuses");
    }

    @Test
    void threadsSharingTheMemoryEachGetTheirOwnNumbers() throws Exception {
        assertEquals(0, AtOnce.failures(4, 20_000, n -> {
            double a = n;
            double[] back = Codec.decode(Codec.encode("t1", a, a + 0.25), "t1", 2);
            double[] other = Codec.decode(Codec.encode("t1", -a, 3), "t1", 2);
            return back[0] == a && back[1] == a + 0.25 && other[0] == -a && other[1] == 3;
        }));
    }
}
