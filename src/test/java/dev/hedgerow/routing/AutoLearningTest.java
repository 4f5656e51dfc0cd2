package dev.hedgerow.routing;

import dev.hedgerow.api.ProviderPrefs;
import dev.hedgerow.catalog.Dialect;
import dev.hedgerow.catalog.GroupSettings;
import dev.hedgerow.catalog.Provider;
import dev.hedgerow.catalog.Route;
import dev.hedgerow.state.MemoryStateStore;
import dev.hedgerow.state.RouteSnapshot;
import dev.hedgerow.state.UsageSample;
import dev.hedgerow.time.FakeTicker;
import org.junit.jupiter.api.Test;

import java.time.Clock;
import java.time.Instant;
import java.time.ZoneOffset;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.SplittableRandom;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * The learning loop of {@code auto} in isolation: plan with {@link AutoBalancer} over what {@link LearnedModels}
 * predicts, serve from a fleet whose fastest route depends on the prompt size, learn the measured TTFT, repeat.
 * What the routing benchmark measures end to end, here seeded and in memory, so a learning regression shows as a
 * test failure rather than as a worse benchmark figure.
 */
class AutoLearningTest {
    /** A route's true TTFT line, with ±10 % uniform jitter on each answer. */
    record Line(String id, double baseMs, double msPer1kTokens) {
        double expected(int tokens) {
            return baseMs + msPer1kTokens * tokens / 1000.0;
        }
    }

    // quick start but slow prefill / slow start but fast prefill / in between: the fastest changes twice with size
    static final List<Line> FLEET = List.of(new Line("quick", 30, 80), new Line("prefill", 150, 8),
            new Line("middle", 80, 32));

    record Outcome(double meanMs, double oracleMeanMs, LearnedModels models) {
    }

    static Outcome serve(int warmup, int measured, long seed) {
        LearnedModels models = new LearnedModels(new MemoryStateStore(new FakeTicker()),
                Clock.fixed(Instant.EPOCH, ZoneOffset.UTC), TtftPredictor.Prior.defaults());
        AutoBalancer auto = new AutoBalancer(models);
        SplittableRandom rnd = new SplittableRandom(seed);
        double sum = 0;
        double oracle = 0;
        for (int i = 0; i < warmup + measured; i++) {
            // 50 to 7500 prompt tokens, log-uniform
            int tokens = (int) Math.round(Math.exp(Math.log(50) + rnd.nextDouble() * Math.log(150)));
            RequestFacts facts = new RequestFacts(tokens, null, true, false, Set.of(), Set.of(), ProviderPrefs.NONE,
                    List.of(), Map.of(), "hi");
            List<Candidate> candidates = new ArrayList<>();
            for (Line l : FLEET) {
                RouteSnapshot s = snapshot(l);
                Route r = new Route(l.id(), "a", "p-" + l.id(), "m", 1, 1, 0, Set.of(), Set.of(), Route.Price.FREE,
                        null, null);
                candidates.add(new Candidate(s.routeId(), r, new Provider("p-" + l.id(), "http://x", "k",
                        Dialect.OPENAI, null, null), s, false, models.ttft(s, facts)));
            }
            Candidate pick = auto.order(candidates, new Balancer.BalanceContext(facts, i, GroupSettings.defaults(),
                    0, Set.of(), Map.of())).get(0);
            Line served = FLEET.stream().filter(l -> l.id().equals(pick.route().id())).findFirst().orElseThrow();
            double ttft = served.expected(tokens) * (1 + 0.1 * (2 * rnd.nextDouble() - 1));
            models.learnFirstToken(pick.state(), tokens, Math.round(ttft), GroupSettings.Slo.defaults());
            if (i >= warmup) {
                sum += served.expected(tokens);
                oracle += FLEET.stream().mapToDouble(l -> l.expected(tokens)).min().orElseThrow();
            }
        }
        return new Outcome(sum / measured, oracle / measured, models);
    }

    static RouteSnapshot snapshot(Line l) {
        return new RouteSnapshot("o/" + l.id(), false, 0, 0, false, 0, 0, UsageSample.ZERO, Map.of());
    }

    static double predicted(LearnedModels models, Line l, int tokens) {
        return models.ttft(snapshot(l), new RequestFacts(tokens, null, true, false, Set.of(), Set.of(),
                ProviderPrefs.NONE, List.of(), Map.of(), "hi")).meanMs();
    }

    @Test
    void autoComesWithinThreePercentOfTheOracleAfterAShortWarmUp() {
        for (long seed = 1; seed <= 5; seed++) {
            Outcome o = serve(60, 300, seed);
            double gap = o.meanMs() / o.oracleMeanMs() - 1;
            assertTrue(gap < 0.03, "seed " + seed + ": auto " + o.meanMs() + " ms vs oracle " + o.oracleMeanMs()
                    + " ms (" + Math.round(gap * 1000) / 10.0 + " %)");
        }
    }

    @Test
    void everyRouteIsLearntWhereItIsTheFastest() {
        Outcome o = serve(60, 600, 42);
        // quick below ~1.5k tokens, middle up to ~3k, prefill above
        assertEquals(FLEET.get(0).expected(300), predicted(o.models(), FLEET.get(0), 300), 12);
        assertEquals(FLEET.get(2).expected(2200), predicted(o.models(), FLEET.get(2), 2200), 20);
        assertEquals(FLEET.get(1).expected(6000), predicted(o.models(), FLEET.get(1), 6000), 20);
    }
}
