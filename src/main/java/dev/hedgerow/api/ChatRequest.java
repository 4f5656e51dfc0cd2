package dev.hedgerow.api;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;

import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import java.util.function.UnaryOperator;

/**
 * A validated view of one chat completions request body. The parsed body is kept for every attempt (per-request
 * state); {@link #upstreamBody(String)} makes each attempt's own copy with Hedgerow-only fields stripped.
 * Unknown fields pass through untouched. Immutable after construction (the body is never mutated).
 */
public final class ChatRequest implements ApiRequest {
    /** Fields that belong to Hedgerow and never reach a provider. */
    public static final Set<String> HEDGEROW_FIELDS = Set.of("provider", "hedgerow");

    /** Request parameters a route may have to honour under {@code provider.require_parameters}. */
    public static final List<String> KNOWN_PARAMETERS = List.of("temperature", "top_p", "top_k", "min_p", "seed",
            "stop", "frequency_penalty", "presence_penalty", "repetition_penalty", "logit_bias", "logprobs",
            "top_logprobs", "tools", "tool_choice", "parallel_tool_calls", "response_format", "max_tokens",
            "max_completion_tokens", "reasoning", "reasoning_effort", "n", "structured_outputs");

    private final ObjectNode body;
    private final String model;
    private final boolean stream;
    private final boolean includeUsage;
    private final ProviderPrefs prefs;
    private final Integer maxTokens;
    private final int choices;

    private ChatRequest(ObjectNode body, String modelOverride, UnaryOperator<String> alias) {
        this.body = body;
        this.model = RequestParameters.model(body, modelOverride, alias);
        try {
            JsonNode s = body.get("stream");
            if (s != null && !s.isNull() && !s.isBoolean()) {
                throw new RequestException(ApiError.invalidRequest("'stream' must be a boolean.", "stream"));
            }
            this.stream = s != null && s.asBoolean(false);
            JsonNode so = body.get("stream_options");
            if (so != null && !so.isNull() && !so.isObject()) {
                throw new RequestException(ApiError.invalidRequest("'stream_options' must be an object.",
                        "stream_options"));
            }
            if (so != null && !so.isNull() && !stream) {
                // OpenAI's own words; vLLM refuses it too, while other providers ignore it: one answer for every route
                throw new RequestException(ApiError.invalidRequest("The 'stream_options' parameter is only allowed "
                        + "when 'stream' is enabled.", "stream_options"));
            }
            this.includeUsage = so != null && so.path("include_usage").asBoolean(false);
            validateMessages(body.get("messages"));
            this.choices = RequestParameters.validate(body);
            this.maxTokens = readMaxTokens();
            this.prefs = ProviderPrefs.parse(body.get("provider"));
        } catch (RequestException e) {
            throw e.withAlias(model);
        }
    }

    /** Parses and validates a request body; throws {@link RequestException} with a 400 on anything malformed. */
    public static ChatRequest parse(byte[] bytes, String modelOverride) {
        return parse(bytes, modelOverride, UnaryOperator.identity());
    }

    /**
     * As {@link #parse(byte[], String)}, with {@link #model()} the alias that {@code alias} says the requested
     * name (the override, else the body's {@code model}) stands for (an org's routing rules' other names).
     */
    public static ChatRequest parse(byte[] bytes, String modelOverride, UnaryOperator<String> alias) {
        return new ChatRequest(RequestJson.object(bytes), modelOverride, alias);
    }

    /** The roles OpenAI takes; any other is refused, as a lax provider would read it as something else. */
    private static final Set<String> ROLES = Set.of("system", "developer", "user", "assistant", "tool", "function");

    /** The roles whose messages OpenAI refuses without {@code content} (an assistant's may hold tool calls alone). */
    private static final Set<String> CONTENT_REQUIRED = Set.of("system", "developer", "user", "tool");

