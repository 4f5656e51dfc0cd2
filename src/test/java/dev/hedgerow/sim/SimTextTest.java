package dev.hedgerow.sim;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.List;
import org.junit.jupiter.api.Test;

class SimTextTest {

    @Test
    void textIsDeterministicAndGrowsByPrefix() {
        String a = SimText.expected(1, "hello", 50);
        assertEquals(a, SimText.expected(1, "hello", 50));
        assertTrue(SimText.expected(1, "hello", 80).startsWith(a));
        assertNotEquals(a, SimText.expected(2, "hello", 50));
        assertNotEquals(a, SimText.expected(1, "hello!", 50));
    }

    @Test
    void tokensCarryTheirLeadingSpaceAndIncludeMultiByteWords() {
        List<String> t = SimText.tokens(1, "hello", 200);
        assertTrue(!t.get(0).startsWith(" ") && t.subList(1, t.size()).stream().allMatch(s -> s.startsWith(" ")));
        String all = String.join("", t);
        assertTrue(all.codePoints().anyMatch(Character::isSupplementaryCodePoint), "has a 4-byte character");
        assertTrue(all.codePoints().anyMatch(c -> c > 127 && c < 0x800), "has a 2-byte character");
    }

    @Test
    void promptTokensAreEstimatedFromWords() {
        assertEquals(4 + 3 + 4, SimText.estimateTokens(List.of("one two three", "")));
    }
}
