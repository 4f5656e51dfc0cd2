package dev.hedgerow.prober;

/** What one probe request to a route came to. */
public sealed interface ProbeOutcome {

    /**
     * The route answered.
     *
     * @param ttftMs     time from sending to the first content
     * @param tokens     completion tokens (the provider's usage count, else content deltas)
     * @param decodeMs   time from the first to the last content
     * @param e2eMs      time from sending to the end of the answer
     * @param model      the {@code model} the response named (null when absent)
     * @param content    the answer's text
     */
    record Answered(long ttftMs, int tokens, long decodeMs, long e2eMs, String model, String content)
            implements ProbeOutcome {
    }

    /**
     * The route failed: a status other than 200 (0 for transport failures and timeouts), and why, in a few words
     * (never a secret: provider error bodies are not copied).
     */
    record Failed(int status, String reason) implements ProbeOutcome {
    }

    /**
     * The route answered 200 and was still serving when the probe's time ran out, with no content yet: slow, not
     * broken (a route that never answers, or answers an error, {@link Failed}).
     *
     * @param waitedMs how long the probe waited: a lower bound of the route's time to first token
     */
    record Slow(long waitedMs) implements ProbeOutcome {
    }
}
