package dev.hedgerow.dispatch;

import dev.hedgerow.catalog.GroupSettings;
import dev.hedgerow.routing.Candidate;
import dev.hedgerow.routing.LearnedModels;
import dev.hedgerow.routing.ThinkingTime;

import java.time.Duration;

/**
 * How long a dispatch waits: the first-token window that triggers a hedge, the silence after which an attempt is
 * abandoned, and the stall watchdog's allowed gap. Each adapts to the route's prediction and learned rhythm and to
 * the group's timeouts. Pure calculations: the dispatch arms the timers.
 */
final class TimingWindows {
    /** Allowed reasoning pause {@code max(floor, mean + K·dev)} of the route's thinking time. */
    static final double THINK_K = 4;
    /**
     * Without max_tokens, the longest answer a non-streamed request is waited for: about the largest output limit
     * of current models (32 k tokens); a longer answer should be streamed.
     */
    static final long MAX_ANSWER_TOKENS = 32_768;
    /**
     * The longest a non-streamed answer's response head is waited for (when read_timeout is shorter): the OpenAI
     * SDKs' own default timeout, after which their caller has given up on it anyway.
     */
    static final Duration MAX_WHOLE_ANSWER_WAIT = Duration.ofMinutes(10);
    /**
     * The prefill an attempt is allowed before its first token on a route not measured at its prompt's size (a
     * never-measured route's prior assumes 200 k tokens/s): 1 ms per prompt token, the speed of a slow deployment
     * (1 k tokens/s), so a 90 k-token prompt is waited for 90 s rather than the ceiling's 30, and a healthy route is
     * not abandoned and cooled down for a long prefill (found by hunt10). Below 30 k tokens the default ceiling is
     * longer. Routing and hedge windows keep the prediction: another route may still be raced meanwhile.
     */
    static final double COLD_PREFILL_MS_PER_TOKEN = 1.0;

    private final DispatchRequest req;
    private final GroupSettings settings;
    private final boolean stream;

    TimingWindows(DispatchRequest req, boolean stream) {
        this.req = req;
        this.settings = req.settings();
        this.stream = stream;
    }

    /**
     * The first-token window: the route's predicted P90 for this prompt size, never below the floor; for a stream, of
     * its first chunk of any kind (a reasoning chunk ends the window, and comes before the thinking:
     * {@link dev.hedgerow.routing.TtftEstimate#firstChunkP90Ms}); a non-streamed answer's includes the thinking.
     */
    Duration firstTokenWindow(Candidate c) {
        double p90 = stream ? c.estimate().firstChunkP90Ms() : c.estimate().p90Ms();
        if (!stream && !req.embeddings()) {
            // a non-streamed answer arrives whole: allow the expected decode too (an embeddings answer decodes nothing)
            int expected = req.request().maxTokens() == null ? 256 : Math.min(req.request().maxTokens(), 1024);
            p90 += expected * 1000.0 / Math.max(1, settings.slo().decodeTokensPerSecond());
        }
        long ms = Math.max(settings.timeouts().firstTokenFloor().toMillis(), (long) p90);
        return Duration.ofMillis(ms);
    }

    /**
     * How long an attempt may run without its first token before it is abandoned and retried elsewhere: scales with
     * prompt size (through the prediction), counted from the attempt's start whatever keep-alive comments came
     * meanwhile; the request's last hope is not abandoned at it but waited for while it shows life (Dispatch.abandon).
     * A non-streamed answer is silent until it is whole, so its wait also covers writing the longest answer the
     * request allows at the group's SLO decode speed (connect and write timeouts, this wait itself, and read_timeout
     * between reads of a body whose head came still bound a dead upstream); an embeddings answer writes no tokens, so
     * its wait is a stream's first-token wait. A model that may think
     * ({@link #mayThink}) gets its usual thinking on top, and at least twice the wait. In a group with
     * {@code request_timeout} ({@link GroupSettings.Timeouts#bounded}), a stream's is never longer than read_timeout:
     * it asked for bounded waits, so a silent attempt fails over once it has been silent for Kong's read limit. On a
     * route not measured at the prompt's size, the wait is never less than {@link #COLD_PREFILL_MS_PER_TOKEN} per
     * prompt token.
     */
    Duration abandonAfter(Candidate c) {
        return abandonAfter(c, 0);
    }

