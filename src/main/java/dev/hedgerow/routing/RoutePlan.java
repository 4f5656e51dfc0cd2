package dev.hedgerow.routing;

import dev.hedgerow.api.ApiError;

import java.util.List;

/** The outcome of filtering and ranking: candidates best first, or a refusal with its reason. */
public sealed interface RoutePlan {

    /** Candidates best first; {@code cursor} is the group rotation position this request took. */
    record Ready(List<Candidate> candidates, long cursor, List<Rejection> rejected) implements RoutePlan {
    }

    /** No candidate: the error for the client; {@code reason} is the blocked audit event's reason. */
    record Blocked(ApiError error, String reason, List<Rejection> rejected) implements RoutePlan {
    }

    /** A route left out, and why (explainability, audit). */
    record Rejection(String routeId, String reason) {
    }
}
