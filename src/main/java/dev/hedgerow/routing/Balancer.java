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
     * @param rotation     the position of a rotation of the group's own, by its name, for a balancer that rotates
     *                     some requests only, each kind on its own (semantic: the members of one description); each
     *                     request moves only the rotations it asks for. On the group's shared cursor, requests that
     *                     alternated between kinds took every other position, and a 3:1 pair went 50/50 or 100/0
     *                     (found by hunt27)
     */
    record BalanceContext(RequestFacts facts, long cursor, GroupSettings settings, long nowMillis,
                          java.util.Set<String> affinityKeys, java.util.Map<String, float[]> embeddings,
                          java.util.function.ToLongFunction<String> rotation) {
        /** A context whose every rotation is at {@code cursor}. */
        public BalanceContext(RequestFacts facts, long cursor, GroupSettings settings, long nowMillis,
                              java.util.Set<String> affinityKeys, java.util.Map<String, float[]> embeddings) {
            this(facts, cursor, settings, nowMillis, affinityKeys, embeddings, name -> cursor);
        }
    }

    /** Even rotation over the healthy members (Trifrost {@code rr_health}). */
    static Balancer roundRobin() {
        return new RoundRobin();
    }
}
