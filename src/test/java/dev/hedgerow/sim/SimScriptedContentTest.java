package dev.hedgerow.sim;

import com.fasterxml.jackson.databind.JsonNode;
import org.junit.jupiter.api.Test;

import java.util.LinkedHashMap;
import java.util.Map;

import static org.junit.jupiter.api.Assertions.assertEquals;

/**
 * A model's scripted content: a fixed reply in place of the seeded text (two routes answering one prompt
 * differently), and a judge's scores, answered by the keyword found in the request's last user message.
 */
class SimScriptedContentTest extends SimFixture {
    static final long SEED = 42;
    static final String PROMPT = "Tell me about the hedgerow";
    static final String REPLY = "GOOD hedgerows shelter birds";

    @Override
    SimConfig config() {
        Map<String, Integer> scores = new LinkedHashMap<>();
        scores.put("GOOD", 87);
        scores.put("BAD", 12);
        return SimConfig.of(SEED)
                .withModel("scripted", ModelScript.defaults().withReply(REPLY))
                .withModel("judge", ModelScript.defaults().withLength(6).withScores(scores));
    }

    static String content(String body) {
        return SimHttp.tree(body).path("choices").path(0).path("message").path("content").asText();
    }

    @Test
    void aScriptedReplyIsWrittenInPlaceOfTheSeededTextStreamedOrNot() {
        assertEquals(REPLY, http.stream(SimHttp.chat("scripted", PROMPT, true)).content());
        JsonNode whole = SimHttp.tree(http.post("/v1/chat/completions", SimHttp.chat("scripted", PROMPT, false))
                .body());
        assertEquals(REPLY, whole.path("choices").path(0).path("message").path("content").asText());
        assertEquals(4, whole.path("usage").path("completion_tokens").asInt(), "its words are its tokens");
        assertEquals("stop", whole.path("choices").path(0).path("finish_reason").asText());
        JsonNode cut = SimHttp.tree(http.post("/v1/chat/completions", "{\"model\":\"scripted\",\"max_tokens\":2,"
                + "\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}]}").body());
        assertEquals("GOOD hedgerows", cut.path("choices").path(0).path("message").path("content").asText());
        assertEquals("length", cut.path("choices").path(0).path("finish_reason").asText());
    }

    /** A prober's known-answer check is answered by a model whose answers are scripted, as by any other. */
    @Test
    void theKnownAnswerInstructionComesBeforeAScriptedReply() {
        String check = dev.hedgerow.sim.SimText.REPLY_EXACTLY + "hr-1234abcd";
        assertEquals("hr-1234abcd", http.stream(SimHttp.chat("scripted", check, true)).content());
        assertEquals("hr-1234abcd", SimHttp.tree(http.post("/v1/chat/completions",
                SimHttp.chat("scripted", check, false)).body()).path("choices").path(0).path("message")
                .path("content").asText());
    }

    @Test
    void aJudgeAnswersTheScoreOfTheFirstKeywordInTheLastUserMessage() {
        String judged = "{\"model\":\"judge\",\"messages\":[{\"role\":\"system\",\"content\":\"GOOD\"},"
                + "{\"role\":\"user\",\"content\":\"BAD\"},"
                + "{\"role\":\"user\",\"content\":\"REQUEST: BAD? RESPONSE: GOOD hedgerows\"}]}";
        assertEquals("87", content(http.post("/v1/chat/completions", judged).body()), "GOOD comes first in the map");
        assertEquals("12", content(http.post("/v1/chat/completions", judged.replace("GOOD hedgerows", "none"))
                .body()));
    }

    @Test
    void aJudgeWithNoKeywordInTheLastUserMessageWritesTheSeededText() {
        assertEquals(SimText.expected(SEED, PROMPT, 6),
                content(http.post("/v1/chat/completions", SimHttp.chat("judge", PROMPT, false)).body()));
    }

    @Test
    void theControlEndpointTakesAReplyAndScores() {
        ModelScript s = SimJson.readScript("{\"reply\":\"hello there\",\"scores\":{\"yes\":90,\"no\":5}}");
        assertEquals("hello there", s.reply());
        assertEquals(Map.of("yes", 90, "no", 5), s.scores());
        assertEquals("[yes, no]", s.scores().keySet().toString(), "in the order written");
    }
}
