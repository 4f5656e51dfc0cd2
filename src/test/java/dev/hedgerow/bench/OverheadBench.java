package dev.hedgerow.bench;

import dev.hedgerow.function.JitPriority;
import dev.hedgerow.sim.ModelScript;
import dev.hedgerow.sim.SimConfig;
import dev.hedgerow.sim.SimServer;
import dev.hedgerow.testsupport.RedisServer;
import org.HdrHistogram.Histogram;

import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.stream.Collectors;

import static dev.hedgerow.bench.BenchEnv.f;
import static dev.hedgerow.bench.BenchEnv.ms;
import static dev.hedgerow.bench.BenchEnv.p;

/**
 * Overhead against a real peer gateway: the same load straight at an instant simulator, through Hedgerow (the
 * packaged app, with Redis state and with embedded state) and through the Portkey open-source gateway. The targets
 * run in interleaved rounds (every round visits every target) so that the machine's drift spreads evenly; the
 * histograms of all rounds are merged. Figures: open-loop latency at a fixed rate, closed-loop throughput at
 * saturation, streaming time to first byte and inter-chunk gaps at a fixed concurrency, CPU and RSS from /proc.
 */
final class OverheadBench {
    private static final String NONSTREAM = "fast-model";
    private static final String STREAM = "stream-model";

    private final BenchEnv env;

    OverheadBench(BenchEnv env) {
        this.env = env;
    }

    /** One gateway (or none) in front of the simulator. */
    private static final class Target {
        final String name;
        final int port;
        final Map<String, String> headers;
        final Proc proc;
        final Histogram fixed = new Histogram(Load.MAX_MICROS, 3);
        final Histogram ttfb = new Histogram(Load.MAX_MICROS, 3);
        final Histogram gaps = new Histogram(Load.MAX_MICROS, 3);
        double satOk;
        double satSeconds;
        long errors;
        long fixedCount;
        double cpuFixed;
        double fixedSeconds;
        double cpuAll;
        double rssMax;
        final List<String> roundP99 = new ArrayList<>();
        /** Hedgerow's compiler threads at SCHED_IDLE ("k of n", {@link JitPriority}) as each round began. */
        final List<String> roundJit = new ArrayList<>();

        Target(String name, int port, Map<String, String> headers, Proc proc) {
            this.name = name;
            this.port = port;
            this.headers = headers;
            this.proc = proc;
        }
    }

    /**
     * The request path is the gateway function; the prober and console are functions of their own when deployed,
     * and the prober's probes would share this machine's two cores and the simulator with the measured load.
     */
    private static final Map<String, String> GATEWAY_ONLY = Map.of("HEDGEROW_FUNCTION", "gateway");

    /** One warm-up request in this many is streamed. */
    private static final int WARMUP_STREAM_EVERY = 8;

    /**
     * {@code BENCH_OVERHEAD_QUICK=1}: only direct and embedded Hedgerow ({@code =redis}: direct and Hedgerow on
     * Redis), for trying settings (not for the report).
     */
    private static final boolean QUICK = System.getenv("BENCH_OVERHEAD_QUICK") != null;
    private static final boolean QUICK_REDIS = "redis".equals(System.getenv("BENCH_OVERHEAD_QUICK"));

