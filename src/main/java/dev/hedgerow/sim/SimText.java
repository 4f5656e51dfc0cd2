package dev.hedgerow.sim;

import dev.hedgerow.routing.TokenCounter;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.SplittableRandom;

/**
 * The simulator's deterministic text. A completion is a function of the simulator-wide text seed and the content
 * of the first user message only (never of the model), so two routes write byte-identical text for one prompt and
 * a resumed stream can be checked byte for byte. A token is one word with its leading space (the first has none);
 * the vocabulary includes multi-byte UTF-8 words. The text of n tokens is a prefix of the text of n + 1 tokens.
 * Stateless and thread-safe.
 */
public final class SimText {

    static final List<String> VOCAB = List.of(
            "the", "hedge", "row", "of", "quiet", "green", "leaves", "and", "a", "small", "bird",
            "sings", "over", "field", "river", "stone", "light", "morning", "slowly", "we", "walk",
            "to", "old", "gate", "where", "wind", "turns", "bright", "café", "naïve", "日本語", "🌿",
            "über", "señor", "crème", "façade", "smörgåsbord", "Ωmega", "déjà", "vu", "東京", "🌍");

    private SimText() {
    }

    /**
     * The exact completion text for a prompt: the first {@code maxTokens} tokens. A model scripted with length L
     * answering a request with {@code max_tokens} M writes {@code expected(seed, msg, min(L, M))}.
     */
    public static String expected(long seed, String firstUserMessage, int maxTokens) {
        return String.join("", tokens(seed, firstUserMessage, maxTokens));
    }

    /**
     * The one instruction the simulator obeys, so a prober's known-answer check works on it as on a real model: a
     * first user message {@code "Reply with exactly: <text>"} is answered with {@code <text>}.
     */
    public static final String REPLY_EXACTLY = "Reply with exactly: ";

    /**
     * The completion as tokens (content deltas of a stream): the seeded text, or the instructed reply (word tokens,
     * at most {@code count}) when the message starts with {@link #REPLY_EXACTLY}.
     */
    public static List<String> tokens(long seed, String firstUserMessage, int count) {
        if (firstUserMessage != null && firstUserMessage.startsWith(REPLY_EXACTLY)) {
            String[] words = firstUserMessage.substring(REPLY_EXACTLY.length()).strip().split("\\s+");
            List<String> out = new ArrayList<>();
            for (int i = 0; i < words.length && i < count; i++) {
                out.add(i == 0 ? words[i] : " " + words[i]);
            }
            return out;
        }
        return generate(mix(seed, hash(firstUserMessage)), count);
    }

    /** Deterministic reasoning text (a different stream from the completion, same vocabulary). */
    public static List<String> reasoningTokens(long seed, String firstUserMessage, int count) {
        return generate(mix(seed ^ 0x5eed5eedL, hash(firstUserMessage)), count);
    }

    /**
     * Chat framing per message: OpenAI's {@value TokenCounter#TOKENS_PER_MESSAGE} plus 1 for the role (every
     * standard role is one {@code o200k_base} token).
     */
    static final int TOKENS_PER_MESSAGE = TokenCounter.TOKENS_PER_MESSAGE + 1;

    /**
     * Prompt tokens of a chat request with the given message texts, counted as a provider counts them: each text
     * by a real BPE tokenizer ({@link TokenCounter#shared()}, {@code o200k_base}), plus {@link #TOKENS_PER_MESSAGE}
     * per message and {@value TokenCounter#REPLY_PRIMING} priming the reply. For plain text messages (no
     * {@code name}, no tools) this is exactly what the gateway's {@link TokenCounter#countRequest} counts. It drives
     * the scripted TTFT ({@link ModelScript.Latency}) and {@code usage.prompt_tokens}.
     */
    public static int estimateTokens(List<String> messageTexts) {
        TokenCounter counter = TokenCounter.shared();
        int n = TokenCounter.REPLY_PRIMING;
        for (String t : messageTexts) {
            n += TOKENS_PER_MESSAGE + counter.countText(t);
        }
        return n;
    }

    private static List<String> generate(long seed, int count) {
        SplittableRandom rng = new SplittableRandom(seed);
        List<String> out = new ArrayList<>(Math.max(0, count));
        int sentence = 0;
        for (int i = 0; i < count; i++) {
            String word = VOCAB.get(rng.nextInt(VOCAB.size()));
            // Roughly every 8 words a sentence ends; the full stop rides on the word so tokens stay words.
            if (++sentence >= 6 && rng.nextInt(4) == 0) {
                word = word + ".";
                sentence = 0;
            }
            out.add(i == 0 ? word : " " + word);
        }
        return out;
    }

    /** 64-bit FNV-1a over the UTF-8 bytes: stable across JVMs, unlike a salted hash. */
    static long hash(String s) {
        long h = 0xcbf29ce484222325L;
        for (byte b : (s == null ? "" : s).getBytes(StandardCharsets.UTF_8)) {
            h ^= b & 0xff;
            h *= 0x100000001b3L;
        }
        return h;
    }

    /** SplitMix64 finaliser of the pair, so nearby seeds give unrelated streams. */
    static long mix(long a, long b) {
        long z = a * 0x9e3779b97f4a7c15L + b;
        z = (z ^ (z >>> 30)) * 0xbf58476d1ce4e5b9L;
        z = (z ^ (z >>> 27)) * 0x94d049bb133111ebL;
        return z ^ (z >>> 31);
    }
}
