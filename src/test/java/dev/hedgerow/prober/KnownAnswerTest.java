package dev.hedgerow.prober;

import org.junit.jupiter.api.Test;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** The verification verdict: known answer and the model the response claims. */
class KnownAnswerTest {

    @Test
    void passesTheNonceFromTheClaimedModel() {
        assertEquals("pass", Prober.KnownAnswer.judge("hr-1a", "kimi-k2", "kimi-k2", "hr-1a"));
    }

    @Test
    void acceptsAProviderNamespacedModelName() {
        assertEquals("pass", Prober.KnownAnswer.judge("hr-1a", "accounts/fireworks/models/kimi-k2", "kimi-k2",
                " hr-1a."));
    }

    @Test
    void failsAWrongAnswer() {
        assertEquals("fail:wrong answer to the known-answer check",
                Prober.KnownAnswer.judge("hr-1a", "kimi-k2", "kimi-k2", "42"));
    }

    @Test
    void failsAnotherModel() {
        String v = Prober.KnownAnswer.judge("hr-1a", "kimi-k2", "llama-8b", "hr-1a");
        assertTrue(v.startsWith("fail:served model 'llama-8b'"), v);
    }

    @Test
    void failsAnAnswerNamingNoModel() {
        assertEquals("fail:response names no model", Prober.KnownAnswer.judge("hr-1a", "kimi-k2", null, "hr-1a"));
    }

    @Test
    void acceptsADatedSnapshotOfTheClaimedModel() {
        assertEquals("pass", Prober.KnownAnswer.judge("hr-1a", "gpt-4o-mini", "gpt-4o-mini-2024-07-18", "hr-1a"));
        assertEquals("pass", Prober.KnownAnswer.judge("hr-1a", "claude-3-5-sonnet", "claude-3-5-sonnet-20241022",
                "hr-1a"));
        assertEquals("pass", Prober.KnownAnswer.judge("hr-1a", "gpt-4", "gpt-4-0613", "hr-1a"));
        assertEquals("pass", Prober.KnownAnswer.judge("hr-1a", "openai/gpt-4o-mini", "gpt-4o-mini-2024-07-18",
                "hr-1a"));
    }

    @Test
    void failsAnotherModelWhateverFollowsTheName() {
        for (String other : new String[]{"gpt-4o-mini-high", "gpt-4o", "gpt-4o-mini-2024-13-18", "gpt-4o-mini-8000",
                "gpt-4o-mini2024-07-18", "gpt-4o-mini-2024-07-18-preview", "gpt-4o-mini-12345"}) {
            String v = Prober.KnownAnswer.judge("hr-1a", "gpt-4o-mini", other, "hr-1a");
            assertTrue(v.startsWith("fail:served model"), other + ": " + v);
        }
    }
}