    /**
     * {@link #abandonAfter(Candidate)} for an attempt: a resume sends {@code resumePrompt} tokens (the prompt and the
     * text delivered so far), 0 for any other attempt. A resume continues a stream whose client is mid-answer: on a
     * route whose first-token times are measured, its wait is three first-token windows scaled up to the prompt it
     * sends (the window is predicted for the request's own prompt), never less than the group's {@code stall_floor}
     * (the silence it tolerates mid-stream) and never more than {@code first_token_ceiling}, the floor of any other
     * attempt's wait; a resume on a silent route froze a half-delivered answer for 30 s by default (found by hunt4).
     */
    Duration abandonAfter(Candidate c, long resumePrompt) {
        long window = firstTokenWindow(c).toMillis();
        if (!stream && !req.embeddings()) {
            window = Math.max(window, (long) (c.estimate().p90Ms()
                    + longestAnswer(c) * 1000.0 / Math.max(1, settings.slo().decodeTokensPerSecond())));
        }
        long ceiling = settings.timeouts().firstTokenCeiling().toMillis();
        if (resumePrompt > 0 && stream && c.estimate().measured()) {
            double grown = Math.max(1.0, resumePrompt / (double) Math.max(1, req.facts().promptTokens()));
            ceiling = Math.min(ceiling, Math.max(settings.timeouts().stallFloor().toMillis(),
                    (long) Math.min(Long.MAX_VALUE / 4.0, window * 3 * grown)));
        }
        long ms = Math.max(ceiling, window * 3);
        if (!c.estimate().knownAtThisSize()) {
            // the prediction here is a guess (the prior's prefill is 200k tokens/s): a huge prompt on a route not
            // measured at its size gets the prefill of a slow deployment before it is taken for silent
            long sent = resumePrompt > 0 ? resumePrompt : req.facts().promptTokens();
            ms = Math.max(ms, (long) Math.min(Long.MAX_VALUE / 4.0, sent * COLD_PREFILL_MS_PER_TOKEN));
        }
        if (mayThink(c)) {
            // a thinking model may be silent before its first token for as long as it usually thinks
            ms = Math.max(ms * 2, window + thinkingPause(c));
        }
        // a whole answer's silence is bounded by its head wait ({@link #headWait}), which is read_timeout then
        return Duration.ofMillis(stream ? withinRead(ms) : ms);
    }

    /**
     * The part of a give-up limit from {@link #abandonAfter} that the route's TTFT line may learn from an attempt
     * abandoned at it: the first-token window whose three make the limit (whose six, for a model that may think,
     * whose wait is doubled), so the next limit is no longer than this one. Learnt whole, each hang's wait lengthened
     * the next (found by hunt25; the thinking case by hunt26's review).
     */
    long learnableWait(Candidate c, long limitMs) {
        return Math.max(1, limitMs / (mayThink(c) ? 6 : 3));
    }

