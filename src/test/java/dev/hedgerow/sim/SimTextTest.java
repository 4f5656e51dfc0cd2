package dev.hedgerow.sim;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.hedgerow.routing.TokenCounter;
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
    void promptTokensAreBpeTokensWithChatFraming() {
        // reply priming 3, then per message 4 (framing and role) + its o200k tokens: "one two three" is 3
        assertEquals(3 + (4 + 3) + (4 + 0), SimText.estimateTokens(List.of("one two three", "")));
        // three words, but seven BPE tokens: the count follows the tokenizer, not whitespace
        assertEquals(3 + 4 + 7, SimText.estimateTokens(List.of("w1234 w567 w89")));
    }

    @Test
    void promptTokensOfAPlainConversationAreWhatTheGatewayCounts() {
        List<String> texts = List.of("You are terse.", "Tell me about the hedgerow, 日本語 🌿", "It is green.",
                "w1234 w567 and more?");
        ArrayNode messages = SimJson.MAPPER.createArrayNode();
        String[] roles = {"system", "user", "assistant", "user"};
        for (int i = 0; i < texts.size(); i++) {
            messages.addObject().put("role", roles[i]).put("content", texts.get(i));
        }
        ObjectNode body = SimJson.MAPPER.createObjectNode().put("model", "m");
        body.set("messages", messages);
        assertEquals(TokenCounter.shared().countRequest(body), SimText.estimateTokens(texts));
    }
}
