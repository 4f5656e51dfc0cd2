package dev.hedgerow.routing;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;
import org.junit.jupiter.api.Test;

import java.util.List;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

class PrefixHasherTest {
    private static final ObjectMapper JSON = new ObjectMapper();
    private final PrefixHasher hasher = PrefixHasher.defaults(TokenCounter.shared());

    private static int[] ids(int n, int salt) {
        int[] out = new int[n];
        for (int i = 0; i < n; i++) {
            out[i] = i * 31 + salt;
        }
        return out;
    }

    @Test
    void onlyFullBlocksAreHashed() {
        assertEquals(0, hasher.hashTokens("m", ids(63, 0)).size());
        assertEquals(1, hasher.hashTokens("m", ids(64, 0)).size());
        assertEquals(2, hasher.hashTokens("m", ids(191, 0)).size());
    }

    @Test
    void utf8LengthCountsEncodedBytes() {
        for (String t : List.of("", "plain ascii", "caf\u00e9", "\u4f60\u597d", "\ud83d\ude00 emoji")) {
            assertEquals(t.getBytes(java.nio.charset.StandardCharsets.UTF_8).length, PrefixHasher.utf8Length(t), t);
        }
        // an unpaired surrogate is encoded as '?': counting it as 3 bytes only errs towards tokenizing
        assertTrue(PrefixHasher.utf8Length("lone \ud83d x") >= "lone \ud83d x".getBytes(java.nio.charset.StandardCharsets.UTF_8).length);
    }

    @Test
    void textsTooShortForOneBlockHashAsTheTokenizerWould() {
        // short byte-wise but long token-wise: single-byte tokens never make a text under 64 bytes a full block
        String dense = "\u00e9\u4f60\ud83d\ude00 ".repeat(7);
        for (String t : List.of("tiny", "a ".repeat(31), dense, "\ud83d\ude00".repeat(16), "q".repeat(63))) {
            assertEquals(hasher.hashTokens("m", TokenCounter.shared().encodeLeading(t, 64 * 16 + 8)),
                    hasher.hashText("m", t), t);
        }
        assertTrue(!hasher.hashText("m", "\ud83d\ude00\u4f60 ".repeat(40)).isEmpty());
    }

    /** A huge run of one letter (one piece of the tokenizer's split, encoded whole) is read from its head only. */
    @Test
    void aHugeTextIsTokenizedFromItsHeadOnly() {
        int max = 64 * 16 + 8;
        assertEquals(max * PrefixHasher.HEAD_CHARS_PER_TOKEN, PrefixHasher.head("x".repeat(8_000_000), max).length());
        String shortText = "a ".repeat(200);
        assertEquals(shortText, PrefixHasher.head(shortText, max));
        String pairs = "a" + "\ud83d\ude00".repeat(max * 8);
        String head = PrefixHasher.head(pairs, max);
        assertEquals(max * 8 - 1, head.length(), "never ends between the halves of a pair");
        String huge = "x".repeat(8_000_000);
        assertEquals(hasher.hashTokens("m", TokenCounter.shared().encodeLeading(PrefixHasher.head(huge, max), max)),
                hasher.hashText("m", huge));
        assertEquals(hasher.hashText("m", huge.substring(0, max * 8)), hasher.hashText("m", huge),
                "texts that share their head hash the same");
        // a run of dashes is 64 characters a token: its head holds 2 blocks, the whole run 16
        assertEquals(hasher.hashText("m", "-".repeat(max * 8)), hasher.hashText("m", "-".repeat(2_000_000)));
    }

    @Test
    void atMostMaxBlocksAreHashed() {
        assertEquals(16, hasher.hashTokens("m", ids(64 * 40, 0)).size());
    }

    @Test
    void hashesAreSixteenHexDigits() {
        for (String h : hasher.hashTokens("m", ids(640, 0))) {
            assertTrue(h.matches("[0-9a-f]{16}"), h);
        }
    }

    @Test
    void promptsSharingALeadingPrefixShareExactlyThoseBlockHashes() {
        int[] a = ids(64 * 5, 0);
        int[] b = a.clone();
        b[64 * 3 + 10] = -1;   // differ inside block 4
        List<String> ha = hasher.hashTokens("m", a);
        List<String> hb = hasher.hashTokens("m", b);
        assertEquals(ha.subList(0, 3), hb.subList(0, 3));
        assertNotEquals(ha.get(3), hb.get(3));
        assertNotEquals(ha.get(4), hb.get(4), "chained: every later block differs too");
    }

    @Test
    void namespaceSeparatesOtherwiseEqualPrompts() {
        assertNotEquals(hasher.hashTokens("kimi3", ids(64, 0)), hasher.hashTokens("glm5", ids(64, 0)));
    }

    @Test
    void requestsWithTheSameSystemPromptShareLeadingHashes() throws Exception {
        String system = "You are a meticulous assistant. ".repeat(60);
        ObjectNode one = (ObjectNode) JSON.readTree("{\"messages\":[]}");
        one.withArray("messages").addObject().put("role", "system").put("content", system);
        ObjectNode two = one.deepCopy();
        one.withArray("messages").addObject().put("role", "user").put("content", "What is 2+2?");
        two.withArray("messages").addObject().put("role", "user").put("content", "Name three rivers.");

        List<String> h1 = hasher.hashRequest("m", one);
        List<String> h2 = hasher.hashRequest("m", two);
        assertTrue(h1.size() >= 5, "system prompt spans several blocks");
        assertEquals(h1.subList(0, 5), h2.subList(0, 5));
    }

    @Test
    void imagesAreHashedByTheirUrlNotTokenised() throws Exception {
        JsonNode req = JSON.readTree("""
                {"messages":[{"role":"user","content":[{"type":"image_url","image_url":{"url":"data:image/png;base64,%s"}}]}]}
                """.formatted("A".repeat(1_000_000)));
        String rendered = PrefixHasher.render(req);
        assertTrue(rendered.length() < 100, rendered);
    }
}
