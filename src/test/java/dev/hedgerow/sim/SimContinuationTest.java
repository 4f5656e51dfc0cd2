package dev.hedgerow.sim;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.net.http.HttpResponse;
import java.util.EnumSet;
import java.util.List;
import org.junit.jupiter.api.Test;

class SimContinuationTest extends SimFixture {

    static final long SEED = 3;
    static final String PROMPT = "Describe the morning field";
    static final int LENGTH = 40;
    static final String FULL = SimText.expected(SEED, PROMPT, LENGTH);

    @Override
    SimConfig config() {
        ModelScript base = ModelScript.defaults().withLength(LENGTH);
        return SimConfig.of(SEED)
                .withModel("any", base)
                .withModel("vllm", base.withCapabilities(ModelScript.Capabilities.DEFAULT.withContinuation(
                        EnumSet.of(ModelScript.Continuation.CONTINUE_FINAL_MESSAGE))))
                .withModel("openai", base.withCapabilities(ModelScript.Capabilities.DEFAULT.withContinuation(
                        EnumSet.noneOf(ModelScript.Continuation.class)).withOverlapChars(12)));
    }

    /** A request whose messages are the prompt then the partial answer, in the given dialect. */
    private static ObjectNode prefill(String model, String partial, String dialect, boolean stream) {
        ObjectNode body = SimHttp.JSON.createObjectNode().put("model", model).put("stream", stream);
        ArrayNode messages = body.putArray("messages");
        messages.addObject().put("role", "user").put("content", PROMPT);
        ObjectNode last = messages.addObject().put("role", "assistant").put("content", partial);
        switch (dialect) {
            case "vllm" -> body.put("continue_final_message", true).put("add_generation_prompt", false);
            case "prefix" -> last.put("prefix", true);
            case "trailing" -> { }
            case "instruction" -> messages.addObject().put("role", "user")
                    .put("content", "Continue exactly where you stopped, without repeating anything.");
            default -> throw new IllegalArgumentException(dialect);
        }
        return body;
    }

    private String streamed(ObjectNode body) {
        SimHttp.Raw r = http.stream(body.toString());
        assertEquals(200, r.status(), r.text());
        return r.content();
    }

    private String partialOf(int chars) {
        return FULL.substring(0, chars);
    }

    @Test
    void continueFinalMessageYieldsExactlyTheRemainder() {
        String partial = partialOf(37);
        assertEquals(FULL.substring(37), streamed(prefill("vllm", partial, "vllm", true)));
    }

    @Test
    void prefixFlagYieldsExactlyTheRemainder() {
        String partial = partialOf(52);
        assertEquals(FULL.substring(52), streamed(prefill("any", partial, "prefix", true)));
    }

    @Test
    void trailingAssistantMessageYieldsExactlyTheRemainder() {
        String partial = partialOf(20);
        assertEquals(FULL.substring(20), streamed(prefill("any", partial, "trailing", true)));
    }

    @Test
    void nonStreamingContinuationYieldsTheRemainder() {
        HttpResponse<String> r = http.post("/v1/chat/completions", prefill("any", partialOf(15), "prefix", false).toString());
        assertEquals(FULL.substring(15),
                SimHttp.tree(r.body()).path("choices").path(0).path("message").path("content").asText());
    }

    @Test
    void partialEndingMidWordOrAfterAMultiByteCharacterIsContinued() {
        for (int i = 1; i < FULL.length(); i++) {
            if (Character.isHighSurrogate(FULL.charAt(i - 1))) {
                continue;
            }
            String partial = FULL.substring(0, i);
            assertEquals(FULL.substring(i), streamed(prefill("any", partial, "trailing", true)), "cut at " + i);
            if (i > 60) {
                break;
            }
        }
        int multi = FULL.codePoints().filter(c -> c > 127).findFirst().orElseThrow();
        int at = FULL.indexOf(new String(Character.toChars(multi))) + Character.charCount(multi);
        assertEquals(FULL.substring(at), streamed(prefill("any", FULL.substring(0, at), "vllm", true)));
    }

    @Test
    void continuationHonoursMaxTokensCountedFromTheWholeTokensAlreadyWritten() {
        List<String> tokens = SimText.tokens(SEED, PROMPT, LENGTH);
        String partial = String.join("", tokens.subList(0, 10));
        ObjectNode body = prefill("any", partial, "prefix", true).put("max_tokens", 5);
        assertEquals(String.join("", tokens.subList(10, 15)), streamed(body));
    }

    @Test
    void modelThatRefusesTheDialectAnswers400() {
        HttpResponse<String> r = http.post("/v1/chat/completions", prefill("vllm", partialOf(10), "prefix", true).toString());
        assertEquals(400, r.statusCode());
        assertEquals("prefill_not_supported", SimHttp.tree(r.body()).path("error").path("code").asText());
        HttpResponse<String> trailing = http.post("/v1/chat/completions",
                prefill("openai", partialOf(10), "trailing", false).toString());
        assertEquals(400, trailing.statusCode());
        assertEquals(2, sim.stats("openai").received() + sim.stats("vllm").received());
        assertEquals(1, sim.stats("openai").rejected());
    }

    @Test
    void continueFinalMessageWithoutAddGenerationPromptFalseIs400() {
        ObjectNode body = prefill("vllm", partialOf(10), "vllm", true);
        body.remove("add_generation_prompt");
        assertEquals(400, http.post("/v1/chat/completions", body.toString()).statusCode());
    }

    @Test
    void continueInstructionReEmitsAnOverlapOfTheLastCharacters() {
        String partial = partialOf(45);
        String out = streamed(prefill("openai", partial, "instruction", true));
        assertEquals(Plan.lastCodePoints(partial, 12) + FULL.substring(45), out);
        assertTrue(FULL.endsWith(out), "the overlap is the slice of the text just before the cut");
    }

    @Test
    void continueInstructionOverlapNeverSplitsACodePoint() {
        // Cut just after a 4-byte character (a surrogate pair in Java) that the 12-code-point overlap reaches.
        int wide = FULL.codePoints().filter(Character::isSupplementaryCodePoint).findFirst().orElseThrow();
        int cut = FULL.indexOf(new String(Character.toChars(wide))) + 2 + 3;
        String partial = FULL.substring(0, cut);
        String out = streamed(prefill("openai", partial, "instruction", true));
        String overlap = out.substring(0, out.length() - FULL.substring(cut).length());
        assertEquals(12, overlap.codePointCount(0, overlap.length()));
        assertTrue(partial.endsWith(overlap));
        assertTrue(!Character.isLowSurrogate(overlap.charAt(0)));
    }
}
