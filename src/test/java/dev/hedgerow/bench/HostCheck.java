package dev.hedgerow.bench;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CountDownLatch;

/**
 * How much of the CPUs this machine gives a busy process, measured with nothing of the benchmark running: one
 * spinning thread per CPU for a couple of seconds, each reading how long the kernel kept it waiting on a run queue
 * ({@code /proc/thread-self/schedstat}) and the longest gap between two of its clock reads.
 *
 * <p>Why: {@code /proc/stat}'s steal column reads 0 on some of these VMs while the gateway's and the direct path's
 * p99 still move by milliseconds from run to run. Session 10's host kept each spinning thread waiting 25–140 ms per
 * second behind kernel work (a per-CPU {@code mm_percpu_wq} worker at normal priority, DAMON reclaim), in stretches
 * of up to 8–20 ms; session 9's host, whose runs met the 1 ms target, made p99s 7x lower on the direct path alone.
 * The figure goes into every section's header so a reader can tell a slow host from a slow change.
 */
record HostCheck(double waitMsPerCpuSecond, double longestGapMs) {

    /** Spins one thread per CPU for {@code millis} and reports their run-queue wait; null when not measurable. */
    static HostCheck measure(long millis) {
        int cpus = Runtime.getRuntime().availableProcessors();
        List<long[]> results = new ArrayList<>();
        List<Thread> threads = new ArrayList<>();
        CountDownLatch start = new CountDownLatch(1);
        for (int i = 0; i < cpus; i++) {
            long[] result = new long[2]; // run-queue wait ns, longest gap ns; -1: unknown
            results.add(result);
            Thread t = new Thread(() -> spin(start, millis, result), "host-check-" + i);
            threads.add(t);
            t.start();
        }
        start.countDown();
        long wait = 0;
        long gap = 0;
        for (int i = 0; i < cpus; i++) {
            try {
                threads.get(i).join();
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                return null;
            }
            long[] r = results.get(i);
            if (r[0] < 0) {
                return null;
            }
            wait += r[0];
            gap = Math.max(gap, r[1]);
        }
        return new HostCheck(wait / 1e6 / cpus / (millis / 1000.0), gap / 1e6);
    }

    private static void spin(CountDownLatch start, long millis, long[] result) {
        try {
            start.await();
        } catch (InterruptedException e) {
            result[0] = -1;
            return;
        }
        long before = runQueueWaitNanos();
        long now = System.nanoTime();
        long end = now + millis * 1_000_000L;
        long longest = 0;
        while (now < end) {
            long next = System.nanoTime();
            longest = Math.max(longest, next - now);
            now = next;
        }
        long after = runQueueWaitNanos();
        result[0] = before < 0 || after < 0 ? -1 : after - before;
        result[1] = longest;
    }

    /** The calling thread's time spent runnable but not running, in ns (second field of schedstat); -1 unknown. */
    private static long runQueueWaitNanos() {
        try {
            String[] f = Files.readString(Path.of("/proc/thread-self/schedstat")).trim().split("\\s+");
            return Long.parseLong(f[1]);
        } catch (IOException | RuntimeException e) {
            return -1;
        }
    }

    static String describe(HostCheck before, HostCheck after) {
        if (before == null || after == null) {
            return "host check: not measurable here (no /proc/thread-self/schedstat)";
        }
        return BenchEnv.f("host check (one thread per CPU spinning 2 s, before and after): kept waiting %.0f and %.0f"
                        + " ms per CPU-second, longest stall %.1f and %.1f ms", before.waitMsPerCpuSecond,
                after.waitMsPerCpuSecond, before.longestGapMs, after.longestGapMs);
    }
}
