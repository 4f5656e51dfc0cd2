package dev.hedgerow.dispatch;

import org.junit.jupiter.api.Test;

import static org.junit.jupiter.api.Assertions.assertEquals;

class OverlapTrimmerTest {

    @Test
    void dropsTextTheNewRouteRepeats() {
        OverlapTrimmer t = new OverlapTrimmer("The quick brown fox jumps", 16, 4);
        String out = t.feed("fox jumps over the lazy dog");
        assertEquals(" over the lazy dog", out);
    }

    @Test
    void holdsTextUntilTheWindowIsFull() {
        OverlapTrimmer t = new OverlapTrimmer("hello wor", 16, 3);
        assertEquals("", t.feed("wor"));
        assertEquals("", t.feed("ld and "));
        assertEquals("ld and more text", t.feed("more text") + t.flush());
    }

    @Test
    void countsThePiecesThatReachedTheClient() {
        // five deltas held; the first two only repeat delivered text, the third straddles the cut
        OverlapTrimmer t = new OverlapTrimmer("the river runs", 20, 4);
        for (String piece : new String[] {"river", " ru", "ns fa", "st and", ""}) {
            assertEquals("", t.feed(piece));
        }
        assertEquals(" fast and far", t.feed(" far"));
        assertEquals(3, t.releasedPieces(), "' fa' of the third, the fourth, the last; the empty one is none");
    }

    @Test
    void keepsACoincidentalShortMatch() {
        OverlapTrimmer t = new OverlapTrimmer("ends with a", 8, 4);
        assertEquals("a new sentence", t.feed("a new sentence"));
    }

    /** A delivery shorter than the minimum, repeated whole: the model started over, it did not coincide. */
    @Test
    void dropsAShortDeliveryRepeatedWhole() {
        OverlapTrimmer t = new OverlapTrimmer("\u65e5\u672c\u8a9e", 8, 4);
        assertEquals("", t.feed("\u65e5\u672c\u8a9e bri"));
        assertEquals(" bright", t.feed("ght"));
        OverlapTrimmer end = new OverlapTrimmer("a long delivery that ends in ab", 4, 4);
        assertEquals("ab c", end.feed("ab c"), "only the whole delivery counts below the minimum, not its end");
    }

    @Test
    void flushTrimsWhatIsHeldAtTheEnd() {
        OverlapTrimmer t = new OverlapTrimmer("abc caf\u00e9 \ud83c\udf3f", 64, 4);
        t.feed("caf\u00e9 \ud83c\udf3f!");
        assertEquals("!", t.flush());
    }

    /** A provider that stopped on a stop sequence the delivered end began re-emitted the overlap up to it only. */
    @Test
    void anOverlapCutShortByTheProvidersStopIsAllOverlap() {
        java.util.List<String> stops = java.util.List.of("END");
        OverlapTrimmer t = new OverlapTrimmer("the lazy dog EN", 64, 4, stops);
        assertEquals("", t.feed(" lazy dog "));
        assertEquals("", t.flush(true));
        assertEquals(0, t.releasedPieces());

        OverlapTrimmer natural = new OverlapTrimmer("the lazy dog EN", 64, 4, stops);
        natural.feed(" lazy dog ");
        assertEquals(" lazy dog ", natural.flush(false), "not a stop finish: the rule does not apply");

        OverlapTrimmer notAPrefix = new OverlapTrimmer("the lazy dog XN", 64, 4, stops);
        notAPrefix.feed(" lazy dog ");
        assertEquals(" lazy dog ", notAPrefix.flush(true), "the delivered end begins no stop");

        OverlapTrimmer newText = new OverlapTrimmer("the lazy dog EN", 64, 4, stops);
        newText.feed(" lazy cat ");
        assertEquals(" lazy cat ", newText.flush(true), "text the delivery does not hold before the stop is new");

        OverlapTrimmer tooShort = new OverlapTrimmer("the lazy dog EN", 64, 4, stops);
        tooShort.feed("g ");
        assertEquals("g ", tooShort.flush(true), "a coincidental short match is kept");
    }

    @Test
    void passesEverythingAfterTheDecision() {
        OverlapTrimmer t = new OverlapTrimmer("xyz", 4, 4);
        t.feed("abcd");
        assertEquals("efg", t.feed("efg"));
    }
}
