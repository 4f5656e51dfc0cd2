package dev.hedgerow.bench;

import com.fasterxml.jackson.databind.JsonNode;
import dev.hedgerow.catalog.HedgeBudget;
import dev.hedgerow.sim.ModelScript;
import dev.hedgerow.sim.SimConfig;
import dev.hedgerow.sim.SimServer;
import dev.hedgerow.state.StateTuning;
import dev.hedgerow.testsupport.Sse;
import org.HdrHistogram.Histogram;

import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

import static dev.hedgerow.bench.BenchEnv.f;
import static dev.hedgerow.bench.BenchEnv.ms;
import static dev.hedgerow.bench.BenchEnv.p;

/**
 * The hedging tail: two simulated fleets of three routes with a heavy-tailed time to first token, one with a step
 * tail (5 % of answers exactly 10× slower, the example) and one with a continuous Pareto tail (5 % of answers
 * slowed by a Pareto factor), each under the same streamed load through an org whose group has {@code hedging:
 * false} and one with {@code hedging: true} (one org per fleet and mode, so that each has its own hedge budget):
 * four runs. Figures per run: client-side TTFT p50/p99/p99.9 and the extra upstream requests counted at the
 * fleet's simulators.
 */
final class HedgingBench {
    private static final long BASE_MS = 100;
    private static final List<String> MODES = List.of("off", "on");

    /**
     * One simulated fleet: its id (in org names), its label in the report and plot, how the section describes its
     * tail, the TTFT script of its routes and the seed of its first route.
     */
    private record Fleet(String id, String label, String tail, ModelScript.Latency latency, int seed) {
    }

    private static final ModelScript.Latency NORMAL = ModelScript.Latency.of(BASE_MS, 0).withJitter(0.1);
    /** The JVM warm-up's org: fast routes of their own with a 10x tail, so hedges fire and the JIT compiles them. */
    private static final String JVM_WARMUP_ORG = "jvm-warmup";
    private static final List<Fleet> FLEETS = List.of(
            new Fleet("step", "step tail", "5 % of answers exactly 10× slower (`Latency.withHeavyTail(0.05, 10)`, "
                    + "the issue's example)", NORMAL.withHeavyTail(0.05, 10), 101),
            new Fleet("pareto", "Pareto tail", "5 % of answers slowed by a Pareto factor with minimum x<sub>m</sub> "
                    + "= 5 and shape α = 1.2, capped at 1000× (`Latency.withParetoTail(0.05, 5, 1.2)`: "
                    + "P(factor > x) = (5 / x)^1.2, a continuous tail like queueing at an overloaded provider)",
                    NORMAL.withParetoTail(0.05, 5, 1.2), 201));

    private final BenchEnv env;

    HedgingBench(BenchEnv env) {
        this.env = env;
    }

