package dev.hedgerow.dispatch;

import org.junit.jupiter.api.Test;

import static org.junit.jupiter.api.Assertions.assertFalse;
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
}
