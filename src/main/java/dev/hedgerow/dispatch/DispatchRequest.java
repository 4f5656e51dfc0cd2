package dev.hedgerow.dispatch;

import dev.hedgerow.api.ApiRequest;
import dev.hedgerow.api.EmbeddingsRequest;
import dev.hedgerow.catalog.GroupSettings;
import dev.hedgerow.catalog.Org;
import dev.hedgerow.routing.Candidate;
import dev.hedgerow.routing.RequestFacts;
import dev.hedgerow.routing.RoutePlan;

import java.util.List;

/**
 * Per-request state that outlives attempts: the parsed request (kept for retries and resumes), its facts, and
 * the ranked candidates. Immutable.
 *
 * @param request            the parsed chat completion or embeddings request
 *
 * @param keyName            the name of the client key that sent the request (never the secret), which usage is
 *                           billed to
 * @param othersBackInMillis the plan's {@link RoutePlan.Ready#othersBackInMillis}: how soon a route it did not offer
 *                           can serve, which an exhausted request's Retry-After weighs with its candidates'
 */
public record DispatchRequest(String requestId, long createdEpochSeconds, Org org, String keyName, String alias,
                              GroupSettings settings, ApiRequest request, RequestFacts facts,
                              List<Candidate> candidates, long othersBackInMillis) {

    /** True for an embeddings request (one short whole answer: no stream, no hedge, no resume). */
    public boolean embeddings() {
        return request instanceof EmbeddingsRequest;
    }
}
