package dev.hedgerow.routing;

import dev.hedgerow.catalog.GroupSettings;

import java.util.List;

/**
 * Orders a group's eligible candidates for one request, best first. A balancer only orders: filtering, failover,
 * hedging and resume belong to the dispatcher and apply to every strategy. Implementations are stateless
 * (shared state arrives in the candidates' snapshots and the rotation cursor) and thread-safe.
 */
public interface Balancer {

    List<Candidate> order(List<Candidate> candidates, BalanceContext ctx);

    /**
     * The rotation context of one request.
     *
     * @param affinityKeys the store keys of the routes that recently served this prompt's longest served prefix
     *                     (empty if none did)
     * @param embeddings   the semantic strategy's embeddings: the prompt's under {@code ""}, each member's
     *                     description's under its route id (empty for other strategies)
     */
    record BalanceContext(RequestFacts facts, long cursor, GroupSettings settings, long nowMillis,
                          java.util.Set<String> affinityKeys, java.util.Map<String, float[]> embeddings) {
    }

    /** Even rotation over the healthy members (Trifrost {@code rr_health}). */
    static Balancer roundRobin() {
        return new RoundRobin();
    }
}
