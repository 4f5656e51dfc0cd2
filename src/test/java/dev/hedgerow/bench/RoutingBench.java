package dev.hedgerow.bench;

import dev.hedgerow.sim.ModelScript;
import dev.hedgerow.sim.SimConfig;
import dev.hedgerow.sim.SimServer;
import dev.hedgerow.sim.SimText;

import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.SplittableRandom;

import static dev.hedgerow.bench.BenchEnv.f;
import static dev.hedgerow.bench.BenchEnv.ms;
import static dev.hedgerow.bench.BenchEnv.p;

/**
 * Routing quality: three routes whose fastest one depends on the prompt size (quick start but slow prefill, slow
 * start but fast prefill, and one in between), the same seeded sequence of prompts (20 to 3000 words, log-uniform)
 * through one alias group per strategy, and an oracle that computes the truly fastest route from the simulator
 * scripts and pins it with {@code provider.only}. Hedging is off in every group, so only the ordering is compared.
 */
final class RoutingBench {
    /** name, TTFT base ms, ms per 1k prompt tokens. */
    private record Route(String provider, long baseMs, double per1kMs) {
        double expectedMs(int promptTokens) {
            return baseMs + per1kMs * promptTokens / 1000.0;
        }
    }

    // per 1k prompt tokens as the simulator counts them (o200k BPE; a prompt word "w1234" is about 2.3 tokens), so
    // the fastest route changes near 1 000 and 2 900 tokens, inside the prompts' 50 to 7 000
    private static final List<Route> ROUTES = List.of(new Route("quick", 30, 80), new Route("prefill", 150, 8),
            new Route("middle", 80, 32));
    private static final List<String> STRATEGIES = List.of("auto", "rr_health", "least_latency");

    /** Requests that warm the gateway's JVM up before any strategy is measured. */
    private static final int JVM_WARMUP = 300;
    private final BenchEnv env;

    RoutingBench(BenchEnv env) {
        this.env = env;
    }

    void run() {
        int n = BenchEnv.intEnv("BENCH_ROUTING_REQUESTS", 300);
        int warm = BenchEnv.intEnv("BENCH_ROUTING_WARMUP", 60);
        int concurrency = BenchEnv.intEnv("BENCH_ROUTING_CONCURRENCY", 4);
        Map<String, SimServer> sims = new LinkedHashMap<>();
        for (Route r : ROUTES) {
            sims.put(r.provider(), env.sim(SimConfig.of(1).withModel("m", ModelScript.defaults().withLength(8)
                    .withSeed(r.baseMs()).withLatency(ModelScript.Latency.of(r.baseMs(), 0)
                            .withTtftPer1kPromptTokens(r.per1kMs()).withJitter(0.1)))));
        }
        StringBuilder yaml = new StringBuilder("""
                orgs:
                  - id: bench
                    keys: [{ name: bench, key: "k-bench" }]
                    providers:
                """);
        sims.forEach((id, s) -> yaml.append(f("          - { id: %s, base_url: \"%s\" }%n", id, s.baseUrl())));
        yaml.append("    routes:\n");
        List<String> groups = new ArrayList<>(STRATEGIES);
        groups.add("oracle");
        List<String> aliases = new ArrayList<>(groups);
        aliases.add("warmup");
        for (String g : aliases) {
            for (Route r : ROUTES) {
                yaml.append(f("      - { alias: %s, provider: %s, model: m }%n", g, r.provider()));
            }
        }
        yaml.append("    groups:\n");
        for (String g : aliases) {
            yaml.append(f("      %s: { strategy: %s, hedging: false }%n", g, STRATEGIES.contains(g) ? g : "rr_health"));
        }
        Map<String, Load.Result> results = new LinkedHashMap<>();
        double[] oracleModel = new double[n];
        for (int i = 0; i < n; i++) {
            int tokens = tokens(warm + i);
            oracleModel[i] = ROUTES.stream().mapToDouble(r -> r.expectedMs(tokens)).min().orElseThrow();
        }
        try (Proc app = Proc.hedgerow("hedgerow-routing", env.jar, env.file("routing.yaml", yaml.toString()), null,
                Map.of(), env.tmp); Load load = new Load(env.vertx, 64)) {
            // the gateway's JVM warms up (JIT, connection pools) on a group of its own first, so no strategy's
            // learning starts from samples inflated by a cold gateway
            System.out.println("routing: JVM warm-up");
            load.closedLoop(i -> req(app, "warmup", -1 - i), concurrency, JVM_WARMUP, 0, false);
            for (String g : groups) {
                System.out.println("routing " + g);
                load.closedLoop(i -> req(app, g, i), concurrency, warm, 0, false);
                results.put(g, load.closedLoop(i -> req(app, g, warm + i), concurrency, n, 0, true));
            }
        }
        report(results, n, warm, concurrency, oracleModel);
    }

    /** Prompt tokens of request {@code i} as the simulator counts them (what its scripted TTFT depends on). */
    static int tokens(int i) {
        return SimText.estimateTokens(List.of(prompt(i)));
    }

