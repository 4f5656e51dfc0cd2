package dev.hedgerow.dispatch;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.hedgerow.state.UsageSample;

import java.util.function.ToIntFunction;

/**
 * What a dispatch bills: the usage of the request, counted once however many attempts ran, and its JSON form for
 * the client. Confined to its dispatch (guarded by it).
 */
final class Billing {
    private final long promptTokens;
    private final ToIntFunction<String> tokens;
    private final Transcript transcript;

    /**
     * @param promptTokens the request's own prompt count, billed when the upstream reports none
     * @param tokens       counts tokens of a text (when the upstream sends no usage)
     * @param transcript   what the client received
     */
    Billing(long promptTokens, ToIntFunction<String> tokens, Transcript transcript) {
        this.promptTokens = promptTokens;
        this.tokens = tokens;
        this.transcript = transcript;
    }

    /**
     * What the request is billed: once, however many attempts ran. Without a resume the winner's own usage (or
     * a count with the tokenizer when it sent none, of each choice's text, summed); after a resume the original prompt
     * once plus every completion token the client received, its tool calls' names and arguments included.
     *
     * @param resumed          the stream was resumed at least once
     * @param nonStreamChoices the whole answer's choices, or null for a stream
     */
    UsageSample usageOf(Attempt a, boolean resumed, JsonNode nonStreamChoices) {
        long prompt = promptTokens;
        long completion;
        JsonNode upstream = upstreamBill(a, resumed);
        if (upstream != null) {
            prompt = upstream.path("prompt_tokens").asLong(prompt);
            completion = upstream.path("completion_tokens").asLong(0);
        } else if (nonStreamChoices != null) {
            completion = 0;
            for (JsonNode choice : nonStreamChoices) {
                JsonNode message = choice.path("message");
                StringBuilder sb = new StringBuilder(UpstreamReplies.text(message.get("content")));
                sb.append(UpstreamReplies.reasoning(message));
                completion += tokens.applyAsInt(UpstreamReplies.toolCallText(message.get("tool_calls"), sb)
                        .toString());
            }
        } else if (a.choices != null) {
            completion = a.choices.completionTokens(tokens)
                    + (transcript.toolCalls.isEmpty() ? 0 : tokens.applyAsInt(transcript.toolCalls.toString()));
        } else {
            completion = tokens.applyAsInt(transcript.content.toString() + transcript.reasoning
                    + transcript.toolCalls);
        }
        double cost = a.cand.route().price().cost(prompt, completion);
        return new UsageSample(prompt, completion, cost);
    }

    /**
     * Sets {@code parent.usage} to the billed counts, in OpenAI's form, with the provider's breakdowns
     * ({@code prompt_tokens_details.cached_tokens}, {@code completion_tokens_details.reasoning_tokens}, ...) when
     * {@code upstream} is the usage that was billed; null after a resume, whose bill no one provider's breakdown
     * describes.
     */
    static void putUsage(ObjectNode parent, UsageSample billed, JsonNode upstream) {
        ObjectNode u = parent.putObject("usage");
        u.put("prompt_tokens", billed.promptTokens());
        u.put("completion_tokens", billed.completionTokens());
        u.put("total_tokens", billed.totalTokens());
        if (upstream != null && upstream.isObject()) {
            upstream.fields().forEachRemaining(f -> {
                if (f.getKey().endsWith("_details") && f.getValue().isObject()) {
                    u.set(f.getKey(), f.getValue());
                }
            });
        }
    }

    /**
     * The upstream's own usage when it is what the request is billed (no resume, and it counts the prompt and the
     * completion: one without its completion count would bill a real answer 0 completion tokens), else
     * null: {@link #usageOf} bills it, and {@link #putUsage} passes its breakdowns on only then.
     */
    static JsonNode upstreamBill(Attempt a, boolean resumed) {
        return !resumed && a.usage != null && count(a.usage.get("prompt_tokens"))
                && count(a.usage.get("completion_tokens")) ? a.usage : null;
    }

    /**
     * The most tokens one request's usage may report: a provider's figure beyond it (or negative, or not a whole
     * number) is not believed, and the request is counted as one that reported none.
     */
    static final long MAX_TOKENS = 1_000_000_000L;

    /** Whether a provider's token count is one: a whole number (12.0 too) from 0 to {@link #MAX_TOKENS}. */
    static boolean count(JsonNode n) {
        if (n == null || !n.isNumber()) {
            return false;
        }
        double v = n.asDouble();
        return v >= 0 && v <= MAX_TOKENS && v == Math.rint(v);
    }
}
