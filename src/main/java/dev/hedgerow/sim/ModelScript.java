package dev.hedgerow.sim;

import java.util.EnumSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;

/**
 * The script of one simulated model: how long it writes, how fast it answers, what it can do and how often it
 * fails. Selected by the request's {@code model} field. Immutable; change one aspect with the {@code withX}
 * methods. Serialised to and from JSON (snake_case) by {@link SimJson} for the control endpoint and demo files;
 * a nested object missing from the JSON takes its default.
 *
 * @param length       the most content tokens the model writes (a request's {@code max_tokens} may cut it shorter)
 * @param seed         seeds this model's random source (latency jitter, heavy tail, fault odds)
 * @param latency      time to first token and decode speed
 * @param capabilities what requests the model accepts and how it reports usage
 * @param reasoning    reasoning deltas and a silent thinking pause before the content
 * @param faults       probabilistic faults, rolled in order for each request that has no queued one-shot fault
 * @param servedAs     the {@code model} its answers name, or null for the name the request asked for (the real
 *                     OpenAI API answers {@code gpt-4o-mini-2024-07-18} to a request for {@code gpt-4o-mini})
 * @param reply        the content it writes (its words are the tokens) in place of the seeded text, or null: two
 *                     routes with different replies answer one prompt differently
 * @param scores       a judge model's scoring (keyword → score): the answer is the score of the first keyword, in
 *                     the map's order, that the request's last user message contains; when none is there, the model
 *                     writes its reply (or seeded text) instead. Empty = not a judge
 */
