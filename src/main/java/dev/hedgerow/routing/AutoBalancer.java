package dev.hedgerow.routing;

import dev.hedgerow.catalog.GroupSettings;

import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;

/**
 * Keln's pick, the default strategy. The router has already kept only capable, healthy candidates and put those
 * without headroom last; this orders what it is given:
 * <ol>
 *   <li><b>SLO tiers</b>: supply that meets the speed targets (or is not yet measured) before supply measured
 *       below them, which serves only when nothing better is available;</li>
 *   <li>within a tier, the <b>predicted TTFT for this prompt size</b>, fastest first (ties by the group's
 *       rotation);</li>
 *   <li>the <b>slow-route bar</b>: a route predicted slower than {@code slow_bar} × the tier's fastest goes after
 *       every route within the bar (a preference, not a cutoff: it stays in the order, so it serves when it is the
 *       only capacity);</li>
 *   <li><b>prefix affinity</b>: the route that recently served this prompt's longest prefix goes first among the
 *       routes within the bar of its tier (a cached prefix never outweighs the SLO or the bar);</li>
 *   <li><b>bounded exploration</b>: at one rotation position in {@value #EXPLORE_EVERY}, a route of the tier not
 *       yet measured goes first, so new routes get measured without ever costing more than that share of
 *       requests.</li>
 * </ol>
 * Stateless; thread-safe.
 */
final class AutoBalancer implements Balancer {
    static final int EXPLORE_EVERY = 10;
    private final RouteModels models;

    AutoBalancer(RouteModels models) {
        this.models = models;
    }

    /** Why a candidate is where it is in the order. */
    enum Placement { EXPLORE, AFFINITY, FAST, SLOW_BAR }

    /** A placed candidate, with its SLO tier. */
    record Placed(Candidate candidate, boolean meetsSlo, Placement placement) {
    }

    @Override
    public List<Candidate> order(List<Candidate> candidates, BalanceContext ctx) {
        return place(candidates, ctx).stream().map(Placed::candidate).toList();
    }

    List<Placed> place(List<Candidate> candidates, BalanceContext ctx) {
        GroupSettings settings = ctx.settings();
        List<Candidate> meets = new ArrayList<>();
        List<Candidate> below = new ArrayList<>();
        for (Candidate c : candidates) {
            (models.meetsSlo(c.state(), settings.slo()) ? meets : below).add(c);
        }
        List<Placed> out = new ArrayList<>(rankTier(meets, true, ctx));
        out.addAll(rankTier(below, false, ctx));
        return out;
    }

    private List<Placed> rankTier(List<Candidate> tier, boolean meetsSlo, BalanceContext ctx) {
        if (tier.isEmpty()) {
            return List.of();
        }
        List<Candidate> byTtft = Balancers.byMeasure(tier, c -> c.estimate().meanMs(), ctx.cursor());
        double fastest = byTtft.get(0).estimate().meanMs();
        double bar = Math.max(1.0, ctx.settings().balancer().slowBar()) * Math.max(fastest, 1.0);
        List<Placed> fast = new ArrayList<>();
        List<Placed> slow = new ArrayList<>();
        for (Candidate c : byTtft) {
            if (c.estimate().meanMs() <= bar) {
                fast.add(new Placed(c, meetsSlo, Placement.FAST));
            } else {
                slow.add(new Placed(c, meetsSlo, Placement.SLOW_BAR));
            }
        }
        if (ctx.affinityKey() != null) {
            for (int i = 0; i < fast.size(); i++) {
                if (fast.get(i).candidate().id().equals(ctx.affinityKey())) {
                    fast.add(0, new Placed(fast.remove(i).candidate(), meetsSlo, Placement.AFFINITY));
                    break;
                }
            }
        }
        List<Placed> out = new ArrayList<>(fast);
        out.addAll(slow);
        if (Math.floorMod(ctx.cursor(), (long) EXPLORE_EVERY) == 0) {
            List<Candidate> unmeasured = tier.stream().filter(c -> !c.estimate().measured())
                    .sorted(Comparator.comparing(Candidate::id)).toList();
            if (!unmeasured.isEmpty()) {
                // rotate among the unmeasured so that several new routes all get their first sample
                Candidate pick = unmeasured.get((int) Math.floorMod(ctx.cursor() / EXPLORE_EVERY,
                        (long) unmeasured.size()));
                out.removeIf(p -> p.candidate() == pick);
                out.add(0, new Placed(pick, meetsSlo, Placement.EXPLORE));
            }
        }
        return out;
    }
}
