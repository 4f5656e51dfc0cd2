package dev.hedgerow.dispatch;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.hedgerow.routing.Candidate;
import dev.hedgerow.state.UsageSample;

import java.util.ArrayList;
import java.util.List;
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
     * Where in the transcript ({@link Transcript#content}, {@link Transcript#reasoning}, {@link Transcript#toolCalls})
     * the content of an attempt the client received began.
     */
    record Part(Candidate route, int content, int reasoning, int toolCalls) {
    }

    /** What one route is charged in its usage window for its part of an answer. */
    record RouteUsage(Candidate route, UsageSample usage) {
    }

    /**
     * What each route whose content the client received is charged for its part of the answer ({@code parts}, in order;
     * {@code last} the route that finished it): without a resume, the whole bill. After one, each part its own text's
     * completion tokens (the last the rest of the bill's, so the parts sum to it) and its own prompt, the request's plus,
     * for a resume, the delivered text it was given to continue, at its own route's price. The client's bill stays one.
     */
    List<RouteUsage> byRoute(UsageSample billed, Candidate last, List<Part> parts) {
        if (parts.size() <= 1) {
            return List.of(new RouteUsage(last, billed));
        }
        List<RouteUsage> out = new ArrayList<>(parts.size());
        long charged = 0;
        for (int i = 0; i < parts.size(); i++) {
            Part p = parts.get(i);
            boolean end = i == parts.size() - 1;
            long completion;
            if (end) {
                completion = Math.max(0, billed.completionTokens() - charged);
            } else {
                Part next = parts.get(i + 1);
                completion = tokens.applyAsInt(slice(transcript.content, p.content(), next.content())
                        + slice(transcript.reasoning, p.reasoning(), next.reasoning())
                        + slice(transcript.toolCalls, p.toolCalls(), next.toolCalls()));
                charged += completion;
            }
            long prompt = billed.promptTokens() + (i == 0 ? 0 : tokens.applyAsInt(
                    transcript.content.substring(0, p.content()) + transcript.reasoning.substring(0, p.reasoning())));
            out.add(new RouteUsage(p.route(), new UsageSample(prompt, completion,
                    p.route().route().price().cost(prompt, completion))));
        }
        return out;
    }

    private static String slice(StringBuilder text, int from, int to) {
        return text.substring(Math.min(from, text.length()), Math.max(Math.min(from, text.length()),
                Math.min(to, text.length())));
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
     * The breakdowns the client's usage carries ({@link #putUsage}): the provider's when its usage is the bill
     * ({@link #upstreamBill}); else, for an answer with reasoning, {@code completion_tokens_details.reasoning_tokens}
     * counted with the tokenizer, as the bill is. After a resume it was dropped, and a client that counts the visible
     * tokens as completion less reasoning counted the reasoning as visible (found by hunt29-b).
     */
    JsonNode usageDetails(Attempt a, boolean resumed) {
        JsonNode upstream = upstreamBill(a, resumed);
        if (upstream != null || transcript.reasoning.length() == 0) {
            return upstream;
        }
        ObjectNode details = com.fasterxml.jackson.databind.node.JsonNodeFactory.instance.objectNode();
        details.putObject("completion_tokens_details").put("reasoning_tokens",
                tokens.applyAsInt(transcript.reasoning.toString()));
        return details;
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
