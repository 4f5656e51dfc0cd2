package dev.hedgerow.dispatch;

import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.hedgerow.api.Json;
import org.junit.jupiter.api.Test;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * A continuation leaves out every constraint that would start its answer from the grammar's beginning: OpenAI's JSON
 * modes and vLLM's and SGLang's own (hunt27, review27); everything else of the request stays.
 */
class ContinuationMethodTest {
    @Test
    void aContinuationLeavesOutEveryGrammarAndKeepsTheRest() throws Exception {
        for (ContinuationMethod m : ContinuationMethod.values()) {
            ObjectNode body = (ObjectNode) Json.parse(("{\"model\":\"m\",\"temperature\":0.2,"
                    + "\"response_format\":{\"type\":\"json_object\"},\"guided_json\":{\"type\":\"object\"},"
                    + "\"guided_regex\":\".*\",\"guided_choice\":[\"a\"],\"guided_grammar\":\"g\","
                    + "\"structured_outputs\":{\"regex\":\".*\"},\"regex\":\".*\",\"ebnf\":\"e\","
                    + "\"json_schema\":{},\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}]}")
                    .getBytes(java.nio.charset.StandardCharsets.UTF_8));
            Transcript t = new Transcript();
            t.content.append("{\"a\": ");
            m.apply(body, t);
            for (String f : new String[] {"response_format", "guided_json", "guided_regex", "guided_choice",
                    "guided_grammar", "structured_outputs", "regex", "ebnf", "json_schema"}) {
                assertFalse(body.has(f), m + " kept " + f + ": " + body);
            }
            assertEquals(0.2, body.path("temperature").asDouble(), m + ": " + body);
            assertTrue(body.path("messages").toString().contains("{\\\"a\\\": "), m + ": " + body);
        }
    }

    @Test
    void aTextModeIsKept() throws Exception {
        ObjectNode body = (ObjectNode) Json.parse(("{\"model\":\"m\",\"response_format\":{\"type\":\"text\"},"
                + "\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}]}")
                .getBytes(java.nio.charset.StandardCharsets.UTF_8));
        ContinuationMethod.PREFIX_FLAG.apply(body, new Transcript());
        assertTrue(body.has("response_format"), body.toString());
    }
}
