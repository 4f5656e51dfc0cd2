package dev.hedgerow.bench;

import com.fasterxml.jackson.databind.JsonNode;
import dev.hedgerow.sim.ModelScript;
import dev.hedgerow.sim.SimConfig;
import dev.hedgerow.sim.SimServer;
import dev.hedgerow.testsupport.Sse;
import org.HdrHistogram.Histogram;

import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

import static dev.hedgerow.bench.BenchEnv.f;
import static dev.hedgerow.bench.BenchEnv.ms;
import static dev.hedgerow.bench.BenchEnv.p;

/**
 * The hedging tail: three simulated routes with a heavy-tailed time to first token (5 % of answers 10× slower), the
 * same streamed load through an org whose group has {@code hedging: false} and one with {@code hedging: true}
 * (two orgs, so that each has its own hedge budget). Figures: client-side TTFT p50/p99/p99.9 and the extra upstream
 * requests counted at the simulators.
 */
final class HedgingBench {
    private static final long BASE_MS = 100;

    private final BenchEnv env;

    HedgingBench(BenchEnv env) {
        this.env = env;
    }

    void run() {
        int n = BenchEnv.intEnv("BENCH_HEDGE_REQUESTS", 1000);
        int warm = BenchEnv.intEnv("BENCH_HEDGE_WARMUP", 200);
        int concurrency = BenchEnv.intEnv("BENCH_HEDGE_CONCURRENCY", 16);
        String floor = System.getenv().getOrDefault("BENCH_HEDGE_FLOOR", "120ms");
        ModelScript.Latency latency = ModelScript.Latency.of(BASE_MS, 0).withJitter(0.1).withHeavyTail(0.05, 10);
        List<SimServer> sims = new ArrayList<>();
        for (int i = 1; i <= 3; i++) {
            sims.add(env.sim(SimConfig.of(1).withModel("tail-model",
                    ModelScript.defaults().withLength(16).withSeed(100 + i).withLatency(latency))));
        }
        StringBuilder yaml = new StringBuilder("orgs:\n");
        for (String org : List.of("off", "on")) {
            yaml.append(f("""
                      - id: %s
                        keys: [{ name: bench, key: "k-%s" }]
                        providers:
                          - { id: p1, base_url: "%s" }
                          - { id: p2, base_url: "%s" }
                          - { id: p3, base_url: "%s" }
                        routes:
                          - { alias: tail, provider: p1, model: tail-model }
                          - { alias: tail, provider: p2, model: tail-model }
                          - { alias: tail, provider: p3, model: tail-model }
                        groups:
                          tail: { strategy: auto, hedging: %s, first_token_floor: %s }
                    """, org, org, sims.get(0).baseUrl(), sims.get(1).baseUrl(), sims.get(2).baseUrl(),
                    org.equals("on"), floor));
        }
        Map<String, Phase> phases = new LinkedHashMap<>();
        try (Proc app = Proc.hedgerow("hedgerow-hedging", env.jar, env.file("hedging.yaml", yaml.toString()), null,
                Map.of("HEDGEROW_FUNCTION", "gateway"), env.tmp); Load load = new Load(env.vertx, 64)) {
            for (String org : List.of("off", "on")) {
                System.out.println("hedging " + org + ": warm-up " + warm + ", then " + n);
                load.closedLoop(i -> req(app, org, i), concurrency, warm, 0, false);
                sims.forEach(SimServer::resetStats);
                Load.Result r = load.closedLoop(i -> req(app, org, warm + i), concurrency, n, 0, true);
                long upstream = sims.stream().mapToLong(s -> s.stats("tail-model").received()).sum();
                long hedges = 0;
                for (Load.Exchange e : r.exchanges) {
                    JsonNode trail = e.ok() ? Sse.trail(e.body()) : null;
                    if (trail != null) {
                        for (JsonNode a : trail) {
                            hedges += "hedge".equals(a.path("kind").asText()) ? 1 : 0;
                        }
                    }
                }
                phases.put(org, new Phase(r, upstream, hedges));
            }
        }
        report(phases, n, concurrency, floor);
    }

