package dev.hedgerow.api;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ObjectNode;

import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import java.util.function.ToIntFunction;
import java.util.function.UnaryOperator;

/**
 * A validated view of one embeddings request body ({@code POST /v1/embeddings}), checked as OpenAI's API defines it:
 * {@code model}; {@code input} as a non-empty string, an array of non-empty strings, an array of token ids or an
 * array of arrays of token ids, at most {@value #MAX_INPUTS} items; {@code encoding_format} {@code float} or
 * {@code base64}; {@code dimensions} an integer of at least 1; {@code user} a string; and the OpenRouter-style
 * {@code provider} preferences chat takes ({@link ProviderPrefs}), except {@code sort: throughput}, which ranks by
 * decode speed that an embeddings model never shows (refused, not silently ignored). Every other field passes
 * through unchecked, as a chat request's does. The parsed body is kept for every attempt;
 * {@link #upstreamBody(String)} makes each attempt's own copy. Immutable after construction but for the cached token
 * counts of its inputs; thread-safe.
 */
public final class EmbeddingsRequest implements ApiRequest {
    /** OpenAI's limit on the inputs of one request. */
    public static final int MAX_INPUTS = 2048;

    /** Parameters a route may have to honour under {@code provider.require_parameters}. */
    public static final List<String> KNOWN_PARAMETERS = List.of("dimensions", "encoding_format");

    /** The shape of {@code input}. */
    public enum InputKind { TEXT, TEXTS, TOKENS, TOKEN_ARRAYS }

    private final ObjectNode body;
    private final String model;
    private final ProviderPrefs prefs;
    private final InputKind kind;
    /** The inputs' token counts once {@link #inputTokens} has run (the gateway has one tokenizer). */
    private volatile List<Integer> counted;

    private EmbeddingsRequest(ObjectNode body, String modelOverride, UnaryOperator<String> alias) {
        this.body = body;
        this.model = RequestParameters.model(body, modelOverride, alias);
        try {
            this.kind = validateInput(body.get("input"));
            JsonNode ef = present("encoding_format");
            if (ef != null && !(ef.isTextual() && (ef.asText().equals("float") || ef.asText().equals("base64")))) {
                throw new RequestException(ApiError.invalidRequest("'encoding_format' must be one of float, base64.",
                        "encoding_format"));
            }
            JsonNode dims = present("dimensions");
            if (dims != null && !(dims.isIntegralNumber() && dims.canConvertToInt() && dims.asInt() >= 1)) {
                throw new RequestException(ApiError.invalidRequest("'dimensions' must be an integer from 1 to 2147483647.",
                        "dimensions"));
            }
            JsonNode user = present("user");
            if (user != null && !user.isTextual()) {
                throw new RequestException(ApiError.invalidRequest("'user' must be a string.", "user"));
            }
            this.prefs = ProviderPrefs.parse(body.get("provider"));
            if (prefs.sort() == ProviderPrefs.Sort.THROUGHPUT) {
                throw new RequestException(ApiError.invalidRequest("unsupported_provider_preference",
                        "'provider.sort' throughput ranks by decode speed, which an embeddings model does not "
                                + "have: sort by latency or price.", "provider.sort"));
            }
        } catch (RequestException e) {
            throw e.withAlias(model);
        }
    }

    /**
     * Parses and validates a request body; throws {@link RequestException} with a 400 on anything malformed.
     * {@link #model()} is the alias {@code alias} says the requested name (the override, else the body's
     * {@code model}) stands for.
     */
    public static EmbeddingsRequest parse(byte[] bytes, String modelOverride, UnaryOperator<String> alias) {
        return new EmbeddingsRequest(RequestJson.object(bytes), modelOverride, alias);
    }

    private JsonNode present(String field) {
        JsonNode v = body.get(field);
        return v == null || v.isNull() ? null : v;
    }