    void run() throws InterruptedException {
        int n = BenchEnv.intEnv("BENCH_HEDGE_REQUESTS", 2000);
        Duration window = HedgeBudget.defaults().window();
        Duration budgetWait = window.plus(window.dividedBy(StateTuning.HEDGE_BUCKETS)); // the last bucket too
        int warm = BenchEnv.intEnv("BENCH_HEDGE_WARMUP", 200);
        int jvmWarm = BenchEnv.intEnv("BENCH_HEDGE_JVM_WARMUP", 3000);
        int concurrency = BenchEnv.intEnv("BENCH_HEDGE_CONCURRENCY", 16);
        String floor = System.getenv().getOrDefault("BENCH_HEDGE_FLOOR", "120ms");
        double floorMs = Double.parseDouble(floor.replace("ms", "").trim());
        Map<Fleet, List<SimServer>> sims = new LinkedHashMap<>();
        for (Fleet fleet : FLEETS) {
            List<SimServer> routes = new ArrayList<>();
            for (int i = 0; i < 3; i++) {
                routes.add(env.sim(SimConfig.of(1).withModel("tail-model", ModelScript.defaults().withLength(16)
                        .withSeed(fleet.seed() + i).withLatency(fleet.latency()))));
            }
            sims.put(fleet, routes);
        }
        SimServer warmSim = env.sim(SimConfig.of(1).withModel("tail-model", ModelScript.defaults().withLength(16)
                .withSeed(7).withLatency(ModelScript.Latency.of(20, 0).withJitter(0.1).withHeavyTail(0.05, 10))));
        StringBuilder yaml = new StringBuilder("orgs:\n")
                .append(orgYaml(JVM_WARMUP_ORG, List.of(warmSim, warmSim), true, floor));
        for (Fleet fleet : FLEETS) {
            for (String mode : MODES) {
                yaml.append(orgYaml(org(fleet, mode), sims.get(fleet), mode.equals("on"), floor));
            }
        }
        Map<Fleet, Map<String, Phase>> phases = new LinkedHashMap<>();
        try (Proc app = Proc.hedgerow("hedgerow-hedging", env.jar, env.file("hedging.yaml", yaml.toString()), null,
                Map.of("HEDGEROW_FUNCTION", "gateway"), env.tmp); Load load = new Load(env.vertx, 64)) {
            // the gateway's JVM warms up first (JIT, pools) on an org of its own, as in the overhead and routing
            // benches: a gateway still compiling its request and hedge paths delays primaries past the floor, and a
            // hedge its primary then beats is budget a slow answer needed (without this, the fleet measured first had
            // about 3x the second's such hedges in two runs: 6 vs 2, 16 vs 5; with it, 10 vs 7 on a noisy host)
            System.out.println("hedging: JVM warm-up " + jvmWarm);
            load.closedLoop(i -> req(app, JVM_WARMUP_ORG, i), concurrency, jvmWarm, 0, false);
            for (Fleet fleet : FLEETS) {
                List<SimServer> routes = sims.get(fleet);
                Map<String, Phase> byMode = new LinkedHashMap<>();
                for (String mode : MODES) {
                    String org = org(fleet, mode);
                    System.out.println("hedging " + org + ": warm-up " + warm + ", then " + n);
                    load.closedLoop(i -> req(app, org, i), concurrency, warm, 0, false);
                    if (mode.equals("on")) {
                        // the org's hedge budget slides over a window: let the warm-up's requests and hedges leave
                        // it, so the budget weighs the measured requests alone and the extra load it allows is theirs
                        System.out.println("hedging " + org + ": waiting " + budgetWait.toSeconds()
                                + " s for the warm-up to leave the hedge budget's window");
                        Thread.sleep(budgetWait.toMillis());
                    }
                    routes.forEach(SimServer::resetStats);
                    Load.Result r = load.closedLoop(i -> req(app, org, warm + i), concurrency, n, 0, true);
                    long upstream = routes.stream().mapToLong(s -> s.stats("tail-model").received()).sum();
                    long hedges = 0;
                    long lost = 0;
                    long late = 0;
                    for (Load.Exchange e : r.exchanges) {
                        JsonNode trail = e.ok() ? Sse.trail(e.body()) : null;
                        if (trail != null) {
                            for (JsonNode a : trail) {
                                if ("hedge".equals(a.path("kind").asText())) {
                                    hedges++;
                                    lost += "lost_race".equals(a.path("outcome").asText()) ? 1 : 0;
                                    late += a.path("start_ms").asLong() >= 2 * floorMs ? 1 : 0;
                                }
                            }
                        }
                    }
                    byMode.put(mode, new Phase(r, upstream, hedges, lost, late));
                }
                phases.put(fleet, byMode);
            }
        }
        report(phases, n, concurrency, floor, jvmWarm);
    }

    /** @param lost hedges whose primary answered first; @param late hedges fired at twice the floor or later */
    private record Phase(Load.Result r, long upstream, long hedges, long lost, long late) {
    }

    /** One org whose group {@code tail} has a route per simulator (providers p1, p2, ...). */
    private static String orgYaml(String org, List<SimServer> routes, boolean hedging, String floor) {
        StringBuilder providers = new StringBuilder();
        StringBuilder aliases = new StringBuilder();
        for (int i = 1; i <= routes.size(); i++) {
            providers.append(f("      - { id: p%d, base_url: \"%s\" }\n", i, routes.get(i - 1).baseUrl()));
            aliases.append(f("      - { alias: tail, provider: p%d, model: tail-model }\n", i));
        }
        return f("""
                  - id: %s
                    keys: [{ name: bench, key: "k-%s" }]
                    providers:
                %s    routes:
                %s    groups:
                      tail: { strategy: auto, hedging: %s, first_token_floor: %s }
                """, org, org, providers, aliases, hedging, floor);
    }

    private static String org(Fleet fleet, String mode) {
        return fleet.id() + "-" + mode;
    }

    private static Load.Req req(Proc app, String org, int i) {
        return new Load.Req(app.port, "/v1/chat/completions", BenchEnv.auth("k-" + org),
                BenchEnv.body("tail", "hedging request " + i, true, null));
    }

