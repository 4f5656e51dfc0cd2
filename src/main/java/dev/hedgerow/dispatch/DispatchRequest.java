package dev.hedgerow.dispatch;

import dev.hedgerow.api.ChatRequest;
import dev.hedgerow.catalog.GroupSettings;
import dev.hedgerow.catalog.Org;
import dev.hedgerow.routing.Candidate;
import dev.hedgerow.routing.RequestFacts;

import java.util.List;

/**
 * Per-request state that outlives attempts: the parsed request (kept for retries and resumes), its facts, and
 * the ranked candidates. Immutable.
 */
public record DispatchRequest(String requestId, long createdEpochSeconds, Org org, String alias,
                              GroupSettings settings, ChatRequest chat, RequestFacts facts,
                              List<Candidate> candidates) {
}
