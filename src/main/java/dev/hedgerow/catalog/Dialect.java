package dev.hedgerow.catalog;

/**
 * How a provider speaks beyond plain OpenAI chat completions: chiefly how it continues a partial assistant
 * message (mid-stream resume) and where its serving metrics live.
 */
public enum Dialect {
    /** Plain OpenAI: no prefill; resume by instruction plus overlap trimming. */
    OPENAI,
    /** vLLM: {@code continue_final_message: true, add_generation_prompt: false}; Prometheus metrics. */
    VLLM,
    /** SGLang: same continuation as vLLM; Prometheus metrics. */
    SGLANG,
    /** DeepSeek/Mistral style {@code prefix: true} on the last assistant message. */
    PREFIX,
    /** Anthropic-style: a trailing assistant message is continued as is. */
    ANTHROPIC;

    public static Dialect parse(String s) {
        return Dialect.valueOf(s.trim().toUpperCase(java.util.Locale.ROOT));
    }

    public String wireName() {
        return name().toLowerCase(java.util.Locale.ROOT);
    }
}
