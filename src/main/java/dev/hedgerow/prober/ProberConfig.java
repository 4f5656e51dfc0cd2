package dev.hedgerow.prober;

import java.time.Duration;

/**
 * Bounds and sizes of a probe round.
 *
 * @param concurrency          probes in flight at once in one round
 * @param probeTimeout         hard limit on one probe (or one metrics scrape): a slow provider fails its probe
 * @param probeMaxTokens       {@code max_tokens} of the speed probe (its cost bound)
 * @param verifyMaxTokens      {@code max_tokens} of the known-answer check
 * @param standardPromptTokens prompt size of the speed probe (a "standard-size" prompt for the SLO)
 * @param capacityTtl          lifetime of a scraped capacity report (a stale one expires by itself)
 * @param maxQueue             queue depth at which a scraped route has no headroom left
 * @param verificationTtl      lifetime of a verification verdict (re-judged while the prober runs; a verdict lives at
 *                             least twice {@code verifyEvery}, so a running prober re-judges it before it lapses)
 * @param minInterval          the least time between the starts of two rounds anywhere in the fleet (what bounds the
 *                             cost of callers asking for rounds back to back); zero for no bound
 * @param verifyEvery          how long a passing known-answer check holds before a round checks the route again (each
 *                             check is a paid request); a route with no verdict, a failing one, or a changed model or
 *                             provider is checked on every round. Zero: every round
 */
public record ProberConfig(int concurrency, Duration probeTimeout, int probeMaxTokens, int verifyMaxTokens,
                           int standardPromptTokens, Duration capacityTtl, int maxQueue, Duration verificationTtl,
                           Duration minInterval, Duration verifyEvery) {

    /**
     * The longest verification period: a verdict lives twice it, and every route blob has a TTL of at most 7 days (a
     * removed route's keys go by themselves).
     */
    public static final Duration MAX_VERIFY_EVERY = Duration.ofDays(3);

    public ProberConfig {
        if (concurrency < 1 || probeMaxTokens < 2 || verifyMaxTokens < 1 || standardPromptTokens < 1
                || maxQueue < 1 || probeTimeout.isNegative() || probeTimeout.isZero()) {
            throw new IllegalArgumentException("concurrency, timeout, tokens and queue must be positive");
        }
        if (minInterval.isNegative()) {
            throw new IllegalArgumentException("the minimum interval between rounds cannot be negative");
        }
        if (verifyEvery.isNegative()) {
            throw new IllegalArgumentException("the verification period (verify-every) cannot be negative");
        }
        if (verifyEvery.compareTo(MAX_VERIFY_EVERY) > 0) {
            throw new IllegalArgumentException("the verification period (verify-every) is at most 3 days: a verdict "
                    + "lives twice the period, and no route blob lives longer than 7 days");
        }
    }

    /** How long a verdict is kept: {@link #verificationTtl()}, or twice {@link #verifyEvery()} when that is longer. */
    public Duration verdictTtl() {
        Duration twice = verifyEvery.multipliedBy(2);
        return twice.compareTo(verificationTtl) > 0 ? twice : verificationTtl;
    }

    /** The defaults, which are also the function's configuration defaults ({@code hedgerow.prober.*}). */
    public static ProberConfig defaults() {
        return new ProberConfig(4, Duration.ofSeconds(10), 32, 16, 256, Duration.ofSeconds(45), 64,
                Duration.ofMinutes(30), Duration.ofSeconds(10), Duration.ofMinutes(10));
    }

    public ProberConfig withProbeTimeout(Duration d) {
        return new ProberConfig(concurrency, d, probeMaxTokens, verifyMaxTokens, standardPromptTokens, capacityTtl,
                maxQueue, verificationTtl, minInterval, verifyEvery);
    }

    public ProberConfig withConcurrency(int n) {
        return new ProberConfig(n, probeTimeout, probeMaxTokens, verifyMaxTokens, standardPromptTokens, capacityTtl,
                maxQueue, verificationTtl, minInterval, verifyEvery);
    }

    public ProberConfig withMinInterval(Duration d) {
        return new ProberConfig(concurrency, probeTimeout, probeMaxTokens, verifyMaxTokens, standardPromptTokens,
                capacityTtl, maxQueue, verificationTtl, d, verifyEvery);
    }

    public ProberConfig withVerifyEvery(Duration d) {
        return new ProberConfig(concurrency, probeTimeout, probeMaxTokens, verifyMaxTokens, standardPromptTokens,
                capacityTtl, maxQueue, verificationTtl, minInterval, d);
    }
}
