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