    private static InputKind validateInput(JsonNode input) {
        if (input == null || input.isNull()) {
            throw new RequestException(ApiError.invalidRequest("'input' is required.", "input"));
        }
        if (input.isTextual()) {
            if (input.asText().isEmpty()) {
                throw new RequestException(ApiError.invalidRequest("'input' must be a non-empty string.", "input"));
            }
            return InputKind.TEXT;
        }
        if (!input.isArray()) {
            throw new RequestException(ApiError.invalidRequest("'input' must be a string, an array of strings, an "
                    + "array of token ids or an array of arrays of token ids.", "input"));
        }
        if (input.isEmpty()) {
            throw new RequestException(ApiError.invalidRequest("'input' must not be an empty array.", "input"));
        }
        if (input.size() > MAX_INPUTS) {
            throw new RequestException(ApiError.invalidRequest("'input' holds " + input.size()
                    + " items; at most " + MAX_INPUTS + " are allowed.", "input"));
        }
        JsonNode first = input.get(0);
        InputKind kind = first.isTextual() ? InputKind.TEXTS : first.isArray() ? InputKind.TOKEN_ARRAYS
                : InputKind.TOKENS;
        for (int i = 0; i < input.size(); i++) {
            JsonNode item = input.get(i);
            String p = "input[" + i + "]";
            switch (kind) {
                case TEXTS -> {
                    if (!item.isTextual()) {
                        throw new RequestException(ApiError.invalidRequest("'" + p + "' must be a string, as "
                                + "input[0] is (an array of inputs holds one kind).", p));
                    }
                    if (item.asText().isEmpty()) {
                        throw new RequestException(ApiError.invalidRequest("'" + p + "' must be a non-empty string.",
                                p));
                    }
                }
                case TOKENS -> requireTokenId(item, p);
                case TOKEN_ARRAYS -> {
                    if (!item.isArray() || item.isEmpty()) {
                        throw new RequestException(ApiError.invalidRequest("'" + p + "' must be a non-empty array "
                                + "of token ids, as input[0] is (an array of inputs holds one kind).", p));
                    }
                    for (int j = 0; j < item.size(); j++) {
                        requireTokenId(item.get(j), p + "[" + j + "]");
                    }
                }
                default -> throw new IllegalStateException(kind.name());
            }
        }
        return kind;
    }

    private static void requireTokenId(JsonNode n, String p) {
        if (!n.isIntegralNumber() || !n.canConvertToInt() || n.asInt() < 0) {
            throw new RequestException(ApiError.invalidRequest("'" + p + "' must be a token id (an integer from 0 to "
                    + "2147483647).", p));
        }
    }

    @Override
    public String model() {
        return model;
    }

    @Override
    public ProviderPrefs prefs() {
        return prefs;
    }

    @Override
    public boolean stream() {
        return false;
    }

    @Override
    public Integer maxTokens() {
        return null;
    }

    @Override
    public String upstreamPath() {
        return "/embeddings";
    }

    public InputKind inputKind() {
        return kind;
    }

    /** How many inputs the request embeds (one for a single string or a single token array). */
    public int inputCount() {
        return kind == InputKind.TEXT || kind == InputKind.TOKENS ? 1 : body.get("input").size();
    }

    /**
     * The token count of each input: a text counted by {@code countText}, a token-id array by its length. The
     * longest is what a route's context window must hold; their sum is the prompt billed when the upstream
     * reports no usage. Counted once: the edge counts them for routing (on a worker for a large body), and a
     * dispatch whose provider sent no usage reuses the counts instead of running the tokenizer again under its lock.
     */
    public List<Integer> inputTokens(ToIntFunction<String> countText) {
        List<Integer> c = counted;
        if (c == null) {
            c = List.copyOf(count(countText));
            counted = c; // a race counts twice and stores equal lists
        }
        return c;
    }

    private List<Integer> count(ToIntFunction<String> countText) {
        JsonNode input = body.get("input");
        List<Integer> out = new ArrayList<>();
        switch (kind) {
            case TEXT -> out.add(countText.applyAsInt(input.asText()));
            case TOKENS -> out.add(input.size());
            case TEXTS -> input.forEach(n -> out.add(countText.applyAsInt(n.asText())));
            case TOKEN_ARRAYS -> input.forEach(n -> out.add(n.size()));
            default -> throw new IllegalStateException(kind.name());
        }
        return out;
    }

    /** True when the vectors are asked for as base64 ({@code encoding_format: base64}); else floats, the default. */
    public boolean base64() {
        return "base64".equals(body.path("encoding_format").asText(null));
    }

    /** The body as received (read-only by convention: never mutate it). */
    public ObjectNode body() {
        return body;
    }

    /** Known parameters this request carries ({@link #KNOWN_PARAMETERS}). */
    public Set<String> parametersPresent() {
        return RequestParameters.present(body, KNOWN_PARAMETERS);
    }

    @Override
    public ObjectNode upstreamBody(String upstreamModel) {
        return RequestParameters.upstreamBody(body, upstreamModel);
    }
}
