package dev.hedgerow.routing;

import dev.hedgerow.api.ApiError;

import java.util.List;

/** The outcome of filtering and ranking: candidates best first, or a refusal with its reason. */
public sealed interface RoutePlan {

    /** {@link Ready#othersBackInMillis} when no route the plan left out will come back by itself. */
    long NEVER = Long.MAX_VALUE;

    /**
     * Candidates best first; {@code cursor} is the group rotation position this request took.
     *
     * @param othersBackInMillis how soon, from planning, a route that could serve this request but was not offered
     *                           can serve again: a breaker-held one when its cooldown, Retry-After hold or half-open
     *                           probe ends, 0 when one was left out only as a fallback; {@link #NEVER} when none was
     */
    record Ready(List<Candidate> candidates, long cursor, List<Rejection> rejected, long othersBackInMillis)
            implements RoutePlan {
    }

    /** No candidate: the error for the client; {@code reason} is the blocked audit event's reason. */
    record Blocked(ApiError error, String reason, List<Rejection> rejected) implements RoutePlan {
    }

    /** A route left out, and why (explainability, audit). */
    record Rejection(String routeId, String reason) {
    }
}