    private void report(Map<Fleet, Map<String, Phase>> phases, int n, int concurrency, String floor, int jvmWarm) {
        double floorMs = Double.parseDouble(floor.replace("ms", "").trim());
        List<List<String>> rows = new ArrayList<>();
        Map<String, Histogram> hists = new LinkedHashMap<>();
        List<String> fleets = new ArrayList<>();
        StringBuilder verdicts = new StringBuilder();
        for (Map.Entry<Fleet, Map<String, Phase>> fe : phases.entrySet()) {
            Fleet fleet = fe.getKey();
            fleets.add(f("- **%s**: %s", fleet.label(), fleet.tail()));
            for (Map.Entry<String, Phase> e : fe.getValue().entrySet()) {
                Phase ph = e.getValue();
                Histogram h = ph.r().ttfb;
                hists.put(fleet.label() + ", hedging " + e.getKey(), h);
                rows.add(List.of(fleet.label(), "hedging: " + e.getKey().equals("on"), Long.toString(ph.r().ok.get()),
                        Long.toString(ph.r().failed.get()), ms(p(h, 50)), ms(p(h, 99)), ms(p(h, 99.9)),
                        Long.toString(ph.upstream()), f("%+.1f %%", 100.0 * (ph.upstream() - n) / n),
                        Long.toString(ph.hedges()), Long.toString(ph.lost()), Long.toString(ph.late())));
            }
            Histogram off = fe.getValue().get("off").r().ttfb;
            Histogram on = fe.getValue().get("on").r().ttfb;
            double cut99 = p(off, 99) / p(on, 99);
            double cut999 = p(off, 99.9) / p(on, 99.9);
            double extra = 100.0 * (fe.getValue().get("on").upstream() - n) / n;
            // a hedged slow answer cannot come before the window plus one normal TTFT
            double rescueMs = floorMs + p(off, 50) / 1000;
            double ceiling = p(off, 99) / 1000 / rescueMs;
            verdicts.append(f("- **%s**: p99 cut %.1f× (p99.9 cut %.1f×) for %+.1f %% upstream requests; ceiling "
                            + "%s ms ÷ %.0f ms ≈ %.1f×: %s.\n", fleet.label(), cut99, cut999, extra, ms(p(off, 99)),
                    rescueMs, ceiling, verdict(cut99, extra)));
        }
        Plot.percentiles(env.out.resolve("hedging-ttft.png"), "Time to first token, step and Pareto tails", hists,
                1000.0, "TTFT (ms, log)");
        env.section("hedging", "Hedging tail", f("""
                        Two fleets of 3 simulated routes each, TTFT %d ms ± 10 %% and 16 tokens, with a heavy tail:

                        %s
                        %d streamed requests per fleet and mode (4 runs) at concurrency %d after a warm-up of each, \
                        through the packaged app (embedded state), one org per fleet and mode, after a JVM warm-up \
                        of %d requests on an org of its own (two fast routes, TTFT 20 ms with 5 %% 10× slower, \
                        hedging on, so the JIT has compiled the request and hedge paths before any run); group `strategy: auto`, \
                        `first_token_floor: %s`, the default hedge budget (5 %% of the org's requests over a \
                        sliding 60 s, at least 3); with hedging on, the bench waits after the warm-up until the \
                        warm-up's requests and hedges have left the budget's window, so the budget weighs the \
                        measured requests alone. TTFT is measured at the \
                        client (Hedgerow holds the response head until the first content); the load client gives up \
                        after 30 s, so an unhedged answer slower than that counts as failed. Upstream requests are \
                        counted at the fleet's simulators; the app runs the gateway function only \
                        (`HEDGEROW_FUNCTION=gateway`) so the prober's own probes are not counted as hedging's cost.

                        A hedge fires at the earliest at `first_token_floor` and then needs one normal TTFT, so a \
                        rescued slow request answers after about floor + p50 without hedging at best: the p99 cut \
                        cannot exceed p99 without hedging ÷ that, whatever the budget (the ceiling below, from the \
                        measured figures). With the step tail every slow answer is about 10 normal TTFTs, so the \
                        ceiling is about 10 ÷ (1 + floor ÷ normal TTFT): under 5× for any floor above one normal \
                        TTFT, so that fleet cannot meet the target by construction. The Pareto tail's p99 lies \
                        further out, at about 5 × 0.2^(−1/1.2) ≈ 19 normal TTFTs (the 80th percentile of the slowed \
                        5 %%), so the same rescue time can cut it about twice as much. Both fleets slow 5 %% of \
                        answers, the share the default budget allows, so the budget holds the extra load at 5 %% and \
                        binds whenever a sample's slow share runs above it. A request refused a hedge asks again each \
                        time its wait doubles (2, 4, 8 … windows) within 80 %% of the budget, so budget left over \
                        after a burst of slow answers still rescues the ones stuck longest, while requests reaching \
                        their first window keep first call on the rest.

                        %s
                        **Target** (p99 TTFT cut ≥ 5× for ≤ 5 %% extra upstream requests), per fleet:

                        %s
                        ![TTFT by percentile](hedging-ttft.png)
                        """, BASE_MS, String.join(";\n", fleets) + ".\n", n, concurrency, jvmWarm, floor,
                BenchEnv.table(List.of("fleet", "mode", "ok", "failed", "TTFT p50 ms", "TTFT p99 ms", "TTFT p99.9 ms",
                        "upstream requests", "extra upstream", "hedges fired", "hedges the primary beat",
                        "hedges fired at ≥ 2× floor"), rows), verdicts));
    }

    private static String verdict(double cut99, double extra) {
        if (cut99 >= 5 && extra <= 5) {
            return "met";
        }
        List<String> why = new ArrayList<>();
        if (!(cut99 >= 5)) {
            why.add(f("p99 cut %.1f× < 5×", cut99));
        }
        if (!(extra <= 5)) {
            why.add(f("%+.1f %% upstream > 5 %%", extra));
        }
        return "missed (" + String.join(", ", why) + ")";
    }
}
