package dev.hedgerow.dispatch;

import dev.hedgerow.catalog.GroupSettings;
import dev.hedgerow.catalog.Strategy;
import dev.hedgerow.routing.Candidate;

import java.time.Duration;
import java.util.List;
import java.util.Set;
import java.util.function.ToIntFunction;

/**
 * Kong's {@code priority} retry rules: a lower tier is a fallback only once the top tier is unavailable. After a
 * failed attempt on a top-tier target whose breaker is still closed, the request stays on that tier: an untried
 * member of the tier if there is one, else the same target once more. A top-tier 429 whose wait ({@code
 * retry-after-ms}, else {@code Retry-After}) is at most {@code max_retry_after_wait} is waited for, to the
 * millisecond, rather than failed over. Stateless; thread-safe.
 */
final class PriorityRetry {
    private PriorityRetry() {
    }

    /** What to do after a failed attempt. */
    sealed interface Decision {
        /** Not a priority decision: the dispatcher's ordinary failover applies. */
        record Ordinary() implements Decision {
        }

        /** Retry on {@code target} (of the top tier) after {@code delay} (zero = at once). */
        record Stay(Candidate target, Duration delay) implements Decision {
        }
    }

    static final Decision ORDINARY = new Decision.Ordinary();

    /**
     * @param ranked          the request's candidates, best first (top tier first)
     * @param failed          the target whose attempt just failed
     * @param failuresHere    failures this request has already recorded on {@code failed}, this one included
     * @param attemptsOn      attempts this request made on a target so far
     * @param retryAfterMillis the hold the failure put on the target, in ms (0 = none; a capacity refusal's wait:
     *                         {@code UpstreamReplies.holdMillis})
     */
    static Decision afterFailure(GroupSettings settings, List<Candidate> ranked, Set<String> tried, Candidate failed,
                                 int failuresHere, ToIntFunction<String> attemptsOn, int status,
                                 long retryAfterMillis) {
        if (settings.strategy() != Strategy.PRIORITY || failed == null || ranked.isEmpty()
                || failed.route().priority() != topTier(ranked)) {
            return ORDINARY;
        }
        boolean breakerClosed = !failed.halfOpen()
                && failed.state().fails() + failuresHere < settings.breaker().threshold();
        if (!breakerClosed) {
            return ORDINARY;
        }
        for (Candidate c : ranked) {
            if (c.route().priority() == failed.route().priority() && !tried.contains(c.id())) {
                return new Decision.Stay(c, Duration.ZERO);
            }
        }
        if (attemptsOn.applyAsInt(failed.id()) >= 2) {
            return ORDINARY;
        }
        if (retryAfterMillis > 0) {
            Duration wait = Duration.ofMillis(retryAfterMillis);
            // a long Retry-After makes the target unavailable for now: the next tier takes over
            return wait.compareTo(settings.retry().maxRetryAfterWait()) <= 0 ? new Decision.Stay(failed, wait)
                    : ORDINARY;
        }
        return new Decision.Stay(failed, Duration.ZERO);
    }

    private static int topTier(List<Candidate> ranked) {
        int top = Integer.MAX_VALUE;
        for (Candidate c : ranked) {
            top = Math.min(top, c.route().priority());
        }
        return top;
    }
}