    private record Phase(Load.Result r, long upstream, long hedges) {
    }

    private static Load.Req req(Proc app, String org, int i) {
        return new Load.Req(app.port, "/v1/chat/completions", BenchEnv.auth("k-" + org),
                BenchEnv.body("tail", "hedging request " + i, true, null));
    }

    private void report(Map<String, Phase> phases, int n, int concurrency, String floor) {
        List<List<String>> rows = new ArrayList<>();
        Map<String, Histogram> hists = new LinkedHashMap<>();
        for (Map.Entry<String, Phase> e : phases.entrySet()) {
            Phase ph = e.getValue();
            Histogram h = ph.r().ttfb;
            hists.put("hedging " + e.getKey(), h);
            long ok = ph.r().ok.get();
            rows.add(List.of("hedging: " + e.getKey().equals("on"), Long.toString(ok),
                    Long.toString(ph.r().failed.get()), ms(p(h, 50)), ms(p(h, 99)), ms(p(h, 99.9)),
                    Long.toString(ph.upstream()), f("%+.1f %%", 100.0 * (ph.upstream() - n) / n),
                    Long.toString(ph.hedges())));
        }
        Phase off = phases.get("off");
        Phase on = phases.get("on");
        double cut99 = p(off.r().ttfb, 99) / p(on.r().ttfb, 99);
        double cut999 = p(off.r().ttfb, 99.9) / p(on.r().ttfb, 99.9);
        double extra = 100.0 * (on.upstream() - n) / n;
        // a hedged slow answer cannot come before the window plus one normal TTFT
        double floorMs = Double.parseDouble(floor.replace("ms", "").trim());
        double ceiling = p(off.r().ttfb, 99) / (1000 * floorMs + p(off.r().ttfb, 50));
        Plot.percentiles(env.out.resolve("hedging-ttft.png"), "Time to first token, heavy-tailed fleet", hists,
                1000.0, "TTFT (ms, log)");
        env.section("hedging", "Hedging tail", f("""
                        Fleet: 3 simulated routes, TTFT %d ms ± 10 %% with a heavy tail (5 %% of answers 10× slower, \
                        `Latency.withHeavyTail(0.05, 10)`), 16 tokens. %d streamed requests per mode at concurrency \
                        %d after a warm-up, through the packaged app (embedded state); group `strategy: auto`, \
                        `first_token_floor: %s`, shared hedge budget 5 %% (the default). TTFT is measured at the \
                        client (Hedgerow holds the response head until the first content). Upstream requests are \
                        counted at the simulators; the app runs the gateway function only (`HEDGEROW_FUNCTION=gateway`) \
                        so the prober's own probes are not counted as hedging's cost.

                        A hedge fires at the earliest at `first_token_floor` and then needs one normal TTFT, so a \
                        rescued slow request answers after about floor + p50 ≈ %.0f ms: with this fleet the p99 cut \
                        cannot exceed about %.1f× (p99 without hedging ÷ that), whatever the budget.

                        %s
                        **Target** (p99 TTFT cut ≥ 5× for ≤ 5 %% extra upstream requests): p99 cut %.1f× \
                        (p99.9 cut %.1f×) for %+.1f %% upstream requests: %s.

                        ![TTFT by percentile](hedging-ttft.png)
                        """, BASE_MS, n, concurrency, floor, floorMs + p(off.r().ttfb, 50) / 1000, ceiling,
                BenchEnv.table(List.of("mode", "ok", "failed", "TTFT p50 ms", "TTFT p99 ms", "TTFT p99.9 ms",
                        "upstream requests", "extra upstream", "hedges fired"), rows),
                cut99, cut999, extra, cut99 >= 5 && extra <= 5 ? "met" : "missed"));
    }
}
