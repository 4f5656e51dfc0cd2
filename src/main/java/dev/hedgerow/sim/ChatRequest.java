package dev.hedgerow.sim;

import com.fasterxml.jackson.databind.JsonNode;
import java.util.ArrayList;
import java.util.List;

/**
 * The parts of a chat completion request the simulator acts on, read once from the JSON body. Immutable.
 *
 * @param promptTokens the messages' BPE tokens with chat framing ({@link SimText#estimateTokens})
 * @param prefill      null for an ordinary request; else the continuation asked for
 * @param lastUserMessage the text of the last user message ("" when none): what a judge script scores
 * @param choices      the choices asked for ({@code n}, 1 to {@link #MAX_CHOICES}; 1 when unset)
 */
record ChatRequest(String model, boolean stream, boolean includeUsage, Integer maxTokens, String firstUserMessage,
                   int promptTokens, Tools tools, boolean jsonMode, boolean hasImages, Prefill prefill,
                   String lastUserMessage, int choices) {

    /** OpenAI's limit on {@code n}: more is answered 400, as OpenAI does. */
    static final int MAX_CHOICES = 128;

    static final String CONTINUE_INSTRUCTION = "Continue exactly where";

    /** How a request asked the model to continue a partial assistant message. */
    enum Style {
        CONTINUE_FINAL_MESSAGE, PREFIX, TRAILING_ASSISTANT,
        /** "Continue exactly where ..." user instruction after the partial: plain OpenAI, answered with overlap. */
        INSTRUCTION;

        ModelScript.Continuation dialect() {
            return switch (this) {
                case CONTINUE_FINAL_MESSAGE -> ModelScript.Continuation.CONTINUE_FINAL_MESSAGE;
                case PREFIX -> ModelScript.Continuation.PREFIX;
                case TRAILING_ASSISTANT -> ModelScript.Continuation.TRAILING_ASSISTANT;
                case INSTRUCTION -> null;
            };
        }
    }

    /**
     * @param partial   the partial assistant content to continue
     * @param reasoning the partial {@code reasoning_content} of that message ("" when none): a stream cut while
     *                  the model was still reasoning continues its reasoning from here
     */
    record Prefill(Style style, String partial, String reasoning) {
    }

    /**
     * Tools offered. {@code call} is true when the model should answer with a tool call: tools are present,
     * {@code tool_choice} is not "none" and no tool result is in the conversation yet.
     */
    record Tools(boolean present, boolean call, String functionName, String argumentName) {
        static final Tools NONE = new Tools(false, false, null, null);
    }

    /** Thrown for a request the simulator answers 400 whatever the model. */
    static final class Invalid extends RuntimeException {
        Invalid(String message) {
            super(message);
        }
    }

    static ChatRequest parse(JsonNode body) {
        if (body == null || !body.isObject()) {
            throw new Invalid("request body must be a JSON object");
        }
        JsonNode messages = body.path("messages");
        if (!messages.isArray() || messages.isEmpty()) {
            throw new Invalid("'messages' must be a non-empty array");
        }
        String first = null;
        String last = "";
        boolean images = false;
        boolean toolResult = false;
        List<String> texts = new ArrayList<>();
        for (JsonNode m : messages) {
            String text = text(m.path("content"));
            texts.add(text);
            images |= hasImage(m.path("content"));
            String role = m.path("role").asText();
            toolResult |= role.equals("tool") || role.equals("function");
            if (first == null && role.equals("user")) {
                first = text;
            }
            if (role.equals("user")) {
                last = text;
            }
        }
        Integer max = body.hasNonNull("max_completion_tokens") ? Integer.valueOf(body.get("max_completion_tokens").asInt())
                : body.hasNonNull("max_tokens") ? Integer.valueOf(body.get("max_tokens").asInt()) : null;
        String format = body.path("response_format").path("type").asText("");
        JsonNode n = body.path("n");
        int choices = n.isNull() || n.isMissingNode() ? 1 : n.asInt(0);
        if (!n.isNull() && !n.isMissingNode() && (!n.isIntegralNumber() || choices < 1 || choices > MAX_CHOICES)) {
            throw new Invalid("'n' must be an integer from 1 to " + MAX_CHOICES);
        }
        return new ChatRequest(body.path("model").asText(null), body.path("stream").asBoolean(false),
                body.path("stream_options").path("include_usage").asBoolean(false), max,
                first == null ? "" : first, SimText.estimateTokens(texts), tools(body, toolResult),
                format.equals("json_object") || format.equals("json_schema"), images, prefill(body, messages), last,
                choices);
    }

    private static Tools tools(JsonNode body, boolean toolResult) {
        JsonNode tools = body.path("tools");
        if (!tools.isArray() || tools.isEmpty()) {
            return Tools.NONE;
        }
        JsonNode fn = tools.get(0).path("function");
        String arg = "input";
        var names = fn.path("parameters").path("properties").fieldNames();
        if (names.hasNext()) {
            arg = names.next();
        }
        boolean none = body.path("tool_choice").asText("").equals("none");
        return new Tools(true, !none && !toolResult, fn.path("name").asText("tool"), arg);
    }

    private static Prefill prefill(JsonNode body, JsonNode messages) {
        JsonNode last = messages.get(messages.size() - 1);
        String role = last.path("role").asText();
        if (role.equals("assistant")) {
            String partial = text(last.path("content"));
            String reasoning = last.path("reasoning_content").asText("");
            if (body.path("continue_final_message").asBoolean(false)) {
                // vLLM refuses this combination (its add_generation_prompt defaults to true).
                if (body.path("add_generation_prompt").asBoolean(true)) {
                    throw new Invalid("continue_final_message requires add_generation_prompt: false");
                }
                return new Prefill(Style.CONTINUE_FINAL_MESSAGE, partial, reasoning);
            }
            if (last.path("prefix").asBoolean(false)) {
                return new Prefill(Style.PREFIX, partial, reasoning);
            }
            return new Prefill(Style.TRAILING_ASSISTANT, partial, reasoning);
        }
        if (role.equals("user") && messages.size() >= 2
                && text(last.path("content")).startsWith(CONTINUE_INSTRUCTION)
                && messages.get(messages.size() - 2).path("role").asText().equals("assistant")) {
            JsonNode assistant = messages.get(messages.size() - 2);
            return new Prefill(Style.INSTRUCTION, text(assistant.path("content")),
                    assistant.path("reasoning_content").asText(""));
        }
        return null;
    }

    /** Text of a message content: a string, or the text parts of an array joined. */
    static String text(JsonNode content) {
        if (content.isTextual()) {
            return content.asText();
        }
        StringBuilder sb = new StringBuilder();
        if (content.isArray()) {
            for (JsonNode part : content) {
                if (part.path("type").asText().equals("text")) {
                    sb.append(part.path("text").asText());
                }
            }
        }
        return sb.toString();
    }

    private static boolean hasImage(JsonNode content) {
        if (content.isArray()) {
            for (JsonNode part : content) {
                if (part.path("type").asText().equals("image_url")) {
                    return true;
                }
            }
        }
        return false;
    }
}