    private static void validateMessages(JsonNode messages) {
        if (messages == null || messages.isNull()) {
            throw new RequestException(ApiError.invalidRequest("'messages' is required.", "messages"));
        }
        if (!messages.isArray() || messages.isEmpty()) {
            throw new RequestException(ApiError.invalidRequest("'messages' must be a non-empty array.", "messages"));
        }
        int i = 0;
        for (JsonNode msg : messages) {
            String p = "messages[" + i + "]";
            if (!msg.isObject()) {
                throw new RequestException(ApiError.invalidRequest("'" + p + "' must be an object.", p));
            }
            JsonNode role = msg.get("role");
            if (role == null || !role.isTextual() || !ROLES.contains(role.asText())) {
                throw new RequestException(ApiError.invalidRequest("'" + p + ".role' must be one of 'system', "
                        + "'developer', 'user', 'assistant', 'tool' or 'function'.", p + ".role"));
            }
            JsonNode content = msg.get("content");
            if ((content == null || content.isNull()) && CONTENT_REQUIRED.contains(role.asText())) {
                // only an assistant message may go without (its tool calls are what it said)
                throw new RequestException(ApiError.invalidRequest("'" + p + ".content' is required for a "
                        + role.asText() + " message.", p + ".content"));
            }
            if (content != null && !content.isNull() && !content.isTextual() && !content.isArray()) {
                throw new RequestException(ApiError.invalidRequest(
                        "'" + p + ".content' must be a string or an array of content parts.", p + ".content"));
            }
            if (content != null && content.isArray() && content.isEmpty() && CONTENT_REQUIRED.contains(role.asText())) {
                throw new RequestException(ApiError.invalidRequest("'" + p + ".content' must not be an empty array "
                        + "for a " + role.asText() + " message.", p + ".content"));
            }
            if (content != null && content.isArray()) {
                validateParts(content, p + ".content");
            }
            validateToolFields(msg, role.asText(), p);
            i++;
        }
    }

    /**
     * Each content part is an object with a string {@code type}, and a text part's {@code text} is a string, as OpenAI
     * requires: {@code [1, 2]} or {@code [{"type": "text", "text": 5}]} went upstream, where a lax provider answered
     * something and OpenAI a 400 (found by hunt13). A part of a type Hedgerow does not know passes (a newer kind).
     */
    private static void validateParts(JsonNode parts, String p) {
        for (int j = 0; j < parts.size(); j++) {
            JsonNode part = parts.get(j);
            String q = p + "[" + j + "]";
            if (!part.isObject() || !part.path("type").isTextual()) {
                throw new RequestException(ApiError.invalidRequest("'" + q + "' must be a content part: an object with"
                        + " a string 'type' ('text', 'image_url', ...).", q));
            }
            if (part.get("type").asText().equals("text") && !part.path("text").isTextual()) {
                throw new RequestException(ApiError.invalidRequest("'" + q + ".text' must be a string.", q + ".text"));
            }
        }
    }

    /**
     * A tool message names the call it answers ({@code tool_call_id}, a string), and an assistant's {@code tool_calls}
     * are an array of objects, as OpenAI requires (found by hunt13: both went upstream as sent).
     */
    private static void validateToolFields(JsonNode msg, String role, String p) {
        if (role.equals("tool") && !msg.path("tool_call_id").isTextual()) {
            throw new RequestException(ApiError.invalidRequest("'" + p + ".tool_call_id' is required for a tool"
                    + " message: a string, the id of the call it answers.", p + ".tool_call_id"));
        }
        RequestParameters.arrayOfObjects(msg.get("tool_calls"), p + ".tool_calls");
    }

    /** {@code max_completion_tokens}, else {@code max_tokens}; each one present must be valid (both go upstream). */
    private Integer readMaxTokens() {
        Integer found = null;
        for (String f : List.of("max_completion_tokens", "max_tokens")) {
            Long n = RequestParameters.integer(body, f, 1, Integer.MAX_VALUE);
            if (n != null && found == null) {
                found = n.intValue();
            }
        }
        return found;
    }

    @Override
    public String model() {
        return model;
    }

    @Override
    public String upstreamPath() {
        return "/chat/completions";
    }

    @Override
    public boolean stream() {
        return stream;
    }

    @Override
    public boolean includeUsage() {
        return includeUsage;
    }

    @Override
    public ProviderPrefs prefs() {
        return prefs;
    }

    /** The requested completion limit, or null when the request sets none. */
    @Override
    public Integer maxTokens() {
        return maxTokens;
    }

    /** The number of choices asked for ({@code n}), 1 when unset. */
    @Override
    public int choices() {
        return choices;
    }

    /** The request's {@code stop} sequences that are not empty (a string or an array of strings; none without). */
    public List<String> stops() {
        JsonNode stop = body.get("stop");
        List<String> out = new ArrayList<>();
        if (stop != null && stop.isTextual() && !stop.asText().isEmpty()) {
            out.add(stop.asText());
        } else if (stop != null && stop.isArray()) {
            stop.forEach(s -> {
                if (s.isTextual() && !s.asText().isEmpty()) {
                    out.add(s.asText());
                }
            });
        }
        return out;
    }

    public ArrayNode messages() {
        return (ArrayNode) body.get("messages");
    }

