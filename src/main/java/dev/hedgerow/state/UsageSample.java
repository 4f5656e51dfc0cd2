package dev.hedgerow.state;

/** Token usage and cost of one request (or a sum of them). */
public record UsageSample(long promptTokens, long completionTokens, double cost) {
    public static final UsageSample ZERO = new UsageSample(0, 0, 0);

    public UsageSample plus(UsageSample o) {
        return new UsageSample(promptTokens + o.promptTokens, completionTokens + o.completionTokens, cost + o.cost);
    }

    public UsageSample minus(UsageSample o) {
        return new UsageSample(promptTokens - o.promptTokens, completionTokens - o.completionTokens, cost - o.cost);
    }

    public long totalTokens() {
        return promptTokens + completionTokens;
    }
}
