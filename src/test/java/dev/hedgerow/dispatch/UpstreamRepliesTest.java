package dev.hedgerow.dispatch;

import org.junit.jupiter.api.Test;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

class UpstreamRepliesTest {
    static boolean malformed(String chunk) {
        return UpstreamReplies.malformedChoice(UpstreamReplies.parse(chunk));
    }

    /** A first choice, or its delta, that is not an object is a malformed frame; an absent or null delta is not. */
    @Test
    void aChoiceOrDeltaThatIsNotAnObjectIsMalformed() {
        assertTrue(malformed("{\"choices\":[null]}"));
        assertTrue(malformed("{\"choices\":[7]}"));
        assertTrue(malformed("{\"choices\":[{\"index\":0,\"delta\":\"hello\"}]}"));
        assertTrue(malformed("{\"choices\":[{\"index\":0,\"delta\":[]}]}"));
        assertFalse(malformed("{\"choices\":[{\"index\":0,\"delta\":{\"content\":\"hi\"}}]}"));
        assertFalse(malformed("{\"choices\":[{\"index\":0,\"delta\":null,\"finish_reason\":\"stop\"}]}"));
        assertFalse(malformed("{\"choices\":[{\"index\":0,\"finish_reason\":\"stop\"}]}"));
        assertFalse(malformed("{\"choices\":[],\"usage\":{\"prompt_tokens\":1}}"));
        assertFalse(malformed("{\"usage\":{\"prompt_tokens\":1}}"));
    }

    static String zeroContent(String choices, String usage) {
        Attempt.Failure f = UpstreamReplies.unusableWhole(UpstreamReplies.parseWhole(("{\"id\":\"x\",\"object\":"
                + "\"chat.completion\",\"choices\":" + choices + ",\"usage\":" + usage + "}").getBytes(
                java.nio.charset.StandardCharsets.UTF_8)), () -> 1);
        return f == null ? null : f.errorClass();
    }

    static String stop(String message) {
        return "{\"index\":0,\"message\":" + message + ",\"finish_reason\":\"stop\"}";
    }

    /**
     * A whole answer that says it stopped with nothing in any choice, while its usage counts completion tokens, lost
     * its text (zero_content); one that holds anything is an answer, whatever field holds it (found by review5: a
     * refusal, content as parts, or a second choice's text were failed over as lost, and charged to their route).
     */
    @Test
    void aWholeAnswerIsLostOnlyWhenNoChoiceHoldsAnythingAndItsUsageCountsTokens() {
        String tokens = "{\"prompt_tokens\":20,\"completion_tokens\":10,\"total_tokens\":30}";
        assertEquals("zero_content", zeroContent("[" + stop("{\"role\":\"assistant\",\"content\":\"\"}") + "]",
                tokens));
        assertEquals("zero_content", zeroContent("[" + stop("{\"role\":\"assistant\",\"content\":null}") + "]",
                tokens));
        for (String answer : new String[]{
                "[" + stop("{\"role\":\"assistant\",\"content\":null,\"refusal\":\"I'm sorry, I cannot help.\"}")
                        + "]",
                "[" + stop("{\"role\":\"assistant\",\"content\":[{\"type\":\"text\",\"text\":\"Hello\"}]}") + "]",
                "[" + stop("{\"role\":\"assistant\",\"content\":\"\"}") + ","
                        + stop("{\"role\":\"assistant\",\"content\":\"Hello there\"}").replace("\"index\":0",
                        "\"index\":1") + "]",
                "[" + stop("{\"role\":\"assistant\",\"content\":null,\"audio\":{\"id\":\"a1\",\"data\":\"UklG\"}}")
                        + "]",
                "[" + stop("{\"role\":\"assistant\",\"content\":\"\",\"reasoning\":\"thought\"}") + "]"}) {
            assertNull(zeroContent(answer, tokens), answer);
        }
        // no tokens beyond reasoning and an end-of-sequence token: a model that truly said nothing
        assertNull(zeroContent("[" + stop("{\"role\":\"assistant\",\"content\":\"\"}") + "]",
                "{\"prompt_tokens\":20,\"completion_tokens\":1}"));
        assertNull(zeroContent("[" + stop("{\"role\":\"assistant\",\"content\":\"\"}") + "]",
                "{\"prompt_tokens\":20,\"completion_tokens\":9,\"completion_tokens_details\":{\"reasoning_tokens\":8}}"));
        assertNull(zeroContent("[" + stop("{\"role\":\"assistant\",\"content\":\"\"}").replace("\"stop\"",
                "\"length\"") + "]", tokens));
    }
}
