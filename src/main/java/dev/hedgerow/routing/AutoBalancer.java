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
 *   <li><b>prefix affinity</b>: of the routes that recently served this prompt's longest served prefix (every one
 *       of them, not only the last: a prefix all requests share, such as a system prompt, is cached by each route
 *       that served it), the fastest goes first among the routes within the bar of its tier (a cached prefix never
 *       outweighs the SLO or the bar);</li>
 *   <li><b>bounded exploration</b>: at about one rotation position in {@value #EXPLORE_EVERY} (chosen by a hash of
 *       the position, so a periodic traffic pattern cannot hide a prompt size from it), the route of the tier that
 *       might most undercut the one in front goes first: the route whose <em>optimistic</em> prediction for this
 *       prompt size (mean less two standard deviations of its line's estimate there, {@link
 *       TtftEstimate#optimisticMs}) is lowest, if that is below the front route's mean. A route never measured
 *       always qualifies, and so does one measured only on prompts of very different size or with a wide spread
 *       (a few slow samples taken while something was cold); a route measured near this size and clearly slower
 *       never does. New routes get measured, a route judged on short prompts gets a sample of a long one, and a
 *       route misjudged on a few samples gets another look, without exploration ever costing more than that
 *       share of requests or being spent where it cannot pay off. A request placed by prefix affinity is explored
 *       with only to measure a route never measured: moving it loses the cached prefix it was sent back for, a
 *       price paid once per new route (where every request shares a system prompt, nothing else would ever measure
 *       one) but not for a second look at a measured one (the conversation's first request, which has no affinity
 *       yet, may explore as any other).</li>
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

    /** A placed candidate and why it is where it is. */
    record Placed(Candidate candidate, Placement placement) {
    }

    @Override
    public List<Candidate> order(List<Candidate> candidates, BalanceContext ctx) {
        return place(candidates, ctx).stream().map(Placed::candidate).toList();
    }

    /** Whether this rotation position explores: about one in {@value #EXPLORE_EVERY}, spread by SplitMix64. */
    static boolean explores(long cursor) {
        long z = cursor + 0x9E3779B97F4A7C15L;
        z = (z ^ (z >>> 30)) * 0xBF58476D1CE4E5B9L;
        z = (z ^ (z >>> 27)) * 0x94D049BB133111EBL;
        z = z ^ (z >>> 31);
        return Math.floorMod(z, (long) EXPLORE_EVERY) == 0;
    }

    List<Placed> place(List<Candidate> candidates, BalanceContext ctx) {
        GroupSettings settings = ctx.settings();
        List<Candidate> meets = new ArrayList<>();
        List<Candidate> below = new ArrayList<>();
        for (Candidate c : candidates) {
            (models.meetsSlo(c.state(), settings.slo()) ? meets : below).add(c);
        }
        List<Placed> out = new ArrayList<>(rankTier(meets, ctx));
        out.addAll(rankTier(below, ctx));
        return out;
    }

    private List<Placed> rankTier(List<Candidate> tier, BalanceContext ctx) {
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
                fast.add(new Placed(c, Placement.FAST));
            } else {
                slow.add(new Placed(c, Placement.SLOW_BAR));
            }
        }
        if (!ctx.affinityKeys().isEmpty()) {
            // the fastest of the routes that hold the prefix: a prefix every request shares (a system prompt) is
            // held by every route that served it, and the last to serve it is not the one to keep
            for (int i = 0; i < fast.size(); i++) {
                if (ctx.affinityKeys().contains(fast.get(i).candidate().id())) {
                    fast.add(0, new Placed(fast.remove(i).candidate(), Placement.AFFINITY));
                    break;
                }
            }
        }
        List<Placed> out = new ArrayList<>(fast);
        out.addAll(slow);
        if (explores(ctx.cursor())) {
            double front = out.get(0).candidate().estimate().meanMs();
            Candidate frontCandidate = out.get(0).candidate();
            // a request sent back to its cached prefix is moved only to measure a route never measured
            boolean cached = out.get(0).placement() == Placement.AFFINITY;
            List<Candidate> pool = tier.stream().filter(c -> c != frontCandidate
                    && (!cached || !c.estimate().measured())).toList();
            double best = pool.stream().mapToDouble(c -> c.estimate().optimisticMs()).min()
                    .orElse(Double.POSITIVE_INFINITY);
            if (best < front) {
                List<Candidate> top = pool.stream().filter(c -> c.estimate().optimisticMs() == best)
                        .sorted(Comparator.comparing(Candidate::id)).toList();
                // rotate among equally promising routes (several never measured) so each gets its sample
                Candidate pick = top.get((int) Math.floorMod(ctx.cursor() / EXPLORE_EVERY, (long) top.size()));
                out.removeIf(p -> p.candidate() == pick);
                out.add(0, new Placed(pick, Placement.EXPLORE));
            }
        }
        return out;
    }
}