public record ModelScript(int length, long seed, Latency latency, Capabilities capabilities, Reasoning reasoning,
                          List<FaultChance> faults, String servedAs, String reply, Map<String, Integer> scores) {

    public static final int DEFAULT_LENGTH = 64;

    public ModelScript {
        length = length <= 0 ? DEFAULT_LENGTH : length;
        latency = latency == null ? Latency.INSTANT : latency;
        capabilities = capabilities == null ? Capabilities.DEFAULT : capabilities;
        reasoning = reasoning == null ? Reasoning.NONE : reasoning;
        faults = faults == null ? List.of() : List.copyOf(faults);
        scores = scores == null ? Map.of() : java.util.Collections.unmodifiableMap(new LinkedHashMap<>(scores));
    }

    /** A model that answers at once, writes {@value #DEFAULT_LENGTH} tokens and never fails. */
    public static ModelScript defaults() {
        return new ModelScript(DEFAULT_LENGTH, 1, null, null, null, null, null, null, null);
    }

    public ModelScript withLength(int tokens) {
        return new ModelScript(tokens, seed, latency, capabilities, reasoning, faults, servedAs, reply, scores);
    }

    public ModelScript withSeed(long s) {
        return new ModelScript(length, s, latency, capabilities, reasoning, faults, servedAs, reply, scores);
    }

    public ModelScript withLatency(Latency l) {
        return new ModelScript(length, seed, l, capabilities, reasoning, faults, servedAs, reply, scores);
    }

    public ModelScript withCapabilities(Capabilities c) {
        return new ModelScript(length, seed, latency, c, reasoning, faults, servedAs, reply, scores);
    }

    public ModelScript withReasoning(Reasoning r) {
        return new ModelScript(length, seed, latency, capabilities, r, faults, servedAs, reply, scores);
    }

    /** Answers naming {@code model} (a dated snapshot, another model) whatever name the request asked for. */
    public ModelScript withServedAs(String model) {
        return new ModelScript(length, seed, latency, capabilities, reasoning, faults, model, reply, scores);
    }

    public ModelScript withFaults(List<FaultChance> f) {
        return new ModelScript(length, seed, latency, capabilities, reasoning, f, servedAs, reply, scores);
    }

    /** Writes {@code text} (its words as tokens, at most {@link #length}) in place of the seeded text. */
    public ModelScript withReply(String text) {
        return new ModelScript(length, seed, latency, capabilities, reasoning, faults, servedAs, text, scores);
    }

    /**
     * A judge: answers the score of the first of {@code keywordScores}' keywords (in its order) found in the
     * request's last user message.
     */
    public ModelScript withScores(Map<String, Integer> keywordScores) {
        return new ModelScript(length, seed, latency, capabilities, reasoning, faults, servedAs, reply,
                keywordScores);
    }

    /**
     * The scripted content for a request whose last user message is {@code lastUserMessage}: the score of the first
     * keyword found, else the reply; null when the model writes the seeded text.
     */
    String scriptedContent(String lastUserMessage) {
        for (Map.Entry<String, Integer> e : scores.entrySet()) {
            if (lastUserMessage != null && lastUserMessage.contains(e.getKey())) {
                return String.valueOf(e.getValue());
            }
        }
        return reply;
    }

    /**
     * Latency model. TTFT = ({@code ttftBaseMs} + {@code ttftMsPer1kPromptTokens} × prompt tokens / 1000) ×
     * (1 ± {@code jitter}, uniform), and with probability {@code heavyTailProbability} × a slow-down factor: exactly
     * {@code heavyTailFactor} (a step tail, {@code heavyTailShape} 0), or drawn from a Pareto distribution with
     * minimum {@code heavyTailFactor} and shape {@code heavyTailShape} (a continuous heavy tail, as when requests
     * queue at an overloaded provider), capped at {@value #MAX_TAIL_FACTOR}.
     * Prompt tokens are BPE tokens with chat framing ({@link SimText#estimateTokens}), as a real provider's
     * prefill cost tracks them.
     *
     * @param tokensPerSecond decode speed; 0 or less writes every token at once
     * @param heavyTailShape  0 for the step tail; else the Pareto shape α &gt; 0 (smaller is heavier: P(factor &gt; x)
     *                        = (heavyTailFactor / x)^α, and the mean is infinite for α ≤ 1 but for the cap)
     */
    public record Latency(long ttftBaseMs, double ttftMsPer1kPromptTokens, double tokensPerSecond, double jitter,
                          double heavyTailProbability, double heavyTailFactor, double heavyTailShape) {

        /** The largest Pareto slow-down factor: the tail stays heavy without overflowing a TTFT. */
        public static final double MAX_TAIL_FACTOR = 1000;
        public static final Latency INSTANT = new Latency(0, 0, 0, 0, 0, 1, 0);

        public Latency {
            if (!(heavyTailShape >= 0) || Double.isInfinite(heavyTailShape)) {
                throw new IllegalArgumentException(
                        "heavy_tail_shape must be 0 (step) or a finite Pareto shape > 0, got " + heavyTailShape);
            }
        }

        public static Latency of(long ttftBaseMs, double tokensPerSecond) {
            return new Latency(ttftBaseMs, 0, tokensPerSecond, 0, 0, 1, 0);
        }

        public Latency withTtftPer1kPromptTokens(double ms) {
            return new Latency(ttftBaseMs, ms, tokensPerSecond, jitter, heavyTailProbability, heavyTailFactor,
                    heavyTailShape);
        }

        public Latency withJitter(double fraction) {
            return new Latency(ttftBaseMs, ttftMsPer1kPromptTokens, tokensPerSecond, fraction, heavyTailProbability,
                    heavyTailFactor, heavyTailShape);
        }

        /** A step tail: with {@code probability} the TTFT is exactly {@code factor} times longer. */
        public Latency withHeavyTail(double probability, double factor) {
            return new Latency(ttftBaseMs, ttftMsPer1kPromptTokens, tokensPerSecond, jitter, probability, factor, 0);
        }

        /**
         * A continuous heavy tail: with {@code probability} the TTFT is multiplied by a Pareto factor with minimum
         * {@code minFactor} (x<sub>m</sub>) and shape {@code shape} (α), capped at {@value #MAX_TAIL_FACTOR}.
         */
        public Latency withParetoTail(double probability, double minFactor, double shape) {
            if (!(shape > 0)) {
                throw new IllegalArgumentException("a Pareto shape must be > 0, got " + shape);
            }
            return new Latency(ttftBaseMs, ttftMsPer1kPromptTokens, tokensPerSecond, jitter, probability, minFactor,
                    shape);
        }

        /**
         * The slow-down factor of a slowed answer for a uniform {@code v} in [0, 1): the step factor, or the Pareto
         * inverse CDF x<sub>m</sub> · (1 − v)^(−1/α), capped.
         */
        double slowdown(double v) {
            if (heavyTailShape == 0) {
                return heavyTailFactor;
            }
            return Math.min(MAX_TAIL_FACTOR, heavyTailFactor * Math.pow(1 - v, -1 / heavyTailShape));
        }
    }

    /** How the model reports token usage. */
    public enum UsageMode {
        /** Never sends {@code usage} (the gateway must count tokens itself). */
        NONE,
        /** Non-streaming always; streaming only when {@code stream_options.include_usage} is true (OpenAI). */
        STANDARD,
        /** Also in streams that did not ask for it (some providers do). */
        ALWAYS,
        /** Non-streaming only: ignores {@code stream_options.include_usage}. */
        NON_STREAM_ONLY
    }

    /** The form an embeddings answer's vectors take. */
    public enum EmbeddingsEncoding {
        /** As the request's {@code encoding_format} asks: floats, or with {@code base64} base64 (OpenAI). */
        AS_ASKED,
        /** Always floats: the server ignores {@code encoding_format}. */
        FLOAT,
        /** Always base64 strings of little-endian float32 values, whatever {@code encoding_format} asks. */
        BASE64
    }

    /** The assistant-prefill continuation dialects a model may accept. */
    public enum Continuation {
        /** vLLM/SGLang: top-level {@code continue_final_message: true, add_generation_prompt: false}. */
        CONTINUE_FINAL_MESSAGE,
        /** DeepSeek/Mistral: {@code prefix: true} on the last assistant message. */
        PREFIX,
        /** Anthropic style: a trailing assistant message, nothing else. */
        TRAILING_ASSISTANT
    }

    /**
     * What requests the model accepts. A request needing a missing capability gets 400.
     *
     * @param continuation prefill dialects accepted; any other prefill request gets 400
     * @param overlapChars code points of the partial message re-emitted when answering a "Continue exactly where"
     *                     instruction; null means 12
     * @param reasoningParameters refuses what OpenAI's reasoning models (o-series, gpt-5) refuse, as they do: 400
     *                     {@code unsupported_parameter} (param {@code max_tokens}) to {@code max_tokens}, which they
     *                     take as {@code max_completion_tokens}, and 400 {@code unsupported_value} (param
     *                     {@code temperature}) to a {@code temperature} other than 1
     * @param unknownFields request fields the server does not know and refuses, as vLLM did before it took
     *                     {@code stream_options} (its request schema forbade extra fields): a request with one of them
     *                     gets vLLM's 400 naming it, in vLLM's own error form (no {@code error} envelope, {@code param}
     *                     null, the field in the message)
     * @param embeddingsEncoding the form an embeddings answer's vectors take: as the request's {@code encoding_format}
     *                     asks ({@link EmbeddingsEncoding#AS_ASKED}, the default; null means it), or always floats or
     *                     always base64 whatever it asks, as some OpenAI-compatible servers answer
     */
    public record Capabilities(boolean tools, boolean jsonMode, boolean images, UsageMode usage,
                               Set<Continuation> continuation, Integer overlapChars, boolean reasoningParameters,
                               Set<String> unknownFields, EmbeddingsEncoding embeddingsEncoding) {

        public static final int DEFAULT_OVERLAP = 12;
        public static final Capabilities DEFAULT = new Capabilities(true, true, false, UsageMode.STANDARD,
                EnumSet.allOf(Continuation.class), null, false, null, null);

        public Capabilities {
            usage = usage == null ? UsageMode.STANDARD : usage;
            continuation = continuation == null || continuation.isEmpty()
                    ? Set.of() : Set.copyOf(EnumSet.copyOf(continuation));
            overlapChars = overlapChars == null ? DEFAULT_OVERLAP : overlapChars;
            unknownFields = unknownFields == null ? Set.of() : Set.copyOf(unknownFields);
            embeddingsEncoding = embeddingsEncoding == null ? EmbeddingsEncoding.AS_ASKED : embeddingsEncoding;
        }

        /** Refusing requests that carry any of {@code fields}, as an older vLLM refuses a field it does not know. */
        public Capabilities withUnknownFields(Set<String> fields) {
            return new Capabilities(tools, jsonMode, images, usage, continuation, overlapChars, reasoningParameters,
                    fields, embeddingsEncoding);
        }

        public Capabilities withTools(boolean b) {
            return new Capabilities(b, jsonMode, images, usage, continuation, overlapChars, reasoningParameters,
                    unknownFields, embeddingsEncoding);
        }

        public Capabilities withJsonMode(boolean b) {
            return new Capabilities(tools, b, images, usage, continuation, overlapChars, reasoningParameters,
                    unknownFields, embeddingsEncoding);
        }

        public Capabilities withImages(boolean b) {
            return new Capabilities(tools, jsonMode, b, usage, continuation, overlapChars, reasoningParameters,
                    unknownFields, embeddingsEncoding);
        }

        public Capabilities withUsage(UsageMode u) {
            return new Capabilities(tools, jsonMode, images, u, continuation, overlapChars, reasoningParameters,
                    unknownFields, embeddingsEncoding);
        }

        public Capabilities withContinuation(Set<Continuation> c) {
            return new Capabilities(tools, jsonMode, images, usage, c, overlapChars, reasoningParameters,
                    unknownFields, embeddingsEncoding);
        }

        /** Refusing {@code max_tokens} and a non-default {@code temperature} as OpenAI's reasoning models do. */
        public Capabilities withReasoningParameters(boolean b) {
            return new Capabilities(tools, jsonMode, images, usage, continuation, overlapChars, b, unknownFields,
                    embeddingsEncoding);
        }

        /** Answering embeddings in the form {@code e} whatever the request's {@code encoding_format} asks. */
        public Capabilities withEmbeddingsEncoding(EmbeddingsEncoding e) {
            return new Capabilities(tools, jsonMode, images, usage, continuation, overlapChars, reasoningParameters,
                    unknownFields, e);
        }

        public Capabilities withOverlapChars(int n) {
            return new Capabilities(tools, jsonMode, images, usage, continuation, n, reasoningParameters,
                    unknownFields, embeddingsEncoding);
        }
    }

    /**
     * Reasoning before the answer: {@code tokens} deltas in {@code delta.<field>} (at decode speed), then
     * a silent pause of {@code pauseMs} during which an SSE comment {@code : keep-alive} is sent every
     * {@code keepAliveMs} (0 = none).
     *
     * @param counted reasoning tokens are completion tokens: a request's {@code max_tokens} (or
     *                {@code max_completion_tokens}) caps reasoning and content together, as OpenAI's reasoning
     *                models, DeepSeek R1 and vLLM's reasoning parsers do; a budget spent thinking ends the answer
     *                with {@code finish_reason: length} and no content. False: the budget caps the content only
     * @param field   the delta field reasoning is streamed in: {@code reasoning_content} (DeepSeek, older vLLM; the
     *                default) or {@code reasoning} (newer vLLM, OpenRouter)
     */
    /**
     * @param continuationAsReasoning a reasoning parser that takes what the model writes for reasoning until it writes
     *                                the end of its thinking (vLLM's {@code deepseek_r1}): a prefill continuation of
     *                                visible content never writes it, so the whole continuation comes as reasoning
     */
    public record Reasoning(int tokens, long pauseMs, long keepAliveMs, boolean counted, String field,
                            boolean continuationAsReasoning) {
        public static final Reasoning NONE = new Reasoning(0, 0, 0);
        public static final String REASONING_CONTENT = "reasoning_content";

        public Reasoning {
            field = field == null || field.isBlank() ? REASONING_CONTENT : field;
            if (!field.equals(REASONING_CONTENT) && !field.equals("reasoning")) {
                throw new IllegalArgumentException("reasoning field must be reasoning_content or reasoning, got "
                        + field);
            }
        }

        public Reasoning(int tokens, long pauseMs, long keepAliveMs, boolean counted, String field) {
            this(tokens, pauseMs, keepAliveMs, counted, field, false);
        }

        /** Reasoning the request's token budget does not cap, in {@code reasoning_content}. */
        public Reasoning(int tokens, long pauseMs, long keepAliveMs) {
            this(tokens, pauseMs, keepAliveMs, false, null);
        }

        /** The same reasoning, counted against the request's token budget. */
        public Reasoning capped() {
            return new Reasoning(tokens, pauseMs, keepAliveMs, true, field, continuationAsReasoning);
        }

        /** The same reasoning, streamed in {@code delta.<name>}. */
        public Reasoning inField(String name) {
            return new Reasoning(tokens, pauseMs, keepAliveMs, counted, name, continuationAsReasoning);
        }

        /** The same reasoning, behind a parser that streams a prefill's continuation as reasoning. */
        public Reasoning continuingAsReasoning() {
            return new Reasoning(tokens, pauseMs, keepAliveMs, counted, field, true);
        }
    }

    /** A fault rolled with the given probability (0..1) for each request. */
    public record FaultChance(double probability, Fault fault) {
    }
}