    void run() {
        double rate = BenchEnv.doubleEnv("BENCH_RATE", 500);
        int rounds = BenchEnv.intEnv("BENCH_ROUNDS", 3);
        double phase = BenchEnv.doubleEnv("BENCH_PHASE_SECONDS", 5);
        int streamConcurrency = BenchEnv.intEnv("BENCH_STREAM_CONCURRENCY", 16);
        int satConcurrency = BenchEnv.intEnv("BENCH_SAT_CONCURRENCY", 32);
        // long enough for the JITs to settle: after a 4 s warm-up the JVM's C2 threads still burned about as much
        // CPU as the request path itself during the measured phase, and after 20 s (plus a round of every phase) C2
        // was still compiling the request path's hot methods (Router.rank among them) during the first measured round,
        // whose p99 was 2-4x the later rounds' in every run (-Xlog:jit+compilation)
        double warmup = BenchEnv.doubleEnv("BENCH_WARMUP_SECONDS", 60);

        SimServer sim = env.sim(SimConfig.of(1)
                .withModel(NONSTREAM, ModelScript.defaults().withLength(16))
                .withModel(STREAM, ModelScript.defaults().withLength(64)
                        .withLatency(ModelScript.Latency.of(0, 200))));
        String yaml = """
                orgs:
                  - id: bench
                    keys: [{ name: bench, key: "k-bench" }]
                    providers:
                      - { id: up, base_url: "%s", api_key: "sk-up" }
                    routes:
                      - { alias: fast-model, provider: up, model: fast-model }
                      - { alias: stream-model, provider: up, model: stream-model }
                """.formatted(sim.baseUrl());
        Path catalog = env.file("overhead.yaml", yaml);
        List<Target> targets = new ArrayList<>();
        try (RedisServer redis = RedisServer.start()) {
            targets.add(new Target("direct", sim.port(), Map.of("content-type", "application/json"), null));
            if (!QUICK_REDIS) {
                Proc hrEmbedded = Proc.hedgerow("hedgerow-embedded", env.jar, catalog, null, GATEWAY_ONLY, env.tmp);
                targets.add(new Target("hedgerow (embedded)", hrEmbedded.port, BenchEnv.auth("k-bench"), hrEmbedded));
            }
            if (!QUICK || QUICK_REDIS) {
                Proc hrRedis = Proc.hedgerow("hedgerow-redis", env.jar, catalog, redis.url(), GATEWAY_ONLY, env.tmp);
                targets.add(new Target("hedgerow (redis)", hrRedis.port, BenchEnv.auth("k-bench"), hrRedis));
            }
            String baseline = System.getenv("BENCH_BASELINE_JAR");
            Map<String, String> baselineEnv = BenchEnv.pairs(System.getenv("BENCH_BASELINE_ENV"));
            if (QUICK && ((baseline != null && !baseline.isBlank()) || !baselineEnv.isEmpty())) {
                // another build (or this one with other settings) measured in the same run, its rounds interleaved
                // with this one's: on a noisy host the only fair A/B (scripts/bench.d/baseline.sh builds one from a
                // commit)
                Map<String, String> baseEnv = new LinkedHashMap<>(GATEWAY_ONLY);
                baseEnv.putAll(baselineEnv);
                Proc base = Proc.hedgerow("hedgerow-baseline",
                        baseline == null || baseline.isBlank() ? env.jar : Path.of(baseline), catalog,
                        QUICK_REDIS ? redis.url() : null, baseEnv, env.tmp);
                targets.add(new Target("baseline (" + (QUICK_REDIS ? "redis" : "embedded") + ")", base.port,
                        BenchEnv.auth("k-bench"), base));
            }
            if (!QUICK) {
                Proc portkey = portkey();
                Map<String, String> pk = new LinkedHashMap<>(Map.of("content-type", "application/json",
                        "authorization", "Bearer sk-up", "x-portkey-provider", "openai",
                        "x-portkey-custom-host", sim.baseUrl()));
                targets.add(new Target("portkey", portkey.port, pk, portkey));
            }
            if (!QUICK || QUICK_REDIS) {
                // the same on Redis with the snapshot cache and write batching off: every request reads its routes
                // from Redis and makes every write itself
                Map<String, String> uncached = new LinkedHashMap<>(GATEWAY_ONLY);
                uncached.put("HEDGEROW_STATE_SNAPSHOT_MAX_AGE", "0s");
                uncached.put("HEDGEROW_STATE_WRITE_BATCH", "0s");
                Proc hrUncached = Proc.hedgerow("hedgerow-redis-uncached", env.jar, catalog, redis.url(), uncached,
                        env.tmp);
                targets.add(new Target("hedgerow (redis, no cache or batching)", hrUncached.port,
                        BenchEnv.auth("k-bench"), hrUncached));
            }
            try (Load load = new Load(env.vertx, 256)) {
                for (Target t : targets) { // warm-up: JIT, connection pools
                    System.out.println("warm-up " + t.name);
                    // whole and streamed requests mixed, as a gateway sees them: the JIT's first optimized
                    // compile of the request path then covers both kinds. Warmed on whole answers alone, the first
                    // streams deoptimized the hot methods (Router.plan, TimingWindows.abandonAfter among them), which
                    // then ran in C1's profiling tier for about 5000 more calls, well into the first measured round
                    // (-Xlog:jit+compilation: every run's round 1 had 2-4x the p99 of the rounds after it)
                    load.openLoop(i -> i % WARMUP_STREAM_EVERY == 0 ? req(t, STREAM, true, i)
                            : req(t, NONSTREAM, false, i), rate, warmup, false);
                    // every phase the rounds run, so no round meets code the JIT has not compiled yet (the
                    // saturated phase alone made C2 compile for seconds, into the next round's fixed-rate phase)
                    load.closedLoop(i -> req(t, NONSTREAM, false, i), satConcurrency, 0, phase, false);
                    load.closedLoop(i -> req(t, STREAM, true, i), streamConcurrency, 0, phase, false);
                    load.openLoop(i -> req(t, NONSTREAM, false, i), rate, phase, false);
                }
                for (int round = 1; round <= rounds; round++) {
                    for (Target t : roundOrder(targets, round)) {
                        System.out.println("round " + round + " " + t.name);
                        measure(load, t, rate, phase, satConcurrency, streamConcurrency);
                    }
                }
            } finally {
                for (Target t : targets) {
                    if (t.proc != null) {
                        t.proc.close();
                    }
                }
            }
        }
        report(targets, rate, rounds, phase, satConcurrency, streamConcurrency, warmup);
    }

