package dev.hedgerow.bench;

import dev.hedgerow.function.JitPriority;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.DirectoryStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;

/**
 * Moves the kernel's DAMON threads ({@code kdamond.N}) to {@code SCHED_IDLE} while a benchmark runs and puts them
 * back afterwards (also from a shutdown hook, so Ctrl-C restores them).
 *
 * <p>Why: the build machines are VMs whose kernel runs DAMON-based proactive reclaim (one kdamond sampling physical
 * memory every 500 ms). Each pass holds a CPU for 2–3 ms at normal priority, and {@code perf sched timehist} showed
 * the load generator and the gateway runnable behind it on that CPU every ~510 ms: about ten requests per 5 s round
 * of 2 500, for the direct path and every gateway alike, which alone is a third of a p99. Under {@code SCHED_IDLE}
 * DAMON still runs whenever a CPU has nothing else to do (the CPUs are mostly idle at 500 req/s), so reclaim goes on.
 * Needs root (it is a kernel thread); without it, or with {@code BENCH_QUIET_KDAMOND=off}, nothing changes and the
 * section says so.
 */
final class QuietKernelThreads implements AutoCloseable {
    private static final int SCHED_OTHER = 0;
    private static final int SCHED_IDLE = 5;
    private final List<Long> moved = new ArrayList<>();
    private final String note;
    private final Thread hook = new Thread(this::restore, "bench-restore-kdamond");

    QuietKernelThreads() {
        if ("off".equalsIgnoreCase(System.getenv("BENCH_QUIET_KDAMOND"))) {
            note = "the VM's DAMON reclaim threads left at their priority (BENCH_QUIET_KDAMOND=off)";
            return;
        }
        List<Long> found = kdamonds();
        List<String> failed = new ArrayList<>();
        for (long pid : found) {
            if (policy(pid) != SCHED_OTHER) {
                continue; // someone else's setting: leave it, and do not "restore" it later
            }
            if (chrt(pid, "--idle") && policy(pid) == SCHED_IDLE) {
                moved.add(pid);
            } else {
                failed.add(Long.toString(pid));
            }
        }
        if (!moved.isEmpty()) {
            Runtime.getRuntime().addShutdownHook(hook);
        }
        note = found.isEmpty() ? "no DAMON kernel thread running"
                : failed.isEmpty() ? "the VM's DAMON reclaim thread (kdamond, a 2-3 ms pass every 500 ms) under "
                        + "SCHED_IDLE for the run, restored after"
                : "the VM's DAMON reclaim threads left at their priority (could not move " + failed + ")";
    }

    /** One line for a results section. */
    String note() {
        return note;
    }

    /** Thread ids of kernel threads named {@code kdamond.*}. */
    private static List<Long> kdamonds() {
        List<Long> out = new ArrayList<>();
        try (DirectoryStream<Path> procs = Files.newDirectoryStream(Path.of("/proc"), "[0-9]*")) {
            for (Path p : procs) {
                String comm = read(p.resolve("comm"));
                if (comm != null && comm.startsWith("kdamond")) {
                    out.add(Long.parseLong(p.getFileName().toString()));
                }
            }
        } catch (IOException | NumberFormatException e) {
            return out;
        }
        return out;
    }

    private static int policy(long pid) {
        return JitPriority.policyIn(Path.of("/proc", Long.toString(pid), "stat"));
    }

    private static boolean chrt(long pid, String policy) {
        try {
            return JitPriority.chrt(policy, pid) == 0;
        } catch (IOException e) {
            return false;
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            return false;
        }
    }

    private static String read(Path file) {
        try {
            return Files.readString(file, StandardCharsets.US_ASCII);
        } catch (IOException e) {
            return null;
        }
    }

    private synchronized void restore() {
        for (long pid : moved) {
            chrt(pid, "--other");
        }
        moved.clear();
    }

    @Override
    public void close() {
        restore();
        try {
            Runtime.getRuntime().removeShutdownHook(hook);
        } catch (IllegalStateException | IllegalArgumentException e) {
            // shutting down already (the hook runs or ran), or never registered
        }
    }
}
