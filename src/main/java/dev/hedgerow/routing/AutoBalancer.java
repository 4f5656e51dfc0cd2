package dev.hedgerow.routing;

import dev.hedgerow.catalog.GroupSettings;

import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;

/**
 * Keln's pick, the default strategy: among capable, healthy candidates (the router already filtered those), prefer
 * supply that meets the SLO targets, then the route predicted fastest for this prompt size. Routes predicted
 * slower than {@code slow_bar} × the fastest are passed over while faster capacity exists (a preference, not a
 * cutoff: they stay at the end of the order). A prompt prefix recently served by a route goes back to it, unless
 * that route is below the SLO or past the slow bar. One request in {@value #EXPLORE_EVERY} explores a route not yet
 * measured, so new routes get measured (bounded exploration). Stateless; thread-safe.
 */
final class AutoBalancer implements Balancer {
    static final int EXPLORE_EVERY = 10;
    private final LearnedModels models;

    AutoBalancer(LearnedModels models) {
        this.models = models;
    }

    @Override
    public List<Candidate> order(List<Candidate> candidates, BalanceContext ctx) {
        if (candidates.size() <= 1) {
            return candidates;
        }
        GroupSettings settings = ctx.settings();
        List<Candidate> meets = new ArrayList<>();
        List<Candidate> below = new ArrayList<>();
        for (Candidate c : candidates) {
            (models.meetsSlo(c.state(), settings.slo()) ? meets : below).add(c);
        }
        List<Candidate> out = new ArrayList<>(rankTier(meets, ctx));
        out.addAll(rankTier(below, ctx));
        return out;
    }

    private List<Candidate> rankTier(List<Candidate> tier, BalanceContext ctx) {
        if (tier.isEmpty()) {
            return tier;
        }
        List<Candidate> byTtft = Balancers.byMeasure(tier, c -> c.estimate().meanMs(), ctx.cursor());
        // byMeasure puts NaN first; predictions are never NaN, so this is a plain ascending sort with rotation ties
        double fastest = byTtft.get(0).estimate().meanMs();
        double bar = Math.max(1.0, ctx.settings().balancer().slowBar()) * Math.max(fastest, 1.0);
        List<Candidate> fast = new ArrayList<>();
        List<Candidate> slow = new ArrayList<>();
        for (Candidate c : byTtft) {
            (c.estimate().meanMs() <= bar ? fast : slow).add(c);
        }
        if (ctx.affinityKey() != null) {
            for (int i = 0; i < fast.size(); i++) {
                if (fast.get(i).id().equals(ctx.affinityKey())) {
                    fast.add(0, fast.remove(i));
                    break;
                }
            }
        }
        if (Math.floorMod(ctx.cursor(), (long) EXPLORE_EVERY) == 0) {
            tier.stream().filter(c -> !c.estimate().measured())
                    .min(Comparator.comparing(Candidate::id))
                    .ifPresent(c -> {
                        fast.remove(c);
                        slow.remove(c);
                        fast.add(0, c);
                    });
        }
        List<Candidate> out = new ArrayList<>(fast);
        out.addAll(slow);
        return out;
    }
}
