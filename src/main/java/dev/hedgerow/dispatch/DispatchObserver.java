package dev.hedgerow.dispatch;

import dev.hedgerow.catalog.Org;
import dev.hedgerow.catalog.Route;
import dev.hedgerow.routing.AccuracyJudge;
import dev.hedgerow.routing.Candidate;
import dev.hedgerow.state.UsageSample;

import java.util.List;

/**
 * Receives what a request teaches about routes and what it cost: the accounting side of dispatch (metrics, usage
 * ledger, request log, prefix affinity). The learned route models are not fed from here: dispatch learns them
 * itself through {@code LearnedModels}, judged against the request's group SLO, so one observation is one store
 * call. Implementations must not block. Thread-safe.
 */
public interface DispatchObserver {

    /** First content after {@code ttftMs} on a route, for a prompt of {@code promptTokens}. */
    default void firstToken(Candidate route, int promptTokens, long ttftMs, boolean reasoningFirst) {
    }

    /**
     * A non-streamed answer arrived whole after {@code latencyMs}: a latency sample (Trifrost's EMA) that is not a
     * time to first token, so it must not teach the TTFT model.
     */
    default void wholeResponse(Candidate route, int promptTokens, long latencyMs) {
    }

    /**
     * A finished stream's decode: {@code tokens} after the first in {@code decodeMs}, and its mean gap; for a
     * resumed stream the resuming attempt's own tokens, and {@code e2eMs} negative (its answer began elsewhere).
     */
    default void decoded(Candidate route, int tokens, long decodeMs, long e2eMs) {
    }

    /** An inter-chunk gap observed after the first content. */
    default void gap(Candidate route, long gapMs) {
    }

    /**
     * Before {@link #finished}, once per route whose content the client received: what that route is charged in its
     * usage window for its part of the answer (the whole bill without a resume).
     */
    default void routeUsage(DispatchRequest request, Candidate route, UsageSample usage) {
    }

    /**
     * The request finished (any outcome): its trail (an immutable snapshot, safe to keep), final status, billed
     * usage (null when nothing billed: a stream cut after content is billed what the client received) and the route
     * whose content the client got last (null when none reached it).
     */
    default void finished(DispatchRequest request, int status, List<AttemptRecord> trail, UsageSample billed,
                          Candidate winner) {
    }

    /**
     * The request was refused with {@code status} without any upstream call ({@code reason}: the blocked audit
     * event's, e.g. no_healthy_provider): instead of {@link #finished}, as a refusal before dispatch is never a
     * finished request.
     */
    default void refused(DispatchRequest request, int status, String reason, String message) {
    }

    /**
     * A chat request of a group judged by an LLM ({@code tokens_count_strategy: llm_accuracy}) was answered with 200
     * by {@code route} (the one that finished it), after the client's answer ended: {@code content} is the text the
     * client got. Called only for such groups, and only when the answer has text.
     */
    default void answered(DispatchRequest request, Candidate route, String content) {
    }

    /** A sampled answer of {@code orgId} was judged (or failed, or skipped): {@link AccuracyJudge.Outcome}. */
    default void judged(String orgId, AccuracyJudge.Outcome outcome) {
    }

    /** A judge call of {@code org}'s judge route {@code judge} was answered, using {@code usage}: bill it. */
    default void judgeBilled(Org org, Route judge, UsageSample usage) {
    }

    /** A hedge was fired; {@code wastedTokens} counted when the loser is cancelled. */
    default void hedge(DispatchRequest request, boolean fired) {
    }

    default void wastedTokens(long tokens) {
    }

    /**
     * A stream's response head went out before any content: nothing reached the client for the group's
     * {@code head_hold}, so it now hears keep-alive comments until the content (or its error event).
     */
    default void headBeforeContent(DispatchRequest request) {
    }

    /** A mid-stream resume started. */
    default void resumed(DispatchRequest request, String reason) {
    }

    /** A malformed data frame was skipped. */
    default void malformedFrame(Candidate route) {
    }

    DispatchObserver NONE = new DispatchObserver() {
    };
}
