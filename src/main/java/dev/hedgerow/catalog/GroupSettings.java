package dev.hedgerow.catalog;

import java.time.Duration;
import java.util.List;
import java.util.Set;

/**
 * The settings of one alias group. A strategy only orders candidates; everything else here (failover, hedging,
 * resume, breaker, timeouts, the head hold) is applied by the dispatcher for every strategy. Immutable.
 *
 * @param headHold the longest a stream's client hears nothing while no content has arrived: past it the response
 *                 head (200) goes out and keep-alive comments follow until the content does; {@link Duration#ZERO}
 *                 = off, the head is held until the first content or the final error
 */
public record GroupSettings(Strategy strategy, boolean resumeMidStream, boolean hedging, Breaker breaker,
                            Retry retry, Timeouts timeouts, Balancer balancer, Slo slo, Duration headHold) {

    /**
     * Half the idle limit of the usual proxies in front of a gateway (nginx and AWS ALB close a connection idle for
     * 60 s, Cloudflare at 100 s), so a client behind one never loses a stream that is still thinking.
     */
    public static final Duration DEFAULT_HEAD_HOLD = Duration.ofSeconds(30);

    public static GroupSettings defaults() {
        return new GroupSettings(Strategy.AUTO, true, true, Breaker.defaults(), Retry.defaults(), Timeouts.defaults(),
                Balancer.defaults(), Slo.defaults(), DEFAULT_HEAD_HOLD);
    }

    public GroupSettings withStrategy(Strategy s) {
        return new GroupSettings(s, resumeMidStream, hedging, breaker, retry, timeouts, balancer, slo, headHold);
    }

    /**
     * Circuit breaker with Kong's counting: total (not consecutive) failures; at {@code maxFails} the route is
     * excluded for {@code failTimeout}, then exactly one half-open probe is let through fleet-wide. Trifrost's
     * 30 s cooldown is {@code maxFails 1, failTimeout 30s}, the default.
     */
    /**
     * @param maxFails    failures that open the breaker (counted as Kong counts them); 0 = never open it, as nginx
     *                    and Kong read {@code max_fails: 0}: a failing route is still failed over, never cooled down
     * @param failTimeout how long an open breaker keeps the route out before a half-open probe
     */
    public record Breaker(int maxFails, Duration failTimeout) {
        public static Breaker defaults() {
            return new Breaker(1, Duration.ofSeconds(30));
        }

        /** The failure count that opens the breaker: {@link #maxFails}, or never (the largest count) for 0. */
        public int threshold() {
            return maxFails == 0 ? Integer.MAX_VALUE : maxFails;
        }
    }

    /**
     * @param maxAttempts       attempts before the first content frame (Trifrost/Keln: 3); Kong's {@code retries}
     *                          is {@code maxAttempts - 1}
     * @param maxResumes        resumes after the first content frame
     * @param failoverCriteria  which failures fail over (Kong {@code failover_criteria})
     * @param maxRetryAfterWait a 429 whose Retry-After is at most this is waited for (priority strategy)
     */
    public record Retry(int maxAttempts, int maxResumes, Set<FailoverCriterion> failoverCriteria,
                        Duration maxRetryAfterWait) {
        public Retry {
            failoverCriteria = Set.copyOf(failoverCriteria);
        }

        public static Retry defaults() {
            return new Retry(3, 3, FailoverCriterion.defaults(), Duration.ofSeconds(3));
        }

        /**
         * Whether an upstream's answer with this error status counts against the route's breaker: a 401 (the
         * provider refusing Hedgerow's own key), a 429 or any 5xx always, another status when the failover criteria
         * list it ({@code http_403}, {@code http_404}). Any other 4xx is the request's own fault, passed through and
         * not counted. One rule for live attempts and the prober's probes.
         */
        public boolean routeFault(int status) {
            FailoverCriterion criterion = FailoverCriterion.forStatus(status);
            return status == 401 || status == 429 || status >= 500 || criterion != null && allows(criterion);
        }

        /** Whether the failover criteria let a failure of {@code criterion} fail over ({@code http_5xx}: any 5xx). */
        public boolean allows(FailoverCriterion criterion) {
            return FailoverCriterion.listed(failoverCriteria, criterion);
        }
    }

    /**
     * @param connect time to establish the TCP/TLS connection
     * @param read    time to the response head, and between two reads of a whole (non-SSE) body, as nginx's
     *                proxy_read_timeout (the first-token window and the stall watchdog are the dispatcher's)
     * @param write   time to send the request body
     * @param firstTokenFloor the smallest first-token (hedge) window; {@code firstTokenCeiling} the wait after
     *                which a silent attempt is abandoned (scaled up with prompt size)
     * @param request the longest a client waits for its answer to progress ({@code request_timeout}): a non-streamed
     *                answer whole, a stream's first content and each next one, across every attempt; while it is set,
     *                {@code read} also bounds every silence of each attempt as Kong's proxy read timeout does (a
     *                non-streamed answer's whole wait, a stream's first token and its gaps). {@link Duration#ZERO} =
     *                off (the default): no request deadline, and an attempt's silences are judged as described above
     */
    public record Timeouts(Duration connect, Duration read, Duration write, Duration firstTokenFloor,
                           Duration firstTokenCeiling, Duration stallFloor, Duration request) {
        public static Timeouts defaults() {
            return new Timeouts(Duration.ofSeconds(5), Duration.ofSeconds(60), Duration.ofSeconds(10),
                    Duration.ofMillis(500), Duration.ofSeconds(30), Duration.ofSeconds(5), Duration.ZERO);
        }

        /** Whether the group set {@code request_timeout}: a request deadline, and read_timeout as Kong reads it. */
        public boolean bounded() {
            return !request.isZero();
        }
    }

    /**
     * Strategy-specific knobs (Kong's {@code config.balancer}). {@code hashOnHeader} defaults to Kong's
     * {@value #KONG_HASH_HEADER}, so clients moving from Kong keep their sticky sessions without a setting.
     * The semantic strategy compares embeddings by {@code distanceMetric}; {@code threshold} is read in its terms
     * (see {@link DistanceMetric}). {@code judge} is set exactly when the group is {@code lowest_usage} with
     * {@code tokens_count_strategy: llm_accuracy} (the loader refuses it anywhere else), else null.
     */
    public record Balancer(String hashOnHeader, LatencyStrategy latencyStrategy,
                           TokensCountStrategy tokensCountStrategy, Duration usageWindow, String embeddingsRoute,
                           DistanceMetric distanceMetric, double threshold, double slowBar, Judge judge) {
        public static final String KONG_HASH_HEADER = "X-Kong-LLM-Request-ID";

        public static Balancer defaults() {
            return new Balancer(KONG_HASH_HEADER, LatencyStrategy.TPOT, TokensCountStrategy.TOTAL_TOKENS,
                    Duration.ofMinutes(10), null, DistanceMetric.COSINE, DistanceMetric.COSINE.defaultThreshold(),
                    2.0, null);
        }
    }

    /**
     * The judge of {@code tokens_count_strategy: llm_accuracy} (Kong's AI LLM as Judge plugin): after a chat answer of
     * the group, with probability {@code samplingRate}, the route {@code route} (a chat route of the same org, called
     * directly, not through an alias) is asked to score it 1..100.
     *
     * @param prompt            the judge's system prompt
     * @param messageCountback  how many of the request's last messages (after the ignored roles are dropped) the
     *                          judge is shown
     * @param maxTokens         the judge's answer budget: a score is at most 3 digits
     * @param timeout           how long a judge call may take before it counts as failed
     */
    public record Judge(String route, String prompt, double samplingRate, int messageCountback,
                        boolean ignoreSystemPrompts, boolean ignoreAssistantPrompts, boolean ignoreToolPrompts,
                        int maxTokens, Duration timeout) {
        /** Kong's default judge prompt, word for word. */
        public static final String DEFAULT_PROMPT = "You are a strict evaluator. You will be given a request and a "
                + "response. Your task is to judge whether the response is correct or incorrect. You must assign a "
                + "score between 1 and 100, where: 100 represents a completely correct and ideal response, 1 "
                + "represents a completely incorrect or irrelevant response. Your score must be a single number only "
                + "\u2014 no text, labels, or explanations. Use the full range of values (e.g., 13, 47, 86), not just "
                + "round numbers like 10, 50, or 100. Be accurate and consistent, as this score will be used by "
                + "another model for learning and evaluation.";
        public static final double DEFAULT_SAMPLING_RATE = 1;
        public static final int DEFAULT_MESSAGE_COUNTBACK = 3;
        /** Room for a score ("87", "100") and a stray newline or space, which some models add. */
        public static final int DEFAULT_MAX_TOKENS = 8;
        public static final Duration DEFAULT_TIMEOUT = Duration.ofSeconds(60);

        /** Every setting at its default, judged by {@code route}. */
        public static Judge defaults(String route) {
            return new Judge(route, DEFAULT_PROMPT, DEFAULT_SAMPLING_RATE, DEFAULT_MESSAGE_COUNTBACK, true, true, true,
                    DEFAULT_MAX_TOKENS, DEFAULT_TIMEOUT);
        }
    }

    /** Keln's speed targets: sustained decode and first token on standard-size prompts. */
    public record Slo(double decodeTokensPerSecond, Duration firstToken, int standardPromptMaxTokens) {
        public static Slo defaults() {
            return new Slo(50, Duration.ofSeconds(5), 8192);
        }
    }

    /**
     * How the semantic strategy compares a prompt's embedding with a description's (Kong's {@code distance_metric}),
     * and so what {@code threshold} means. {@link #COSINE}: the cosine similarity, higher is closer; a match is a
     * similarity of at least the threshold, which lies in 0..1 (default 0.5). {@link #EUCLIDEAN}: the Euclidean (L2,
     * not squared) distance, lower is closer; a match is a distance of at most the threshold, which is any distance
     * ≥ 0 (default 1.0: for unit-length embeddings, as OpenAI's are, distance = √(2 − 2·cosine), so 1.0 is the
     * cosine default's 0.5 and distances lie in 0..2).
     */
    public enum DistanceMetric implements Spelled {
        COSINE(0.5), EUCLIDEAN(1.0);

        private final double defaultThreshold;

        DistanceMetric(double defaultThreshold) {
            this.defaultThreshold = defaultThreshold;
        }

        public double defaultThreshold() {
            return defaultThreshold;
        }
    }

    /** Kong's {@code latency_strategy}: time per output token or end to end (Kong spells both as Hedgerow). */
    public enum LatencyStrategy implements Spelled {
        TPOT, E2E
    }

    /**
     * Kong's {@code tokens_count_strategy}; Kong's hyphenated spellings ({@code total-tokens}) are accepted.
     * {@link #LLM_ACCURACY} is no usage at all: members are ranked by the scores a judge model gave their answers.
     */
    public enum TokensCountStrategy implements Spelled {
        PROMPT_TOKENS("prompt-tokens"), COMPLETION_TOKENS("completion-tokens"), TOTAL_TOKENS("total-tokens"), COST,
        LLM_ACCURACY("llm-accuracy");

        private final List<String> synonyms;

        TokensCountStrategy(String... synonyms) {
            this.synonyms = List.of(synonyms);
        }

        @Override
        public List<String> synonyms() {
            return synonyms;
        }
    }
}
