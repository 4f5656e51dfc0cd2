package dev.hedgerow.bench;

import dev.hedgerow.sim.Fault;
import dev.hedgerow.sim.ModelScript.FaultChance;
import dev.hedgerow.sim.SimServer;
import dev.hedgerow.state.StateKeys;
import dev.hedgerow.testsupport.RedisServer;
import dev.hedgerow.testsupport.Resp;

import java.io.IOException;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

import static dev.hedgerow.bench.BenchEnv.f;

/**
 * Soak: minutes of mixed traffic (streamed and whole answers) with faults, including 503s that trip the breaker so
 * that half-open probes run, through the packaged app on a private Redis. Every 10 s: live heap after a full GC
 * (jcmd/jstat), thread count and RSS (/proc). Afterwards, read from Redis: no in-flight lease left (ZCARD of each
 * route's lease set) and no half-open probe slot still taken (EXISTS of each route's probe key).
 */
final class SoakBench {
    private static final List<FaultChance> FAULTS = List.of(
            new FaultChance(0.03, Fault.status(503)),
            new FaultChance(0.02, Fault.dropAfter(10)),
            new FaultChance(0.02, new Fault.EmptyStream(true)),
            new FaultChance(0.01, Fault.stall(10, 2000)));

    /** The soak's app serves /q/metrics only with a token (its catalog is a file). */
    private static final String METRICS_TOKEN = "soak-metrics";

    private final BenchEnv env;

    SoakBench(BenchEnv env) {
        this.env = env;
    }

    void run() throws IOException {
        int seconds = BenchEnv.intEnv("BENCH_SOAK_SECONDS", 180);
        int rate = BenchEnv.intEnv("BENCH_SOAK_RATE", 100);
        List<SimServer> sims = ChaosBench.fleet(env, FAULTS);
        String yaml = f("""
                orgs:
                  - id: bench
                    keys: [{ name: bench, key: "k-bench" }]
                    providers:
                      - { id: s1, base_url: "%s" }
                      - { id: s2, base_url: "%s" }
                      - { id: s3, base_url: "%s" }
                    routes:
                      - { alias: soak, provider: s1, model: c, capabilities: [prefill] }
                      - { alias: soak, provider: s2, model: c, capabilities: [prefill] }
                      - { alias: soak, provider: s3, model: c, capabilities: [prefill] }
                    groups:
                      soak: { strategy: auto, breaker: { max_fails: 10, fail_timeout: 2s }, stall_floor: 300ms }
                """, sims.get(0).baseUrl(), sims.get(1).baseUrl(), sims.get(2).baseUrl());
        List<String> routeKeys = List.of("bench/soak-s1", "bench/soak-s2", "bench/soak-s3");
        List<double[]> samples = new ArrayList<>(); // t, heap MB, threads, rss MB
        long ok = 0;
        long failed = 0;
        Map<Integer, Integer> statuses = new LinkedHashMap<>();
        Map<String, Long> attempts;
        List<List<String>> storeRows = new ArrayList<>();
        try (RedisServer redis = RedisServer.start();
             Proc app = Proc.hedgerow("hedgerow-soak", env.jar, env.file("soak.yaml", yaml), redis.url(),
                     Map.of("HEDGEROW_METRICS_TOKEN", METRICS_TOKEN), env.tmp);
             Load load = new Load(env.vertx, 64)) {
            load.closedLoop(i -> req(app, i), 8, 50, 0, false); // warm-up
            long t0 = System.nanoTime();
            samples.add(sample(app, 0));
            int index = 0;
            while ((System.nanoTime() - t0) / 1e9 < seconds) {
                int base = index;
                double chunk = Math.min(10, seconds - (System.nanoTime() - t0) / 1e9);
                Load.Result r = load.openLoop(i -> req(app, base + i), rate, Math.max(1, chunk), false);
                index += (int) (r.ok.get() + r.failed.get());
                ok += r.ok.get();
                failed += r.failed.get();
                for (Load.Exchange e : r.exchanges) {
                    statuses.merge(e.status(), 1, Integer::sum);
                }
                samples.add(sample(app, (System.nanoTime() - t0) / 1e9));
                System.out.println(f("soak t=%.0fs ok=%d failed=%d heap=%.1fMB threads=%.0f rss=%.0fMB",
                        samples.get(samples.size() - 1)[0], ok, failed, samples.get(samples.size() - 1)[1],
                        samples.get(samples.size() - 1)[2], samples.get(samples.size() - 1)[3]));
            }
            Proc.sleep(2000); // let the last releases land
            for (String rk : routeKeys) {
                String leases = Resp.command(redis.port(), "ZCARD", StateKeys.leases(rk));
                String probe = Resp.command(redis.port(), "EXISTS", StateKeys.probe(rk));
                storeRows.add(List.of("`" + rk + "`", "`" + StateKeys.leases(rk) + "`", leases,
                        "`" + StateKeys.probe(rk) + "`", probe));
            }
            attempts = attemptsByOutcome(app);
        }
        report(seconds, rate, ok, failed, statuses, attempts, samples, storeRows);
    }

