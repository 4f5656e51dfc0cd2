package dev.hedgerow.prober;

import com.fasterxml.jackson.databind.JsonNode;
import dev.hedgerow.routing.InterTokenStats;

/** What one probe request to a route came to. */
public sealed interface ProbeOutcome {

    /**
     * The route answered.
     *
     * @param ttftMs     time from sending to the first token as the gateway counts it: the first content,
     *                   reasoning or tool call delta, or a finish that came before any
     * @param tokens     completion tokens (the provider's usage count, else content and reasoning deltas)
     * @param decodeMs   time from the first to the last token
     * @param e2eMs      time from sending to the end of the answer
     * @param model      the {@code model} the response named (null when absent)
     * @param content    the answer's visible text (empty for a model whose token budget ran out while thinking)
     * @param thinkMs    time from the first reasoning to the first visible delta, or -1 when the answer did not
     *                   think first or did not get past its thinking
     */
    record Answered(long ttftMs, int tokens, long decodeMs, long e2eMs, String model, String content, long thinkMs)
            implements ProbeOutcome {
    }

    /**
     * An embeddings route answered: a 200 that is one JSON object with an embeddings list ({@code data}) and no
     * {@code error}, what the gateway relays as an answer. What the list holds is the known-answer check's business,
     * not the breaker's, as it is not the gateway's.
     *
     * @param e2eMs     time from sending to the whole answer (its latency: there is no first token)
     * @param model     the {@code model} the response named (null when absent)
     * @param embedding the first item's {@code embedding} as it came (a missing node when there is none)
     */
    record Embedded(long e2eMs, String model, JsonNode embedding) implements ProbeOutcome {
    }

    /**
     * The route failed: a status other than 200 (0 for transport failures and timeouts), and why, in a few words
     * (never a secret: provider error bodies are not copied).
     *
     * @param refused    the request field an error answer says it refuses (its {@code error.param}, else
     *                   {@code max_tokens} or {@code temperature} when its message names one), or null
     * @param holdMillis the wait a capacity refusal (429, 503, 529) asked for in its retry headers, which holds the
     *                   route as a live attempt's does; 0 for none
     */
    record Failed(int status, String reason, String refused, long holdMillis) implements ProbeOutcome {
        Failed(int status, String reason) {
            this(status, reason, null, 0);
        }
    }

    /**
     * The route answered 200 and was still serving when the probe's time ran out, with no content yet: slow, not
     * broken (a route that never answers, or answers an error, {@link Failed}).
     *
     * @param waitedMs how long the probe waited: a lower bound of the route's time to first token
     */
    record Slow(long waitedMs) implements ProbeOutcome {
    }

    /**
     * The route's 200 stream had begun its answer and was still open when the probe's time ran out: serving slowly,
     * or stalled. Which one is the prober's call, by {@code silentMs} against the stream's allowed gap.
     *
     * @param ttftMs   time from sending to the first content
     * @param tokens   content deltas received (one token each)
     * @param decodeMs time from the first content to the cut-off: the tokens after the first took this long, the
     *                 gap still running included
     * @param silentMs time from the last sign of life (an event, or a keep-alive comment) to the cut-off
     * @param rhythm   this stream's gaps between content deltas
     * @param waitedMs how long the probe waited: a lower bound of the answer's end-to-end time
     */
    record Unfinished(long ttftMs, int tokens, long decodeMs, long silentMs, InterTokenStats rhythm, long waitedMs)
            implements ProbeOutcome {
    }
}