    /** The provider the oracle would pick for request {@code i} (its lowest scripted TTFT). */
    static String best(int i) {
        int tokens = tokens(i);
        return ROUTES.stream().min((a, b) -> Double.compare(a.expectedMs(tokens), b.expectedMs(tokens)))
                .orElseThrow().provider();
    }

    /** Share of answered requests served by the oracle's route (the route id names its provider). */
    static double rightRoute(Load.Result r, int warm) {
        long ok = 0;
        long right = 0;
        for (Load.Exchange e : r.exchanges) {
            String route = e.headers().getOrDefault("x-hedgerow-route", "");
            if (e.ok()) {
                ok++;
                String b = best(warm + e.index());
                if (route.contains(b)) {
                    right++;
                }
            }
        }
        return ok == 0 ? 0 : 100.0 * right / ok;
    }

    static int promptWords(int i) {
        SplittableRandom rng = new SplittableRandom(0x5eedL * 31 + i);
        return (int) Math.round(Math.exp(Math.log(20) + rng.nextDouble() * (Math.log(3000) - Math.log(20))));
    }

    /** Request {@code i}'s prompt: {@link #promptWords} random words, the same for every strategy. */
    static String prompt(int i) {
        int words = promptWords(i);
        SplittableRandom rng = new SplittableRandom(i * 7919L + 1);
        StringBuilder prompt = new StringBuilder();
        for (int w = 0; w < words; w++) {
            prompt.append(w == 0 ? "" : " ").append("w").append(rng.nextInt(5000));
        }
        return prompt.toString();
    }

    private static Load.Req req(Proc app, String group, int i) {
        String body = BenchEnv.body(group, prompt(i), true, null);
        if (group.equals("oracle")) {
            body = body.substring(0, body.length() - 1) + ",\"provider\":{\"only\":[\"" + best(i) + "\"]}}";
        }
        return new Load.Req(app.port, "/v1/chat/completions", BenchEnv.auth("k-bench"), body);
    }

    private void report(Map<String, Load.Result> results, int n, int warm, int concurrency, double[] model) {
        double oracleMean = results.get("oracle").ttfb.getMean();
        double oracleP99 = p(results.get("oracle").ttfb, 99);
        List<List<String>> rows = new ArrayList<>();
        for (Map.Entry<String, Load.Result> e : results.entrySet()) {
            Load.Result r = e.getValue();
            rows.add(List.of(e.getKey(), Long.toString(r.ok.get()), Long.toString(r.failed.get()),
                    ms(r.ttfb.getMean()), ms(p(r.ttfb, 50)), ms(p(r.ttfb, 99)),
                    f("%+.1f %%", 100 * (r.ttfb.getMean() / oracleMean - 1)),
                    f("%+.1f %%", 100 * (p(r.ttfb, 99) / oracleP99 - 1)), f("%.1f %%", rightRoute(r, warm))));
        }
        double autoGap = 100 * (results.get("auto").ttfb.getMean() / oracleMean - 1);
        double modelMean = java.util.Arrays.stream(model).average().orElse(0);
        Map<String, double[]> bars = new LinkedHashMap<>();
        List<String> names = new ArrayList<>(results.keySet());
        bars.put("mean", results.values().stream().mapToDouble(r -> r.ttfb.getMean() / 1000).toArray());
        bars.put("p99", results.values().stream().mapToDouble(r -> p(r.ttfb, 99) / 1000).toArray());
        Plot.bars(env.out.resolve("routing-ttft.png"), "TTFT by strategy (prompt-size-dependent fleet)", "TTFT ms",
                names, bars);
        StringBuilder fleet = new StringBuilder();
        for (Route r : ROUTES) {
            fleet.append(f("`%s` %d ms + %.0f ms per 1k prompt tokens; ", r.provider(), r.baseMs(), r.per1kMs()));
        }
        env.section("routing", "Routing quality", f("""
                        Fleet (TTFT ± 10 %% jitter; prompt tokens as the simulator counts them, o200k BPE): %s \
                        so the fastest route changes with the prompt size. Prompts of 20 to 3000 random words (about \
                        50 to 7000 tokens, log-uniform, the same seeded sequence for every strategy), streamed at \
                        concurrency %d, %d measured after %d warm-up requests per group, all after %d requests that \
                        warm the gateway's JVM up on a group of its own; hedging off; the prober runs as in \
                        production. The oracle pins the route with the lowest scripted TTFT through `provider.only` \
                        (its modelled mean is %.0f ms). TTFT measured at the client; "oracle's route" is the share \
                        of requests served by the route the oracle would pick (from `x-hedgerow-route`).

                        %s
                        **Target** (auto's mean TTFT within 10 %% of the oracle): %+.1f %%: %s.

                        ![TTFT by strategy](routing-ttft.png)
                        """, fleet.toString().replaceAll("; $", ";"), concurrency, n, warm, JVM_WARMUP, modelMean,
                BenchEnv.table(List.of("strategy", "ok", "failed", "mean ms", "p50 ms", "p99 ms", "mean vs oracle",
                        "p99 vs oracle", "oracle's route"), rows), autoGap, autoGap <= 10 ? "met" : "missed"));
    }
}