    private static double[] sample(Proc app, double t) {
        return new double[] {t, app.liveHeapMb(), app.status("Threads"), app.rssMb()};
    }

    private static Load.Req req(Proc app, int i) {
        return new Load.Req(app.port, "/v1/chat/completions", BenchEnv.auth("k-bench"),
                BenchEnv.body("soak", ChaosBench.prompt(i), i % 3 != 0, null));
    }

    /** The app's {@code hedgerow_attempts} counters summed by kind and outcome (from /q/metrics). */
    private static Map<String, Long> attemptsByOutcome(Proc app) {
        Map<String, Long> out = new TreeMap<>();
        Pattern line = Pattern.compile("^hedgerow_attempts_total\\{(.*)} ([0-9.E+]+)$");
        for (String l : app.get("/q/metrics", METRICS_TOKEN).split("\n")) {
            Matcher m = line.matcher(l);
            if (m.matches()) {
                String kind = tag(m.group(1), "kind");
                String outcome = tag(m.group(1), "outcome");
                out.merge(kind + " " + outcome, (long) Double.parseDouble(m.group(2)), Long::sum);
            }
        }
        return out;
    }

    private static String tag(String tags, String name) {
        Matcher m = Pattern.compile(name + "=\"([^\"]*)\"").matcher(tags);
        return m.find() ? m.group(1) : "?";
    }

    private void report(int seconds, int rate, long ok, long failed, Map<Integer, Integer> statuses,
                        Map<String, Long> attempts, List<double[]> samples, List<List<String>> storeRows) {
        double[] first = samples.get(0);
        double[] last = samples.get(samples.size() - 1);
        double maxHeap = samples.stream().mapToDouble(s -> s[1]).max().orElse(0);
        double maxThreads = samples.stream().mapToDouble(s -> s[2]).max().orElse(0);
        boolean leasesZero = storeRows.stream().allMatch(r -> r.get(2).equals("0"));
        boolean probesFree = storeRows.stream().allMatch(r -> r.get(4).equals("0"));
        Map<String, List<double[]>> series = new LinkedHashMap<>();
        series.put("live heap MB", samples.stream().map(s -> new double[] {s[0], s[1]}).toList());
        series.put("threads", samples.stream().map(s -> new double[] {s[0], s[2]}).toList());
        series.put("RSS MB / 4", samples.stream().map(s -> new double[] {s[0], s[3] / 4}).toList());
        Plot.lines(env.out.resolve("soak.png"), "Soak: live heap, threads, RSS", "seconds", "MB / count", series);
        StringBuilder sampleRows = new StringBuilder();
        List<List<String>> rows = new ArrayList<>();
        for (double[] s : samples) {
            rows.add(List.of(f("%.0f", s[0]), f("%.1f", s[1]), f("%.0f", s[2]), f("%.0f", s[3])));
        }
        sampleRows.append(BenchEnv.table(List.of("t (s)", "live heap MB (after full GC)", "threads", "RSS MB"), rows));
        env.section("soak", "Soak", f("""
                        %d s of mixed traffic (two in three streamed, one in three whole), open loop at %d req/s, \
                        through the packaged app on a private Redis, over 3 simulated routes rolling per attempt: \
                        503 3 %%, drop after 10 tokens 2 %%, empty stream 2 %%, 2 s stall 1 %%; group `auto`, breaker \
                        `max_fails: 10, fail_timeout: 2s` (a route's failures come about 5 per 2 s at this rate, so \
                        it cools down now and then, as a flaky provider would, and half-open probes run; with \
                        `max_fails: 3` every route was cooling nearly all the time and most requests were fast 503s), \
                        `stall_floor: 300ms`. Set `BENCH_SOAK_SECONDS` to change the length.

                        Requests: %d answered 200, %d not (client-side statuses of those: %s). Attempts by kind and \
                        outcome (the app's `hedgerow_attempts`): %s.

                        Store after the run (read with RESP from the private Redis, 2 s after the last response):

                        %s
                        Leases back to zero: %s. No probe slot left taken: %s. Live heap %.1f → %.1f MB (max %.1f), \
                        threads %.0f → %.0f (max %.0f), RSS %.0f → %.0f MB.

                        %s
                        ![soak](soak.png)
                        """, seconds, rate, ok, failed, statuses.isEmpty() ? "none" : statuses.toString(), attempts,
                BenchEnv.table(List.of("route", "lease key", "ZCARD", "probe key", "EXISTS"), storeRows),
                leasesZero ? "yes" : "NO", probesFree ? "yes" : "NO", first[1], last[1], maxHeap, first[2], last[2],
                maxThreads, first[3], last[3], sampleRows));
    }
}
