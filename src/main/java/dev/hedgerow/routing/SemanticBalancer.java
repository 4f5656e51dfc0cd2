package dev.hedgerow.routing;

import java.util.ArrayList;
import java.util.Comparator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * Kong's semantic strategy: the member whose description embedding is most similar (cosine) to the prompt's,
 * when the similarity reaches {@code threshold}; members sharing an identical description round-robin among
 * themselves (the cursor), then the rest by similarity descending. Without embeddings (the embeddings route
 * failed), plain rotation. Stateless; thread-safe.
 */
final class SemanticBalancer implements Balancer {

    @Override
    public List<Candidate> order(List<Candidate> candidates, BalanceContext ctx) {
        float[] prompt = ctx.embeddings().get("");
        if (prompt == null || candidates.size() <= 1) {
            return Balancer.roundRobin().order(candidates, ctx);
        }
        Map<Candidate, Double> sim = new LinkedHashMap<>();
        for (Candidate c : candidates) {
            float[] d = ctx.embeddings().get(c.route().id());
            sim.put(c, d == null || d.length != prompt.length ? -1.0 : Cosine.similarity(prompt, d));
        }
        // group identical descriptions; order groups by similarity, members of a group by rotation
        Map<String, List<Candidate>> groups = new LinkedHashMap<>();
        for (Candidate c : candidates) {
            String desc = c.route().description() == null ? c.route().id() : c.route().description();
            groups.computeIfAbsent(desc, k -> new ArrayList<>()).add(c);
        }
        List<List<Candidate>> ordered = new ArrayList<>(groups.values());
        ordered.sort(Comparator.comparingDouble((List<Candidate> g) -> -sim.get(g.get(0))));
        List<Candidate> out = new ArrayList<>();
        double threshold = ctx.settings().balancer().threshold();
        List<Candidate> under = new ArrayList<>();
        for (List<Candidate> g : ordered) {
            List<Candidate> rotated = new ArrayList<>(g.size());
            for (int i = 0; i < g.size(); i++) {
                rotated.add(g.get((int) Math.floorMod(ctx.cursor() + i, (long) g.size())));
            }
            if (sim.get(g.get(0)) >= threshold) {
                out.addAll(rotated);
            } else {
                under.addAll(rotated);
            }
        }
        out.addAll(under);
        return out;
    }
}
