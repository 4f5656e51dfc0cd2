package dev.hedgerow.routing;

import dev.hedgerow.catalog.GroupSettings;

import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.Map;

/**
 * The balancer of each strategy, built from the routing blocks. Every balancer orders the candidates it is given
 * and never drops one. Stateless; thread-safe.
 */
public final class Balancers {
    private Balancers() {
    }

    public static Balancer forSettings(GroupSettings settings, LearnedModels models) {
        return switch (settings.strategy()) {
            case AUTO -> new AutoBalancer(models);
            case RR_HEALTH -> Balancer.roundRobin();
            case WEIGHTED -> Balancers::weighted;
            case LEAST_LATENCY -> (cs, ctx) -> byMeasure(cs, c -> models.emaLatency(c.state()), ctx.cursor());
            // an embeddings answer writes no tokens, so it has no time per output token: it is ranked end to end
            case LOWEST_LATENCY -> (cs, ctx) -> byMeasure(cs, c -> models.peakEwma(c.state(),
                    settings.balancer().latencyStrategy() == GroupSettings.LatencyStrategy.E2E
                            || c.route().embeddings()), ctx.cursor());
            case CONSISTENT_HASHING -> Balancers::consistentHashing;
            case LEAST_CONNECTIONS -> (cs, ctx) -> byIds(cs, LeastConnections.order(ids(cs),
                    id -> find(cs, id).state().inflight(), id -> find(cs, id).route().weight(), ctx.cursor()));
            case LOWEST_USAGE -> settings.balancer().tokensCountStrategy()
                    == GroupSettings.TokensCountStrategy.LLM_ACCURACY
                    ? (cs, ctx) -> byIds(cs, LowestUsage.orderByAccuracy(ids(cs),
                    id -> models.accuracy(find(cs, id).state()), id -> find(cs, id).route().weight(), ctx.cursor()))
                    : (cs, ctx) -> byIds(cs, LowestUsage.order(ids(cs), id -> find(cs, id).state().usage(),
                    id -> find(cs, id).route().weight(), settings.balancer().tokensCountStrategy(), ctx.cursor()));
            case PRIORITY -> (cs, ctx) -> byIds(cs, PriorityTiers.order(ids(cs), id -> find(cs, id).route().priority(),
                    id -> find(cs, id).route().weight(), ctx.cursor(), id -> true));
            case SEMANTIC -> new SemanticBalancer();
        };
    }

    /** Smooth weighted round-robin on the shared cursor; failover by weight descending (Trifrost, Kong). */
    static List<Candidate> weighted(List<Candidate> cs, Balancer.BalanceContext ctx) {
        return weighted(cs, ctx.cursor());
    }

    /** {@link #weighted(List, Balancer.BalanceContext)} at {@code cursor}. */
    static List<Candidate> weighted(List<Candidate> cs, long cursor) {
        // zero-weight members never take traffic first, but still serve as a last resort
        return byIds(cs, SmoothWeightedSequence.of(ids(cs), id -> find(cs, id).route().weight())
                .orderWithStandbys(cursor));
    }

    /**
     * Rendezvous hashing on the configured header, which shares keys by weight; a request without the header has no
     * key to stick to and is shared by weight as under {@link #weighted} (Kong falls back to its round-robin, which
     * is weighted). A plain rotation there would give a weight-0 standby its turn and ignore the weights.
     */
    static List<Candidate> consistentHashing(List<Candidate> cs, Balancer.BalanceContext ctx) {
        String header = ctx.settings().balancer().hashOnHeader().toLowerCase(java.util.Locale.ROOT);
        String key = ctx.facts().headers().get(header);
        if (key == null || key.isEmpty()) {
            return weighted(cs, ctx);
        }
        return byIds(cs, RendezvousHash.rank(key, ids(cs), id -> find(cs, id).route().weight()));
    }

    /**
     * Lowest measure first; members never measured (NaN) first of all so the group converges fast, rotated by the
     * cursor among themselves.
     */
    static List<Candidate> byMeasure(List<Candidate> cs, java.util.function.ToDoubleFunction<Candidate> measure,
                                     long cursor) {
        int n = cs.size();
        List<Candidate> rotated = new ArrayList<>(n);
        for (int i = 0; i < n; i++) {
            rotated.add(cs.get((int) Math.floorMod(cursor + i, (long) n)));
        }
        // by identity: a candidate's record hash would walk its whole snapshot (every blob string) per request
        Map<Candidate, Double> m = new java.util.IdentityHashMap<>(n * 2);
        rotated.forEach(c -> m.put(c, measure.applyAsDouble(c)));
        rotated.sort(Comparator.comparingDouble(c -> {
            double v = m.get(c);
            return Double.isNaN(v) ? Double.NEGATIVE_INFINITY : v;
        }));
        return rotated;
    }

    static List<String> ids(List<Candidate> cs) {
        return cs.stream().map(Candidate::id).toList();
    }

    static Candidate find(List<Candidate> cs, String id) {
        for (Candidate c : cs) {
            if (c.id().equals(id)) {
                return c;
            }
        }
        throw new IllegalArgumentException(id);
    }

    static List<Candidate> byIds(List<Candidate> cs, List<String> ids) {
        List<Candidate> out = new ArrayList<>(ids.size());
        ids.forEach(id -> out.add(find(cs, id)));
        return out;
    }
}
