package dev.hedgerow.bench;

import dev.hedgerow.sim.SimConfig;
import dev.hedgerow.sim.SimServer;
import io.vertx.core.Vertx;
import io.vertx.core.VertxOptions;
import org.HdrHistogram.Histogram;

import java.io.FileOutputStream;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Map;

/**
 * What every benchmark shares: the output folder ({@code bench-results/}), a scratch folder for catalogs and logs,
 * the packaged app, one Vert.x for the simulators and the load client, and helpers to write a results section
 * (markdown) that {@code scripts/bench} assembles into {@code RESULTS.md}. Not thread-safe; one benchmark at a time.
 */
final class BenchEnv implements AutoCloseable {
    final Path out;
    final Path tmp;
    final Path jar;
    final Path repo;
    final Vertx vertx;
    private final List<SimServer> sims = new ArrayList<>();
    /** Holds the kernel's CPU wake-up latency request while the benchmark runs; null when not held. */
    private final FileOutputStream idlePolling;
    private final String idleNote;
    private final QuietKernelThreads quiet;
    /** The host's CPU availability before the benchmark started (see {@link HostCheck}). */
    private final HostCheck hostBefore;

    BenchEnv(Path repo, Path out) {
        this.repo = repo;
        this.out = out;
        this.tmp = out.resolve("tmp");
        this.jar = repo.resolve("target/quarkus-app/quarkus-run.jar");
        this.vertx = Vertx.vertx(new VertxOptions().setEventLoopPoolSize(2));
        try {
            Files.createDirectories(out.resolve("sections"));
            Files.createDirectories(tmp);
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
        String why;
        FileOutputStream held = null;
        if ("off".equalsIgnoreCase(System.getenv("BENCH_CPU_DMA_LATENCY"))) {
            why = "off by BENCH_CPU_DMA_LATENCY=off";
        } else {
            try {
                held = new FileOutputStream("/dev/cpu_dma_latency");
                held.write(new byte[] {0, 0, 0, 0}); // a 32-bit 0 µs: idle CPUs poll instead of halting
                held.flush();
                why = null;
            } catch (IOException | SecurityException e) {
                why = "could not hold /dev/cpu_dma_latency: " + e.getMessage();
                if (held != null) {
                    try {
                        held.close(); // opened but not written: drop the request rather than claim it
                    } catch (IOException ignored) {
                        // nothing held either way
                    }
                    held = null;
                }
            }
        }
        idlePolling = held;
        idleNote = held != null
                ? "idle CPUs polling (the bench held /dev/cpu_dma_latency at 0 µs, as tuned's latency-performance"
                        + " profile does, so a wake-up does not wait for a halted virtual CPU)"
                : "idle CPUs halting (" + why + ")";
        quiet = new QuietKernelThreads();
        if (!Files.isRegularFile(jar)) {
            quiet.close();
            throw new IllegalStateException("no packaged app at " + jar + ": run ./mvnw -B -q package -DskipTests");
        }
        hostBefore = HostCheck.measure(HOST_CHECK_MILLIS);
    }

    private static final long HOST_CHECK_MILLIS = 2_000;

    /** The host check from before the benchmark and one made now (nothing of the benchmark should be running). */
    String hostNote() {
        return HostCheck.describe(hostBefore, HostCheck.measure(HOST_CHECK_MILLIS));
    }

    /** {@code "K=V K2=V2"} (space-separated; null or blank: none) as an ordered map. */
    static Map<String, String> pairs(String spec) {
        Map<String, String> out = new java.util.LinkedHashMap<>();
        if (spec != null) {
            for (String pair : spec.trim().split("\\s+")) {
                int eq = pair.indexOf('=');
                if (eq > 0) {
                    out.put(pair.substring(0, eq), pair.substring(eq + 1));
                } else if (!pair.isEmpty()) {
                    throw new IllegalArgumentException("not K=V: " + pair);
                }
            }
        }
        return out;
    }

    static int intEnv(String name, int dflt) {
        String v = System.getenv(name);
        return v == null || v.isBlank() ? dflt : Integer.parseInt(v.trim());
    }

    static double doubleEnv(String name, double dflt) {
        String v = System.getenv(name);
        return v == null || v.isBlank() ? dflt : Double.parseDouble(v.trim());
    }

    SimServer sim(SimConfig cfg) {
        SimServer s = SimServer.startBlocking(vertx, cfg);
        sims.add(s);
        return s;
    }

    Path file(String name, String text) {
        try {
            Path p = tmp.resolve(name);
            Files.writeString(p, text);
            return p;
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    /** Writes {@code sections/<bench>.md}: a heading, how it was made, then the body. */
    void section(String bench, String title, String body) {
        String header = "## " + title + "\n\n"
                + "Made by `scripts/bench " + bench + "` on " + System.getenv().getOrDefault("BENCH_STAMP", "?")
                + ", all on 127.0.0.1, " + idleNote + ", " + quiet.note() + "; 1-minute load average when it ended: "
                + loadAverage() + "; " + hostNote() + ".\n\n";
        try {
            Files.writeString(out.resolve("sections").resolve(bench + ".md"), header + body.strip() + "\n");
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
        System.out.println(header + body);
    }

    /**
     * CPU time the hypervisor took from this VM since boot (the steal column of /proc/stat, summed over CPUs), in
     * ms; -1 when unknown. USER_HZ is 100 on Linux/x86, so a tick is 10 ms.
     */
    static long stealMillis() {
        try {
            String[] cpu = Files.readAllLines(Path.of("/proc/stat")).get(0).trim().split("\\s+");
            return cpu.length > 8 ? Long.parseLong(cpu[8]) * 10 : -1;
        } catch (IOException | RuntimeException e) {
            return -1;
        }
    }

    static String loadAverage() {
        try {
            return Files.readString(Path.of("/proc/loadavg")).split(" ")[0];
        } catch (IOException e) {
            return "?";
        }
    }

    static String table(List<String> head, List<List<String>> rows) {
        StringBuilder sb = new StringBuilder("| ").append(String.join(" | ", head)).append(" |\n|");
        head.forEach(h -> sb.append(" --- |"));
        sb.append('\n');
        for (List<String> r : rows) {
            sb.append("| ").append(String.join(" | ", r)).append(" |\n");
        }
        return sb.toString();
    }

    static String ms(double micros) {
        return String.format(Locale.ROOT, micros >= 100_000 ? "%.0f" : micros >= 10_000 ? "%.1f" : "%.2f",
                micros / 1000.0);
    }

    static String f(String fmt, Object... args) {
        return String.format(Locale.ROOT, fmt, args);
    }

    static double p(Histogram h, double percentile) {
        return h.getTotalCount() == 0 ? Double.NaN : h.getValueAtPercentile(percentile);
    }

    static String body(String model, String prompt, boolean stream, Integer maxTokens) {
        return "{\"model\":\"" + model + "\",\"stream\":" + stream
                + (maxTokens == null ? "" : ",\"max_tokens\":" + maxTokens)
                + ",\"messages\":[{\"role\":\"user\",\"content\":\"" + prompt + "\"}]}";
    }

    static Map<String, String> auth(String key) {
        return Map.of("content-type", "application/json", "authorization", "Bearer " + key);
    }

    @Override
    public void close() {
        quiet.close();
        sims.forEach(SimServer::close);
        vertx.close().toCompletionStage().toCompletableFuture().join();
        if (idlePolling != null) {
            try {
                idlePolling.close(); // releases the latency request
            } catch (IOException ignored) {
                // the process is ending; the kernel drops the request with the file
            }
        }
    }
}