    /**
     * How long an attempt waits for its response head once its request is sent. A stream's head comes at once, so
     * Kong's read_timeout bounds it. Most providers send a non-streamed answer's head only with the whole answer, so
     * its head is waited for as long as the answer is ({@link #abandonAfter}, when longer than read_timeout): the
     * dispatch's abandonment, which retries elsewhere, decides, not a fixed read limit that would fail every answer
     * longer than it and count it against the route. At most {@link #MAX_WHOLE_ANSWER_WAIT} (unless read_timeout is
     * longer): without max_tokens the answer's wait covers 32 k tokens at the SLO speed, half an hour, which a
     * provider that took the request and went silent would hold a request without a hedge for. In a group with
     * {@code request_timeout}, read_timeout is Kong's proxy read timeout for the non-streamed head too, as Kong and
     * nginx read it: such a group asked that a slow answer fail over rather than be waited for, and an answer too long
     * for its bound would be cut by the request deadline anyway.
     */
    Duration headWait(Candidate c) {
        Duration read = settings.timeouts().read();
        if (stream || settings.timeouts().bounded()) {
            return read;
        }
        long whole = Math.min(abandonAfter(c).toMillis(), MAX_WHOLE_ANSWER_WAIT.toMillis());
        return whole > read.toMillis() ? Duration.ofMillis(whole) : read;
    }

    /**
     * Whether the attempt's model may think in silence before its first token: the request asks for reasoning, or
     * the route is known to think and the request does not turn reasoning off. A route is known to think when it
     * declares {@code reasoning} (a model that always reasons) or {@code reasoning_off} (one that reasons unless
     * turned off), or when its thinking time is measured. A model that hides its reasoning (OpenAI's o-series)
     * streams nothing while it thinks, whatever the request asked.
     */
    boolean mayThink(Candidate c) {
        if (req.embeddings()) {
            return false;
        }
        return req.facts().thinksOn(c.route())
                || !req.facts().needs().contains("reasoning_off") && thinking(c).isMeasured();
    }

    /** The route's allowed reasoning pause before its first visible token, the ceiling while unmeasured. */
    private long thinkingPause(Candidate c) {
        return thinking(c).allowedPauseMillis(settings.timeouts().firstTokenCeiling().toMillis(), THINK_K);
    }

    /**
     * The allowed silence after the first content: adapts to the route's measured inter-token time (its learned
     * gaps plus this stream's). While the model is still reasoning, a pause as long as its usual thinking is life,
     * and on a route whose thinking is not measured yet, a pause as long as a silent first token may last. In a group
     * with {@code request_timeout}, never longer than read_timeout (Kong's limit between two reads).
     *
     * @param winner the committed attempt, or null while a resume is starting
     */
    Duration stallGap(Attempt winner, Transcript transcript) {
        long floor = settings.timeouts().stallFloor().toMillis();
        if (winner == null) {
            return Duration.ofMillis(withinRead(floor));
        }
        long allowed = winner.gaps.stallGapMillis(floor);
        if (transcript.inReasoning()) {
            ThinkingTime usual = thinking(winner.cand);
            // Until the route's thinking is measured, its silence before the first visible token is waited for
            // like a silent first token: cut at the floor, a route that thinks longer could never be measured.
            allowed = Math.max(allowed, usual.isMeasured() ? usual.allowedPauseMillis(floor, THINK_K)
                    : abandonAfter(winner.cand).toMillis());
        }
        return Duration.ofMillis(withinRead(allowed));
    }

    /** A silence limit, at most read_timeout in a group with {@code request_timeout}, as it is otherwise. */
    private long withinRead(long ms) {
        return settings.timeouts().bounded() ? Math.min(ms, settings.timeouts().read().toMillis()) : ms;
    }

    /**
     * The most tokens this request's answer may have on the route: its max_tokens, else what the route's context
     * leaves after the prompt, at most {@link #MAX_ANSWER_TOKENS}.
     */
    long longestAnswer(Candidate c) {
        Integer max = req.request().maxTokens();
        if (max != null) {
            return max;
        }
        return Math.max(1, Math.min(MAX_ANSWER_TOKENS, c.route().contextWindow() - (long) req.facts().promptTokens()));
    }

    /** The route's learned thinking time (before its first visible token). */
    static ThinkingTime thinking(Candidate c) {
        return ThinkingTime.decode(c.state().blob(LearnedModels.THINK).orElse(null));
    }
}
