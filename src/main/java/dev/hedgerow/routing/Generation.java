package dev.hedgerow.routing;

/**
 * One generation a route served, as {@link LearnedModels#learnDecode} learns it: its decode rhythm (decode speed, the
 * SLO's sustained-decode judgment: the gaps between its tokens) and, where known, its latency (Kong's peak EWMAs of
 * {@code lowest_latency}).
 *
 * @param tokens      its completion tokens
 * @param decodeMs    from its first token to its last
 * @param latencyMs   from sending its request to its last token (a non-streamed answer: to the whole answer);
 *                    negative when not known (a probe's answer that had not ended)
 * @param wholeAnswer whether it is the client's whole answer: a resume's part is not (the answer began on another
 *                    route), so its latency is no end-to-end one, though still the latency of what this route wrote
 *
 * Immutable value; thread-safe.
 */
public record Generation(int tokens, long decodeMs, long latencyMs, boolean wholeAnswer) {

    /** A whole answer of {@code tokens} tokens, {@code e2eMs} from its request to its end. */
    public static Generation whole(int tokens, long decodeMs, long e2eMs) {
        return new Generation(tokens, decodeMs, e2eMs, true);
    }

    /** A resume's part: {@code tokens} of its own, {@code latencyMs} from its own request to its last token. */
    public static Generation part(int tokens, long decodeMs, long latencyMs) {
        return new Generation(tokens, decodeMs, latencyMs, false);
    }

    /** An answer that had not ended when it was cut off: its rhythm so far, no latency. */
    public static Generation unfinished(int tokens, long decodeMs) {
        return new Generation(tokens, decodeMs, -1, false);
    }

    /**
     * Kong's time per output token ({@code llm_tpot_latency}: latency over completion tokens, the first token's wait
     * included); NaN when the latency is unknown or there is no token to spread it over.
     */
    public double msPerToken() {
        return latencyMs >= 0 && tokens > 0 ? latencyMs / (double) tokens : Double.NaN;
    }
}