    private Proc portkey() {
        Path js = env.repo.resolve("bench/node_modules/@portkey-ai/gateway/build/start-server.js");
        int port = Proc.freePort();
        Proc p = Proc.start("portkey", List.of("node", js.toString(), "--port=" + port, "--headless"),
                Map.of("NODE_ENV", "production"), port, env.tmp);
        p.awaitHttp("/", 30);
        return p;
    }

    /**
     * The targets in round {@code round}'s order: direct first, then the gateways rotated by one place per round, so
     * over as many rounds as there are gateways each takes each place once. (In fixed order, an A/A run, one build
     * measured twice, differed 3x in CPU per request, mostly in round 1, which always fell on the same copy first.)
     */
    static List<Target> roundOrder(List<Target> targets, int round) {
        List<Target> gateways = new ArrayList<>(targets.subList(1, targets.size()));
        java.util.Collections.rotate(gateways, -(round - 1));
        List<Target> out = new ArrayList<>(targets.size());
        out.add(targets.get(0));
        out.addAll(gateways);
        return out;
    }

    private static Load.Req req(Target t, String model, boolean stream, int i) {
        return new Load.Req(t.port, "/v1/chat/completions", t.headers,
                BenchEnv.body(model, "overhead probe " + (i % 64), stream, null));
    }

    private static void measure(Load load, Target t, double rate, double phase, int satC, int streamC) {
        double cpu0 = t.proc == null ? 0 : t.proc.cpuSeconds();
        long faults0 = t.proc == null ? 0 : t.proc.majorFaults();
        if (t.name.startsWith("hedgerow")) {
            t.roundJit.add(JitPriority.forProcess(t.proc.pid()).idleShare());
        }
        long steal0 = BenchEnv.stealMillis();
        Load.Result fixed = load.openLoop(i -> req(t, NONSTREAM, false, i), rate, phase, false);
        long steal = steal0 < 0 ? 0 : BenchEnv.stealMillis() - steal0;
        double cpu1 = t.proc == null ? 0 : t.proc.cpuSeconds();
        long faults = t.proc == null ? 0 : t.proc.majorFaults() - faults0;
        t.fixed.add(fixed.latency);
        t.roundP99.add(ms(p(fixed.latency, 99)) + (steal > 0 ? " (steal " + steal + " ms)" : ""));
        System.out.println("  " + t.name + " fixed rate: p50 " + ms(p(fixed.latency, 50)) + " ms, p99 "
                + ms(p(fixed.latency, 99)) + " ms, p99.9 " + ms(p(fixed.latency, 99.9)) + " ms, major faults "
                + faults + (steal > 0 ? ", steal " + steal + " ms" : "")
                + (t.proc == null ? "" : f(", CPU %.0f µs/req", 1e6 * (cpu1 - cpu0) / Math.max(1, fixed.ok.get()))));
        if (!fixed.slow.isEmpty()) {
            System.out.println("  slow (start, ms): " + String.join(", ", fixed.slow));
        }
        t.fixedCount += fixed.ok.get();
        t.errors += fixed.failed.get();
        t.cpuFixed += cpu1 - cpu0;
        t.fixedSeconds += fixed.wallNanos / 1e9;
        Load.Result sat = load.closedLoop(i -> req(t, NONSTREAM, false, i), satC, 0, phase, false);
        t.satOk += sat.ok.get();
        t.satSeconds += sat.wallNanos / 1e9;
        t.errors += sat.failed.get();
        Load.Result streams = load.closedLoop(i -> req(t, STREAM, true, i), streamC, 0, phase, false);
        t.ttfb.add(streams.ttfb);
        t.gaps.add(streams.gaps);
        t.errors += streams.failed.get();
        if (t.proc != null) {
            t.cpuAll += t.proc.cpuSeconds() - cpu0;
            t.rssMax = Math.max(t.rssMax, t.proc.rssMb());
        }
        if (fixed.failed.get() + sat.failed.get() + streams.failed.get() > 0) {
            fixed.exchanges.stream().filter(e -> !e.ok()).limit(2).forEach(e -> System.out.println(
                    "  error " + t.name + ": " + e.status() + " " + e.error() + " " + e.body()));
        }
    }

