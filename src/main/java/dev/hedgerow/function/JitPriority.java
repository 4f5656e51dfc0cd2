package dev.hedgerow.function;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.DirectoryStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.function.Predicate;

/**
 * Runs this JVM's JIT compiler threads under Linux's {@code SCHED_IDLE} policy, so that a request thread waking up
 * on a CPU where a compile is running preempts it at once.
 *
 * <p>Why: on a small machine a C1 or C2 compile takes a CPU for 2–5 ms at a time, and the scheduler lets it finish
 * its slice before a woken event loop runs. {@code perf sched timehist} of the gateway at 500 req/s on 2 cores showed
 * exactly that behind the latency tail: an event loop runnable for 2–4 ms behind a compiler thread (nice 19 did not
 * help: the scheduler still lets the current task run its slice). An idle-policy thread is preempted by any
 * normal one. The JIT still compiles whenever a CPU has nothing else to run, and an event loop that waits on the
 * network leaves plenty of such time; under sustained saturation compiles get only a small share of the CPU.
 *
 * <p>How: each compiler thread (found by name in {@code /proc/self/task}) not yet at that policy gets
 * {@code chrt --idle -p 0 <tid>}. Lowering one's own threads needs no privilege. Without {@code /proc} or
 * {@code chrt} (another OS, a minimal image) nothing changes. HotSpot may start compiler threads later under load,
 * so the gateway runs this again from time to time; threads already at the policy are skipped.
 */
public final class JitPriority {
    /** {@code SCHED_IDLE}, as field 41 ({@code policy}) of {@code /proc/<pid>/task/<tid>/stat} shows it. */
    static final int SCHED_IDLE = 5;

    private final Path tasks;
    private final Predicate<String> compilerThread;

    /** This JVM's compiler threads (HotSpot's C1 and C2, Graal's JVMCI). */
    public static JitPriority forThisJvm() {
        return new JitPriority(Path.of("/proc/self/task"), JitPriority::isCompilerThread);
    }

    /** Another process's compiler threads (to report on them; only a process's own threads can be moved). */
    public static JitPriority forProcess(long pid) {
        return new JitPriority(Path.of("/proc", Long.toString(pid), "task"), JitPriority::isCompilerThread);
    }

    JitPriority(Path tasks, Predicate<String> compilerThread) {
        this.tasks = tasks;
        this.compilerThread = compilerThread;
    }

    /** Thread names as Linux keeps them (15 characters): "C1 CompilerThre", "C2 CompilerThre", "JVMCI CompilerT". */
    static boolean isCompilerThread(String comm) {
        return comm.startsWith("C1 Compiler") || comm.startsWith("C2 Compiler") || comm.startsWith("JVMCI Compiler");
    }

    /** What one pass did. */
    public record Outcome(int lowered, int alreadyIdle, List<String> failures, boolean supported) {
        static Outcome unsupported(String why) {
            return new Outcome(0, 0, List.of(why), false);
        }
    }

    /** Moves every compiler thread not yet at {@code SCHED_IDLE} to it. Blocks (runs {@code chrt}): not on an event loop. */
    public Outcome apply() {
        if (!Files.isDirectory(tasks)) {
            return Outcome.unsupported("no " + tasks + " (not Linux)");
        }
        int lowered = 0;
        int idle = 0;
        List<String> failures = new ArrayList<>();
        for (long tid : compilerThreads()) {
            int policy = policy(tid);
            if (policy == SCHED_IDLE) {
                idle++;
                continue;
            }
            if (policy < 0) {
                continue; // the thread ended meanwhile
            }
            try {
                int exit = chrt("--idle", tid);
                if (policy(tid) == SCHED_IDLE) {
                    lowered++;
                } else {
                    failures.add(exit < 0 ? "chrt did not finish for thread " + tid
                            : "chrt exited " + exit + " for thread " + tid);
                }
            } catch (IOException e) {
                return Outcome.unsupported("chrt (util-linux) is not available: " + e.getMessage());
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                failures.add("interrupted");
                break;
            }
        }
        return new Outcome(lowered, idle, List.copyOf(failures), true);
    }

    /** How many of the compiler threads run at {@code SCHED_IDLE}, as "k of n". */
    public String idleShare() {
        List<Long> tids = compilerThreads();
        return tids.stream().filter(t -> policy(t) == SCHED_IDLE).count() + " of " + tids.size();
    }

    /** Thread ids whose name marks a compiler thread. */
    List<Long> compilerThreads() {
        List<Long> out = new ArrayList<>();
        try (DirectoryStream<Path> dirs = Files.newDirectoryStream(tasks)) {
            for (Path dir : dirs) {
                String comm = read(dir.resolve("comm"));
                if (comm != null && compilerThread.test(comm.strip())) {
                    out.add(Long.parseLong(dir.getFileName().toString()));
                }
            }
        } catch (IOException | NumberFormatException e) {
            return out;
        }
        return out;
    }

    /** The thread's scheduling policy (see {@link #policyIn}). */
    int policy(long tid) {
        return policyIn(tasks.resolve(Long.toString(tid)).resolve("stat"));
    }

    /**
     * The scheduling policy a {@code /proc/<pid>[/task/<tid>]/stat} file shows (field 41: 0 normal, 3 batch, 5 idle
     * …), or -1 when it cannot be read. Public for the benchmarks, which quiet the VM's kernel threads the same way.
     */
    public static int policyIn(Path statFile) {
        String stat = read(statFile);
        if (stat == null) {
            return -1;
        }
        // the name (field 2) is in parentheses and may hold spaces: count fields after its closing one
        String[] fields = stat.substring(stat.lastIndexOf(')') + 2).trim().split(" ");
        int index = 41 - 3;
        return fields.length > index ? Integer.parseInt(fields[index]) : -1;
    }

    /**
     * Runs {@code chrt <policyFlag> -p 0 <tid>} ("--idle", "--other" …): its exit status, or -1 when it did not finish
     * within 5 s. Blocks. Public for the benchmarks.
     *
     * @throws IOException when {@code chrt} cannot be started (util-linux missing)
     */
    public static int chrt(String policyFlag, long tid) throws IOException, InterruptedException {
        Process p = new ProcessBuilder("chrt", policyFlag, "-p", "0", Long.toString(tid))
                .redirectErrorStream(true).redirectOutput(ProcessBuilder.Redirect.DISCARD).start();
        if (!p.waitFor(5, TimeUnit.SECONDS)) {
            p.destroyForcibly();
            return -1;
        }
        return p.exitValue();
    }

    private static String read(Path file) {
        try {
            return Files.readString(file, StandardCharsets.US_ASCII);
        } catch (IOException e) {
            return null;
        }
    }
}
