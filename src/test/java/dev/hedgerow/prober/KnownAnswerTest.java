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
}
