package dev.hedgerow.bench;

import com.fasterxml.jackson.databind.JsonNode;
import dev.hedgerow.catalog.GroupSettings;
import dev.hedgerow.sim.Fault;
import dev.hedgerow.sim.ModelScript;
import dev.hedgerow.sim.ModelScript.FaultChance;
import dev.hedgerow.sim.SimConfig;
import dev.hedgerow.sim.SimServer;
import dev.hedgerow.sim.SimStats;
import dev.hedgerow.sim.SimText;
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
 * Failover under chaos: streamed requests through three simulated routes that each kill, truncate or stall a fifth
 * of their answers at random (the scripts' {@link FaultChance} odds). Every answer is checked byte for byte against
 * {@link SimText#expected}; the attempt trail of the final chunk says how many failovers and resumes it took. The
 * group allows {@value #MAX_RESUMES} resumes instead of the default 3 (the section says why).
 */
final class ChaosBench {
    static final long TEXT_SEED = 7;
    static final int LENGTH = 64;
    /**
     * Resumes allowed per request: in this fleet ~17 % of attempts fail after content, so the default 3 would be used
     * up by ~0.17^4 ≈ 0.1 % of requests.
     */
    static final int MAX_RESUMES = 6;

    static final List<FaultChance> FAULTS = List.of(
            new FaultChance(0.05, Fault.dropAfter(5)),
            new FaultChance(0.04, Fault.dropMidCodePoint(30)),
            new FaultChance(0.05, new Fault.EmptyStream(true)),
            new FaultChance(0.05, new Fault.EofBeforeFinish(12)),
            new FaultChance(0.06, Fault.stall(20, 3000)));

    private final BenchEnv env;

    ChaosBench(BenchEnv env) {
        this.env = env;
    }

    static List<SimServer> fleet(BenchEnv env, List<FaultChance> faults) {
        List<SimServer> sims = new ArrayList<>();
        for (int i = 1; i <= 3; i++) {
            sims.add(env.sim(SimConfig.of(TEXT_SEED).withModel("c", ModelScript.defaults().withLength(LENGTH)
                    .withSeed(1000 + i).withLatency(ModelScript.Latency.of(20, 400).withJitter(0.1))
                    .withFaults(faults))));
        }
        return sims;
    }

    void run() {
        int n = BenchEnv.intEnv("BENCH_CHAOS_REQUESTS", 1000);
        int concurrency = BenchEnv.intEnv("BENCH_CHAOS_CONCURRENCY", 16);
        List<SimServer> sims = fleet(env, FAULTS);
        String yaml = f("""
                orgs:
                  - id: bench
                    keys: [{ name: bench, key: "k-bench" }]
                    providers:
                      - { id: c1, base_url: "%s" }
                      - { id: c2, base_url: "%s" }
                      - { id: c3, base_url: "%s" }
                    routes:
                      - { alias: chaos, provider: c1, model: c, capabilities: [prefill] }
                      - { alias: chaos, provider: c2, model: c, capabilities: [prefill] }
                      - { alias: chaos, provider: c3, model: c, capabilities: [prefill] }
                    groups:
                      chaos:
                        strategy: rr_health
                        max_resumes: %d
                        breaker: { max_fails: 1000000, fail_timeout: 1s }
                        stall_floor: 300ms
                """, sims.get(0).baseUrl(), sims.get(1).baseUrl(), sims.get(2).baseUrl(), MAX_RESUMES);
        Load.Result r;
        try (Proc app = Proc.hedgerow("hedgerow-chaos", env.jar, env.file("chaos.yaml", yaml), null, Map.of(),
                env.tmp); Load load = new Load(env.vertx, 64)) {
            load.closedLoop(i -> req(app, -1 - i), 4, 40, 0, false); // warm-up
            sims.forEach(SimServer::resetStats);
            System.out.println("chaos: " + n + " streams at concurrency " + concurrency);
            r = load.closedLoop(i -> req(app, i), concurrency, n, 0, true);
        }
        long received = 0;
        long faulted = 0;
        for (SimServer s : sims) {
            SimStats st = s.stats("c");
            received += st.received();
            faulted += st.faulted();
        }
        report(r, n, concurrency, received, faulted);
    }

    static String prompt(int i) {
        return "chaos request " + i;
    }

    private static Load.Req req(Proc app, int i) {
        return new Load.Req(app.port, "/v1/chat/completions", BenchEnv.auth("k-bench"),
                BenchEnv.body("chaos", prompt(i), true, null));
    }

    /** Per-request verdict: byte-exact or not, resumes and failovers from the final chunk's trail. */
    record Verdict(boolean complete, boolean exact, int resumes, int failovers, long totalMicros,
                   Map<String, Integer> errors) {
    }

    static Verdict verdict(Load.Exchange e, String expected) {
        boolean complete = e.ok() && Sse.endsWithDone(e.body());
        String content;
        try {
            content = e.ok() ? Sse.content(e.body()) : null;
        } catch (RuntimeException ex) {
            content = null;
        }
        int resumes = 0;
        int failovers = 0;
        Map<String, Integer> errors = new LinkedHashMap<>();
        JsonNode trail = null;
        try {
            trail = e.ok() ? Sse.trail(e.body()) : null;
        } catch (RuntimeException ignored) {
            // no trail
        }
        if (trail != null) {
            for (JsonNode a : trail) {
                String kind = a.path("kind").asText();
                resumes += kind.equals("resume") ? 1 : 0;
                failovers += kind.equals("failover") ? 1 : 0;
                if (!a.path("error").isNull() && !a.path("error").asText().isEmpty()) {
                    errors.merge(a.path("error").asText(), 1, Integer::sum);
                }
            }
        }
        return new Verdict(complete, expected.equals(content), resumes, failovers, e.totalMicros(), errors);
    }

    private void report(Load.Result r, int n, int concurrency, long received, long faulted) {
        int complete = 0;
        int exact = 0;
        Histogram clean = new Histogram(Load.MAX_MICROS, 3);
        Histogram resumed = new Histogram(Load.MAX_MICROS, 3);
        long resumesTotal = 0;
        long failoversTotal = 0;
        int resumedRequests = 0;
        Map<String, Integer> errors = new LinkedHashMap<>();
        List<String> broken = new ArrayList<>();
        for (Load.Exchange e : r.exchanges) {
            Verdict v = verdict(e, SimText.expected(TEXT_SEED, prompt(e.index()), LENGTH));
            complete += v.complete() ? 1 : 0;
            exact += v.exact() ? 1 : 0;
            resumesTotal += v.resumes();
            failoversTotal += v.failovers();
            v.errors().forEach((k, c) -> errors.merge(k, c, Integer::sum));
            if (v.resumes() == 0 && v.failovers() == 0 && v.complete()) {
                clean.recordValue(Load.clamp(v.totalMicros()));
            } else if (v.resumes() > 0 && v.complete()) {
                resumed.recordValue(Load.clamp(v.totalMicros()));
                resumedRequests++;
            }
            if ((!v.complete() || !v.exact()) && broken.size() < 5) {
                broken.add(e.index() + ": status " + e.status() + " " + e.error() + " "
                        + e.body().substring(Math.max(0, e.body().length() - 300)).replace('\n', ' ')
                        + (e.headers() == null ? "" : " trail " + e.headers().get("x-hedgerow-attempts")));
            }
        }
        broken.forEach(b -> System.out.println("  not exact: " + b));
        double perResume = resumedRequests == 0 ? Double.NaN
                : (resumed.getMean() - clean.getMean()) / ((double) resumesTotal / resumedRequests);
        String table = BenchEnv.table(List.of("requests", "completed", "byte-exact", "upstream attempts",
                        "faulted attempts", "failovers (before first token)", "resumes (mid-stream)",
                        "requests resumed", "clean e2e p50 / p99 ms", "resumed e2e p50 / p99 ms",
                        "added latency per resume"),
                List.of(List.of(Integer.toString(n), f("%d (%.1f %%)", complete, 100.0 * complete / n),
                        f("%d (%.1f %%)", exact, 100.0 * exact / n), Long.toString(received),
                        f("%d (%.1f %%)", faulted, 100.0 * faulted / Math.max(1, received)),
                        Long.toString(failoversTotal), Long.toString(resumesTotal), Integer.toString(resumedRequests),
                        ms(p(clean, 50)) + " / " + ms(p(clean, 99)),
                        ms(p(resumed, 50)) + " / " + ms(p(resumed, 99)), ms(perResume) + " ms")));
        StringBuilder classes = new StringBuilder();
        errors.forEach((k, c) -> classes.append(f("`%s` %d, ", k, c)));
        Map<String, Histogram> hists = new LinkedHashMap<>();
        hists.put("no failure", clean);
        hists.put("resumed", resumed);
        Plot.percentiles(env.out.resolve("chaos-e2e.png"), "Chaos: whole-stream time, clean vs resumed", hists,
                1000.0, "stream end (ms, log)");
        boolean met = complete == n && exact == n;
        // a request uses up its resumes when its first attempt and every resume fail after content
        double faultShare = (double) faulted / Math.max(1, received);
        double afterContent = (double) resumesTotal / Math.max(1, received);
        int defaultResumes = GroupSettings.Retry.defaults().maxResumes();
        env.section("chaos", "Failover under chaos", f("""
                        %d streamed requests (64 tokens at 400 tok/s, TTFT 20 ms) at concurrency %d through the \
                        packaged app (embedded state) over 3 simulated routes whose scripts roll, per attempt: drop \
                        after 5 tokens 5 %%, drop mid-UTF-8 code point after 30 tokens 4 %%, empty 200 stream 5 %%, \
                        clean EOF before finish after 12 tokens 5 %%, 3 s stall after 20 tokens 6 %%. Group: \
                        `rr_health`, `stall_floor: 300ms`, breaker `max_fails: 1000000` (a fleet where every route \
                        fails a fifth of the time would otherwise be cooled down whole: the benchmark measures \
                        failover and resume, not the breaker), `max_resumes: %d`. Each answer is compared byte for \
                        byte with `SimText.expected`. Error classes seen in the trails: %s.

                        Why `max_resumes: %d`: a request runs out of resumes when its first attempt and each of its \
                        resumes fail after content. This fleet faults %.1f %% of attempts, %.1f %% after content \
                        (resumes ÷ upstream attempts), so with the default %d resumes about %.3f^%d ≈ %.1e of \
                        requests would use them all up and end with an error event, a property of this deliberately \
                        hostile fleet rather than of resuming; with %d, about %.3f^%d ≈ %.1e. The DESIGN default stays \
                        %d.

                        %s
                        Added latency per resume = (mean stream time of resumed requests − mean of requests with no \
                        failure) / mean resumes per resumed request; stalls dominate it (the watchdog must first see \
                        the silence).

                        **Target** (100 %% complete and byte-exact): %s.

                        ![stream time](chaos-e2e.png)
                        """, n, concurrency, MAX_RESUMES, classes.toString().replaceAll(", $", ""), MAX_RESUMES,
                100 * faultShare, 100 * afterContent, defaultResumes, afterContent, defaultResumes + 1,
                Math.pow(afterContent, defaultResumes + 1), MAX_RESUMES, afterContent, MAX_RESUMES + 1,
                Math.pow(afterContent, MAX_RESUMES + 1), defaultResumes, table,
                met ? "met" : f("missed (%d incomplete, %d not byte-exact)", n - complete, n - exact)));
    }
}
