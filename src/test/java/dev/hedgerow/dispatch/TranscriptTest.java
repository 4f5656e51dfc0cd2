package dev.hedgerow.dispatch;

import dev.hedgerow.routing.TokenCounter;
import org.junit.jupiter.api.Test;

import static org.junit.jupiter.api.Assertions.assertEquals;

/** How the tokens delivered are counted at each break ({@link Transcript#counted}), part by part. */
class TranscriptTest {
    static final TokenCounter TOKENS = TokenCounter.shared();

    static void deliver(Transcript t, String... deltas) {
        for (String d : deltas) {
            t.content.append(d);
            t.deltas++;
        }
    }

    /** A part of three-token chunks after one-token deltas: its undercount is found, though the whole's ratio hides it. */
    @Test
    void aPartOfSeveralTokensAChunkIsCountedOnItsOwn() {
        Transcript t = new Transcript();
        deliver(t, "one", " two", " three", " four", " five", " six", " seven", " eight", " nine", " ten");
        t.counted(TOKENS::countText);
        assertEquals(0, t.deltaUndercount);
        deliver(t, " eleven twelve thirteen", " fourteen fifteen sixteen", " seventeen eighteen nineteen");
        t.counted(TOKENS::countText);
        assertEquals(6, t.deltaUndercount);
        assertEquals(19, t.answerTokens());
        t.counted(TOKENS::countText);
        assertEquals(6, t.deltaUndercount, "a second count at the same break adds nothing");
    }

    /**
     * A short part the gateway's tokenizer counts a little more of than the provider (two CJK words, one token each to
     * a Qwen-style tokenizer, two to o200k) is the tokenizers differing, not several tokens a chunk (review29).
     */
    @Test
    void aShortPartCountedALittleMoreIsNotAnUndercount() {
        Transcript t = new Transcript();
        deliver(t, "The", " quick", " brown", " fox", " jumps", " over", " the", " lazy", " dog");
        t.counted(TOKENS::countText);
        deliver(t, "人工智能", "研究人员");
        t.counted(TOKENS::countText);
        assertEquals(0, t.deltaUndercount);
    }
}
