package dev.hedgerow.bench;

import java.io.File;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.net.HttpURLConnection;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.net.URI;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;

/**
 * A child process under test (the packaged Hedgerow app, the Portkey gateway on node): started with its own
 * environment on a free loopback port, its output in a log file, its resource use read from {@code /proc}, and
 * stopped by its own pid only. A JVM shutdown hook stops any process a benchmark forgot. Thread-safe.
 */
final class Proc implements AutoCloseable {
    private static final Set<Process> LIVE = ConcurrentHashMap.newKeySet();
    private static final long CLK_TCK = 100; // USER_HZ on Linux

    static {
        Runtime.getRuntime().addShutdownHook(new Thread(() -> LIVE.forEach(Process::destroyForcibly)));
    }

    final String name;
    final int port;
    final Process process;
    final Path log;

    private Proc(String name, int port, Process process, Path log) {
        this.name = name;
        this.port = port;
        this.process = process;
        this.log = log;
    }

    static Proc start(String name, List<String> cmd, Map<String, String> env, int port, Path logDir) {
        try {
            Files.createDirectories(logDir);
            Path log = logDir.resolve(name + ".log");
            ProcessBuilder pb = new ProcessBuilder(cmd).redirectErrorStream(true)
                    .redirectOutput(ProcessBuilder.Redirect.to(log.toFile()));
            // a null value removes an inherited variable (an outer REDIS_URL must not leak into an embedded run)
            env.forEach((k, v) -> {
                if (v == null) {
                    pb.environment().remove(k);
                } else {
                    pb.environment().put(k, v);
                }
            });
            Process p = pb.start();
            LIVE.add(p);
            return new Proc(name, port, p, log);
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    /** Extra JVM options for the Hedgerow process ({@code BENCH_HEDGEROW_JVM_OPTS}, space-separated). */
    static final List<String> JVM_OPTS = java.util.Arrays.stream(
            System.getenv().getOrDefault("BENCH_HEDGEROW_JVM_OPTS", "").trim().split("\\s+"))
            .filter(o -> !o.isEmpty()).toList();

    /** The packaged Hedgerow app ({@code target/quarkus-app/quarkus-run.jar}) on a free port. */
    static Proc hedgerow(String name, Path jar, Path config, String redisUrl, Map<String, String> extraEnv,
                         Path logDir) {
        int port = freePort();
        List<String> cmd = new ArrayList<>(List.of(javaBin(), "-Xms64m", "-Xmx512m"));
        cmd.addAll(JVM_OPTS);
        cmd.addAll(List.of("-jar", jar.toString()));
        Map<String, String> env = new java.util.HashMap<>(extraEnv);
        env.put("HEDGEROW_CONFIG", config.toString());
        env.put("QUARKUS_HTTP_PORT", Integer.toString(port));
        env.put("REDIS_URL", redisUrl);
        env.put("HEDGEROW_REDIS_CLUSTER", null);
        Proc p = start(name, cmd, env, port, logDir);
        p.awaitHttp("/q/health/live", 60);
        return p;
    }

    static String javaBin() {
        return Path.of(System.getProperty("java.home"), "bin", "java").toString();
    }

    long pid() {
        return process.pid();
    }

    /** Waits until {@code GET path} answers anything below 500. */
    void awaitHttp(String path, int seconds) {
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(seconds);
        while (System.nanoTime() < deadline) {
            if (!process.isAlive()) {
                throw new IllegalStateException(name + " exited with " + process.exitValue() + "; log:\n" + tail());
            }
            try {
                HttpURLConnection c = open(path, 500, 2000);
                int code = c.getResponseCode();
                c.disconnect();
                if (code < 500) {
                    return;
                }
            } catch (IOException ignored) {
                // not listening yet
            }
            sleep(100);
        }
        throw new IllegalStateException(name + " did not answer " + path + " within " + seconds + " s; log:\n" + tail());
    }

    private HttpURLConnection open(String path, int connectMs, int readMs) throws IOException {
        HttpURLConnection c = (HttpURLConnection) URI.create("http://127.0.0.1:" + port + path).toURL()
                .openConnection();
        c.setConnectTimeout(connectMs);
        c.setReadTimeout(readMs);
        return c;
    }

    /** The body of {@code GET path} on this process. */
    String get(String path) {
        return get(path, null);
    }

    /** The body of {@code GET path} on this process, sent with {@code bearer} as its bearer token (when not null). */
    String get(String path, String bearer) {
        try {
            HttpURLConnection c = open(path, 2000, 10_000);
            if (bearer != null) {
                c.setRequestProperty("Authorization", "Bearer " + bearer);
            }
            try (var in = c.getInputStream()) {
                return new String(in.readAllBytes(), StandardCharsets.UTF_8);
            } finally {
                c.disconnect();
            }
        } catch (IOException e) {
            throw new UncheckedIOException(name + ": GET " + path, e);
        }
    }

    /** User + system CPU time of the process so far, in seconds (from /proc/PID/stat). */
    double cpuSeconds() {
        String[] f = stat();
        // fields after the comm: state(0) ... utime is field 14 overall = index 11 here, stime 12
        return f == null ? Double.NaN : (Long.parseLong(f[11]) + Long.parseLong(f[12])) / (double) CLK_TCK;
    }

    /** Major page faults so far (a page read back from its file: the process touched memory the kernel had dropped). */
    long majorFaults() {
        String[] f = stat();
        return f == null ? -1 : Long.parseLong(f[9]); // majflt is field 12 overall
    }

    /** /proc/PID/stat's fields after the command name, or null when the process is gone. */
    private String[] stat() {
        try {
            String stat = Files.readString(Path.of("/proc/" + pid() + "/stat"));
            return stat.substring(stat.lastIndexOf(')') + 2).split(" ");
        } catch (IOException e) {
            return null;
        }
    }

    /** A field of /proc/PID/status in kB (VmRSS, VmHWM) or a count (Threads). */
    long status(String field) {
        try {
            for (String line : Files.readAllLines(Path.of("/proc/" + pid() + "/status"))) {
                if (line.startsWith(field + ":")) {
                    return Long.parseLong(line.substring(field.length() + 1).trim().split("\\s+")[0]);
                }
            }
        } catch (IOException ignored) {
            // the process is gone
        }
        return -1;
    }

    double rssMb() {
        return status("VmRSS") / 1024.0;
    }

    String tail() {
        try {
            List<String> lines = Files.readAllLines(log, StandardCharsets.UTF_8);
            return String.join("\n", lines.subList(Math.max(0, lines.size() - 30), lines.size()));
        } catch (IOException e) {
            return "(no log)";
        }
    }

    /** Runs a JDK tool against this process and returns its output (jcmd, jstat). */
    String jdkTool(String tool, String... args) {
        List<String> cmd = new ArrayList<>();
        cmd.add(Path.of(System.getProperty("java.home"), "bin", tool).toString());
        if (!new File(cmd.get(0)).canExecute()) {
            cmd.set(0, tool);
        }
        for (String a : args) {
            cmd.add(a.replace("{pid}", Long.toString(pid())));
        }
        try {
            Process p = new ProcessBuilder(cmd).redirectErrorStream(true).start();
            String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
            p.waitFor(30, TimeUnit.SECONDS);
            return out;
        } catch (IOException e) {
            return "";
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            return "";
        }
    }

    /** Heap in use after a full GC, in MB (jcmd GC.run, then jstat -gc: S0U + S1U + EU + OU). */
    double liveHeapMb() {
        jdkTool("jcmd", "{pid}", "GC.run");
        String[] lines = jdkTool("jstat", "-gc", "{pid}").trim().split("\n");
        if (lines.length < 2) {
            return Double.NaN;
        }
        String[] head = lines[0].trim().split("\\s+");
        String[] vals = lines[lines.length - 1].trim().split("\\s+");
        double kb = 0;
        for (int i = 0; i < head.length && i < vals.length; i++) {
            if (Set.of("S0U", "S1U", "EU", "OU").contains(head[i])) {
                kb += Double.parseDouble(vals[i]);
            }
        }
        return kb / 1024.0;
    }

    @Override
    public void close() {
        process.destroy();
        try {
            if (!process.waitFor(10, TimeUnit.SECONDS)) {
                process.destroyForcibly().waitFor(5, TimeUnit.SECONDS);
            }
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        } finally {
            LIVE.remove(process);
        }
    }

    static int freePort() {
        for (int i = 0; i < 50; i++) {
            try (ServerSocket s = new ServerSocket(0, 1, InetAddress.getByName("127.0.0.1"))) {
                int p = s.getLocalPort();
                if (p != 6379 && p != 16379) {
                    return p;
                }
            } catch (IOException ignored) {
                // try another
            }
        }
        throw new IllegalStateException("no free port");
    }

    static void sleep(long ms) {
        try {
            Thread.sleep(ms);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IllegalStateException(e);
        }
    }
}
