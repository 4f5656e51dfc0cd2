package dev.hedgerow.dispatch;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.hedgerow.api.ChatRequest;
import dev.hedgerow.catalog.Dialect;

import java.util.ArrayList;
import java.util.List;
import java.util.stream.StreamSupport;

/**
 * How a resumed attempt asks a route to continue the text already delivered. Prefill methods continue exactly;
 * {@link #INSTRUCTION} asks in words and needs overlap trimming. A JSON mode ({@code response_format} json_object or
 * json_schema) is left out of a continuation, as are vLLM's and SGLang's own constraints ({@link #GRAMMARS}): a
 * grammar would start a new object instead of finishing the one delivered.
 */
public enum ContinuationMethod {
    /** vLLM / SGLang: {@code continue_final_message: true, add_generation_prompt: false}. */
    CONTINUE_FINAL_MESSAGE,
    /** DeepSeek / Mistral style {@code "prefix": true} on the trailing assistant message. */
    PREFIX_FLAG,
    /** Anthropic-style: a trailing assistant message is continued as is. */
    TRAILING_ASSISTANT,
    /** No prefill: the partial answer plus an instruction to continue; the re-emitted overlap is trimmed. */
    INSTRUCTION;

    /** vLLM's and SGLang's constrained-decoding parameters: each constrains a continuation from its start. */
    static final List<String> GRAMMARS = List.of("guided_json", "guided_regex", "guided_choice", "guided_grammar",
            "structured_outputs", "regex", "ebnf", "json_schema");

    static final String INSTRUCTION_TEXT = "Continue exactly where your previous message stopped, mid-word if "
            + "needed. Do not repeat any of it and do not add any preamble.";

    /** The methods to try on a route, best first: the dialect's own prefill (when declared), then instruction. */
    static List<ContinuationMethod> forRoute(Dialect dialect, boolean prefillCapable) {
        List<ContinuationMethod> out = new ArrayList<>();
        if (prefillCapable) {
            switch (dialect) {
                case VLLM, SGLANG -> out.add(CONTINUE_FINAL_MESSAGE);
                case PREFIX -> out.add(PREFIX_FLAG);
                case ANTHROPIC -> out.add(TRAILING_ASSISTANT);
                case OPENAI -> out.add(PREFIX_FLAG);
            }
        }
        out.add(INSTRUCTION);
        return out;
    }

    boolean exact() {
        return this != INSTRUCTION;
    }

    /**
     * Adds the continuation to an upstream body that already holds the original messages. When those end with the
     * client's own assistant prefill (text, no tool calls), the delivered text continues that message, as an unbroken
     * stream continued it: a second assistant message after it would be read as another turn. Returns that assistant
     * message: its text is what the model continues, and what it may re-emit.
     */
    ObjectNode apply(ObjectNode body, Transcript t) {
        ArrayNode messages = (ArrayNode) body.get("messages");
        ObjectNode assistant = clientPrefill(messages);
        if (assistant == null) {
            assistant = messages.addObject();
            assistant.put("role", "assistant");
            assistant.put("content", t.content.toString());
            if (t.reasoning.length() > 0) {
                assistant.put("reasoning_content", t.reasoning.toString());
            }
        } else {
            assistant.put("content", ChatRequest.contentText(assistant.get("content")) + t.content);
            if (t.reasoning.length() > 0) {
                assistant.put("reasoning_content", ChatRequest.contentText(assistant.get("reasoning_content")) + t.reasoning);
            }
        }
        // a JSON mode's grammar (vLLM's and SGLang's guided decoding, strict structured outputs) constrains only the
        // tokens generated now, from the grammar's start: the continuation would open a second object after the half
        // delivered (found by hunt27). Without it the model continues the object its prefill holds
        JsonNode format = body.path("response_format").path("type");
        if ("json_object".equals(format.asText()) || "json_schema".equals(format.asText())) {
            body.remove("response_format");
        }
        body.remove(GRAMMARS);   // vLLM's own constraints, restarted the same way (review27)
        switch (this) {
            case CONTINUE_FINAL_MESSAGE -> {
                body.put("continue_final_message", true);
                body.put("add_generation_prompt", false);
            }
            case PREFIX_FLAG -> assistant.put("prefix", true);
            case TRAILING_ASSISTANT -> {
                // the trailing assistant message itself is the prefill
            }
            case INSTRUCTION -> {
                ObjectNode user = messages.addObject();
                user.put("role", "user");
                user.put("content", INSTRUCTION_TEXT);
            }
        }
        return assistant;
    }

    /** The trailing assistant message a continuation extends, or null when the messages end otherwise. */
    private static ObjectNode clientPrefill(ArrayNode messages) {
        JsonNode last = messages.isEmpty() ? null : messages.get(messages.size() - 1);
        if (last == null || !last.isObject() || !"assistant".equals(last.path("role").asText())
                || last.hasNonNull("tool_calls") || last.hasNonNull("function_call")) {
            return null;
        }
        JsonNode content = last.get("content");
        boolean textOnly = content == null || content.isNull() || content.isTextual()
                || content.isArray() && StreamSupport.stream(content.spliterator(), false)
                        .allMatch(p -> "text".equals(p.path("type").asText()) && p.path("text").isTextual());
        return textOnly ? (ObjectNode) last : null;
    }
}