    private void report(List<Target> targets, double rate, int rounds, double phase, int satC, int streamC,
                        double warmup) {
        Target direct = targets.get(0);
        List<List<String>> rows = new ArrayList<>();
        for (Target t : targets) {
            boolean gw = t.proc != null;
            rows.add(List.of(t.name,
                    f("%.0f", t.fixedCount / t.fixedSeconds),
                    ms(p(t.fixed, 50)), ms(p(t.fixed, 99)), ms(p(t.fixed, 99.9)),
                    gw ? ms(p(t.fixed, 50) - p(direct.fixed, 50)) : "–",
                    gw ? ms(p(t.fixed, 99) - p(direct.fixed, 99)) : "–",
                    f("%.0f", t.satOk / t.satSeconds),
                    ms(p(t.ttfb, 50)), ms(p(t.ttfb, 99)), ms(p(t.gaps, 50)), ms(p(t.gaps, 99)),
                    gw ? f("%.0f %%", 100 * t.cpuFixed / t.fixedSeconds) : "–",
                    gw ? f("%.0f", 1e6 * t.cpuFixed / Math.max(1, t.fixedCount)) : "–",
                    gw ? f("%.0f", t.rssMax) : "–",
                    Long.toString(t.errors)));
        }
        String table = BenchEnv.table(List.of("target", "req/s sent", "p50 ms", "p99 ms", "p99.9 ms",
                "added p50 ms", "added p99 ms", "max req/s (c=" + satC + ")", "stream TTFB p50 ms",
                "TTFB p99 ms", "inter-chunk p50 ms", "inter-chunk p99 ms", "CPU at fixed rate",
                "CPU µs/req", "RSS MB", "errors"), rows);
        if (QUICK) {
            System.out.println("quick run (not reported), extra JVM options " + Proc.JVM_OPTS + "; " + env.hostNote()
                    + ":\n" + table);
            return;
        }
        Target emb = targets.get(1);
        Target red = targets.get(2);
        Target pk = targets.get(3);
        Target uncached = targets.get(4);
        double addEmb = p(emb.fixed, 99) - p(direct.fixed, 99);
        double addRed = p(red.fixed, 99) - p(direct.fixed, 99);
        double addPk = p(pk.fixed, 99) - p(direct.fixed, 99);
        String verdict = f("""
                        **Targets.** Hedgerow's added p99 below Portkey's: embedded %s ms vs %s ms (%s), Redis %s ms \
                        vs %s ms (%s). Added p99 below 1 ms at %.0f req/s: embedded %s, Redis %s (Redis without the \
                        cache and batching: %s ms).
                        """, ms(addEmb), ms(addPk), addEmb < addPk ? "met" : "missed", ms(addRed), ms(addPk),
                addRed < addPk ? "met" : "missed", rate, addEmb < 1000 ? "met" : "missed",
                addRed < 1000 ? "met" : "missed", ms(p(uncached.fixed, 99) - p(direct.fixed, 99)));
        Plot.percentiles(env.out.resolve("overhead-latency.png"),
                f("Non-streaming latency at %.0f req/s (open loop)", rate),
                Map.of(direct.name, direct.fixed, emb.name, emb.fixed, red.name, red.fixed, pk.name, pk.fixed,
                                uncached.name, uncached.fixed)
                        .entrySet().stream().sorted(Map.Entry.comparingByKey())
                        .collect(LinkedHashMap::new, (m, e) -> m.put(e.getKey(), e.getValue()), Map::putAll),
                1000.0, "latency (ms, log)");
        List<String> names = targets.stream().map(t -> t.name).toList();
        Map<String, double[]> stream = new LinkedHashMap<>();
        stream.put("TTFB p50", targets.stream().mapToDouble(t -> p(t.ttfb, 50) / 1000).toArray());
        stream.put("TTFB p99", targets.stream().mapToDouble(t -> p(t.ttfb, 99) / 1000).toArray());
        stream.put("inter-chunk p50", targets.stream().mapToDouble(t -> p(t.gaps, 50) / 1000).toArray());
        stream.put("inter-chunk p99", targets.stream().mapToDouble(t -> p(t.gaps, 99) / 1000).toArray());
        Plot.bars(env.out.resolve("overhead-streaming.png"),
                f("Streaming at concurrency %d (simulator: 64 tokens at 200 tok/s)", streamC), "ms", names, stream);
        env.section("overhead", "Overhead", f("""
                        Load: a Java open-loop client (Vert.x HTTP client, HdrHistogram, every latency taken from the \
                        request's *scheduled* start, so no coordinated omission) at %.0f req/s for %.0f s per round; \
                        throughput: %d concurrent requests back to back for %.0f s; streaming: %d concurrent streams \
                        of 64 tokens at 200 tok/s for %.0f s. %d interleaved rounds (direct first, the gateways \
                        taking turns in order), histograms merged, after a \
                        warm-up per target of %.0f s at that rate (one request in %d streamed, so the JIT's \
                        optimized request path covers both kinds) and then one unmeasured round of all three phases \
                        (so the JITs have compiled every phase's code before any is measured). Upstream: the \
                        simulator with instant latency (16 tokens non-streaming). Hedgerow is the packaged app \
                        (`java -Xms64m -Xmx512m -jar target/quarkus-app/quarkus-run.jar`) serving the gateway \
                        function only (`HEDGEROW_FUNCTION=gateway`, as deployed: the prober is a function of its \
                        own); on Redis it ranks on its snapshot cache (`hedgerow.state.snapshot-max-age`, default \
                        50 ms) and batches the writes every request makes (`hedgerow.state.write-batch`, default \
                        20 ms), and runs once more with both off (`0s`: every request reads its routes from Redis \
                        and makes all six of its writes itself) for comparison; Portkey is \
                        @portkey-ai/gateway 1.15.2 on node %s with `x-portkey-provider: openai` and \
                        `x-portkey-custom-host`. CPU is the gateway process's user+system time from /proc during the \
                        fixed-rate phase; RSS is its peak VmRSS. "Added" = gateway minus direct at that percentile. \
                        Hedgerow moves its JIT compiler threads to SCHED_IDLE once warm (`hedgerow.jit.idle-priority`, \
                        on by default: 20 000 requests served and a 30 s pass with under 1 s of compiling); found in \
                        /proc as each round began: %s.

                        %s
                        Fixed-rate p99 per round (ms; with the CPU time the hypervisor took from the VM during \
                        that phase, /proc/stat steal, when it took any): %s.

                        %s
                        ![latency by percentile](overhead-latency.png)
                        ![streaming](overhead-streaming.png)
                        """, rate, phase, satC, phase, streamC, phase, rounds, warmup, WARMUP_STREAM_EVERY, nodeVersion(),
                targets.stream().filter(t -> !t.roundJit.isEmpty())
                        .map(t -> t.name + " " + String.join(" / ", t.roundJit)).collect(Collectors.joining("; ")),
                table,
                targets.stream().map(t -> t.name + " " + String.join(" / ", t.roundP99))
                        .collect(Collectors.joining("; ")),
                verdict));
    }

    private static String nodeVersion() {
        try {
            Process p = new ProcessBuilder("node", "--version").redirectErrorStream(true).start();
            return new String(p.getInputStream().readAllBytes()).trim();
        } catch (Exception e) {
            return "?";
        }
    }
}