    /** The body as received (read-only by convention: never mutate it). */
    public ObjectNode body() {
        return body;
    }

    public boolean wantsTools() {
        JsonNode t = body.get("tools");
        return (t != null && t.isArray() && !t.isEmpty()) || body.hasNonNull("functions");
    }

    public boolean wantsJsonMode() {
        JsonNode rf = body.get("response_format");
        if (rf == null || !rf.isObject()) {
            return false;
        }
        String type = rf.path("type").asText("");
        return type.equals("json_object") || type.equals("json_schema");
    }

    public boolean hasImages() {
        for (JsonNode msg : messages()) {
            JsonNode c = msg.get("content");
            if (c != null && c.isArray()) {
                for (JsonNode part : c) {
                    String type = part.path("type").asText("");
                    if (type.equals("image_url") || type.equals("input_image") || type.equals("image")) {
                        return true;
                    }
                }
            }
        }
        return false;
    }

    /**
     * The request asks the model not to reason, in any of the spellings OpenAI-compatible servers take:
     * {@code reasoning_effort: none} (OpenAI), {@code reasoning: {enabled: false}} or {@code {effort: none}}
     * (OpenRouter), {@code thinking: {type: disabled}} (Anthropic-style, as GLM, Kimi and Doubao servers take it),
     * {@code chat_template_kwargs: {enable_thinking: false}} or {@code {thinking: false}} (vLLM and SGLang chat
     * templates: Qwen3, DeepSeek-V3.1) and a top-level {@code enable_thinking: false} (Qwen on DashScope).
     */
    public boolean wantsReasoningOff() {
        return thinkingSwitch() == Boolean.FALSE;
    }

    /** The request explicitly asks for reasoning (a thinking model may pause before its first visible token). */
    public boolean wantsReasoning() {
        Boolean on = thinkingSwitch();
        return on != null ? on : body.hasNonNull("reasoning_effort") || body.hasNonNull("reasoning");
    }

    /** What the request says about reasoning in one of the spellings of {@link #wantsReasoningOff}, or null. */
    private Boolean thinkingSwitch() {
        JsonNode eff = body.get("reasoning_effort");
        if (eff != null && eff.isTextual() && eff.asText().equalsIgnoreCase("none")) {
            return false;
        }
        JsonNode r = body.get("reasoning");
        if (r != null && r.isObject()) {
            JsonNode en = r.get("enabled");
            if (en != null && en.isBoolean() && !en.asBoolean()
                    || r.path("effort").asText("").equalsIgnoreCase("none")) {
                return false;
            }
        }
        JsonNode thinking = body.get("thinking");
        if (thinking != null && thinking.isObject() && thinking.path("type").isTextual()) {
            String type = thinking.path("type").asText();
            if (type.equalsIgnoreCase("disabled")) {
                return false;
            }
            if (type.equalsIgnoreCase("enabled")) {
                return true;
            }
        }
        JsonNode kwargs = body.get("chat_template_kwargs");
        for (JsonNode flag : new JsonNode[]{body.get("enable_thinking"),
                kwargs == null ? null : kwargs.get("enable_thinking"), kwargs == null ? null : kwargs.get("thinking")}) {
            if (flag != null && flag.isBoolean()) {
                return flag.asBoolean();
            }
        }
        return null;
    }

    /** Known parameters this request carries. */
    public Set<String> parametersPresent() {
        return RequestParameters.present(body, KNOWN_PARAMETERS);
    }

    /**
     * A message's content as text: a string as is, an array of content parts their {@code text} joined, "" for
     * absent or null.
     */
    public static String contentText(JsonNode content) {
        if (content == null || content.isNull()) {
            return "";
        }
        if (!content.isArray()) {
            return content.asText();
        }
        StringBuilder sb = new StringBuilder();
        for (JsonNode part : content) {
            sb.append(part.path("text").asText(""));
        }
        return sb.toString();
    }

    /** The last user message's text (semantic routing embeds this). */
    public String lastUserText() {
        String last = "";
        for (JsonNode msg : messages()) {
            if ("user".equals(msg.path("role").asText())) {
                JsonNode c = msg.get("content");
                if (c != null && (c.isTextual() || c.isArray())) {
                    last = contentText(c);
                }
            }
        }
        return last;
    }

    /**
     * A fresh copy of the body for one upstream attempt: Hedgerow-only fields removed and {@code model} set to the
     * route's upstream model name. Unknown fields stay.
     */
    @Override
    public ObjectNode upstreamBody(String upstreamModel) {
        return RequestParameters.upstreamBody(body, upstreamModel);
    }
}
