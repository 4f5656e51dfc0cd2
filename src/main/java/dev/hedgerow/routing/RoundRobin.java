package dev.hedgerow.routing;

import java.util.ArrayList;
import java.util.List;

/** Even rotation: the shared cursor picks the start, the rest follow in declaration order (failover order). */
final class RoundRobin implements Balancer {
    @Override
    public List<Candidate> order(List<Candidate> candidates, BalanceContext ctx) {
        int n = candidates.size();
        if (n <= 1) {
            return candidates;
        }
        int start = (int) Math.floorMod(ctx.cursor(), (long) n);
        List<Candidate> out = new ArrayList<>(n);
        for (int i = 0; i < n; i++) {
            out.add(candidates.get((start + i) % n));
        }
        return out;
    }
}
