package dev.hedgerow.prober;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.MissingNode;
import com.fasterxml.jackson.databind.node.TextNode;
import dev.hedgerow.api.Json;
import org.junit.jupiter.api.Test;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.util.Base64;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** The verification verdict: known answer (or, for an embeddings route, a usable embedding) and the model claimed. */
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

    // ---- an embeddings route's answer ----

    static JsonNode json(String s) {
        try {
            return Json.parse(s);
        } catch (java.io.IOException e) {
            throw new AssertionError(e);
        }
    }

    static String base64(float... v) {
        ByteBuffer buf = ByteBuffer.allocate(4 * v.length).order(ByteOrder.LITTLE_ENDIAN);
        for (float f : v) {
            buf.putFloat(f);
        }
        return Base64.getEncoder().encodeToString(buf.array());
    }

    @Test
    void passesAnEmbeddingOfFiniteNumbersFromTheClaimedModel() {
        assertEquals("pass", Prober.KnownAnswer.judgeEmbedding("embed-a", "embed-a", json("[0.1, -0.25, 3, 0]")));
        assertEquals("pass", Prober.KnownAnswer.judgeEmbedding("openai/text-embedding-3-small",
                "text-embedding-3-small", json("[0.5]")));
    }

    @Test
    void passesABase64EmbeddingOfLittleEndianFloats() {
        assertEquals("pass", Prober.KnownAnswer.judgeEmbedding("embed-a", "embed-a",
                new TextNode(base64(0.1f, -0.5f, 1f))));
    }

    @Test
    void failsAnAnswerWithNoUsableEmbedding() {
        assertEquals("fail:answer has no embedding",
                Prober.KnownAnswer.judgeEmbedding("embed-a", "embed-a", MissingNode.getInstance()));
        assertEquals("fail:answer has no embedding", Prober.KnownAnswer.judgeEmbedding("embed-a", "embed-a",
                json("null")));
        assertEquals("fail:embedding is empty", Prober.KnownAnswer.judgeEmbedding("embed-a", "embed-a", json("[]")));
        assertEquals("fail:embedding has a value that is not a finite number",
                Prober.KnownAnswer.judgeEmbedding("embed-a", "embed-a", json("[0.1, \"x\"]")));
        assertEquals("fail:embedding has a value that is not a finite number",
                Prober.KnownAnswer.judgeEmbedding("embed-a", "embed-a", json("[0.1, 1e999]")));
        assertEquals("fail:embedding has a value that is not a finite number",
                Prober.KnownAnswer.judgeEmbedding("embed-a", "embed-a", new TextNode(base64(0.1f, Float.NaN))));
        assertEquals("fail:embedding is neither numbers nor base64",
                Prober.KnownAnswer.judgeEmbedding("embed-a", "embed-a", new TextNode("not base64!")));
        assertEquals("fail:base64 embedding is not whole float32 values",
                Prober.KnownAnswer.judgeEmbedding("embed-a", "embed-a", new TextNode("AAAAAAA=")));
        assertEquals("fail:base64 embedding is not whole float32 values",
                Prober.KnownAnswer.judgeEmbedding("embed-a", "embed-a", new TextNode("")));
        assertEquals("fail:embedding is neither numbers nor base64",
                Prober.KnownAnswer.judgeEmbedding("embed-a", "embed-a", json("{\"values\": [1]}")));
    }

    @Test
    void failsAnEmbeddingFromAnotherModelOrNamingNone() {
        assertEquals("fail:served model 'embed-cheap' is not 'embed-a'",
                Prober.KnownAnswer.judgeEmbedding("embed-a", "embed-cheap", json("[0.1]")));
        assertEquals("fail:response names no model", Prober.KnownAnswer.judgeEmbedding("embed-a", null, json("[0.1]")));
        assertEquals("fail:response names no model", Prober.KnownAnswer.judgeEmbedding("embed-a", " ", json("[0.1]")));
    }
}
