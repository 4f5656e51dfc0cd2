package dev.hedgerow.routing;

import java.util.ArrayList;
import java.util.List;

/**
 * Kong's semantic strategy over {@link SemanticMatcher}: members ranked by how close their description's embedding
 * is to the prompt's under the group's {@code distance_metric} (cosine similarity or Euclidean distance); members
 * sharing an identical description round-robin among themselves (smooth weighted on a rotation of their own, moved
 * only by the prompts matched to them, so the weights decide the fallback order), then the other groups closest first. A prompt whose best group is not within
 * {@code threshold} (a similarity under it, or a distance over it) matches no description: it is no specialist's,
 * so the whole group shares it by smooth weighted round-robin (the weights decide the failover order, nothing is
 * dropped). Without a prompt embedding (the embeddings route failed) nothing can match, so the same: smooth weighted
 * round-robin, a weight-0 member a standby (it was plain rotation over every member, whatever their weights; found by
 * hunt9). Stateless; thread-safe.
 */
final class SemanticBalancer implements Balancer {

    @Override
    public List<Candidate> order(List<Candidate> candidates, BalanceContext ctx) {
        if (candidates.size() <= 1) {
            return candidates;
        }
        float[] prompt = ctx.embeddings().get("");
        if (prompt == null) {
            return unmatched(candidates, ctx);
        }
        List<SemanticMatcher.Candidate> members = new ArrayList<>(candidates.size());
        for (Candidate c : candidates) {
            members.add(new SemanticMatcher.Candidate(c.id(), c.route().description(),
                    ctx.embeddings().get(c.route().id()), c.route().weight()));
        }
        SemanticMatcher.Match m = SemanticMatcher.match(prompt, members, ctx.settings().balancer().distanceMetric(),
                ctx.settings().balancer().threshold(), group -> ctx.rotation().applyAsLong("semantic\n" + group));
        if (m.best().isEmpty()) {
            return unmatched(candidates, ctx);
        }
        return Balancers.byIds(candidates, m.order());
    }

    /** A prompt that matches no description: the whole group shares it by weight, on a rotation of its own. */
    private static List<Candidate> unmatched(List<Candidate> candidates, BalanceContext ctx) {
        return Balancers.weighted(candidates, ctx.rotation().applyAsLong("semantic unmatched\n"
                + String.join("\n", candidates.stream().map(Candidate::id).toList())));
    }
}
