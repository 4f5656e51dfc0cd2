package dev.hedgerow.function;

/**
 * Decides when this process's JIT has finished warming up on real traffic, so that its compiler threads can be moved
 * to {@code SCHED_IDLE} ({@link JitPriority}) without starving the warm-up itself.
 *
 * <p>Why wait: an idle-policy compiler only runs when a CPU has nothing else to do. Lowered at startup, the overhead
 * benchmark's gateways still had ~700 compile tasks queued 145 s after start and spent twice the CPU per request
 * (interpreted and tier-3 code); lowered once the hot paths were compiled, every measured round's p99 improved.
 *
 * <p>When: the gateway calls {@link #settled} on a fixed period with the number of requests it has finished and the
 * JVM's total compile time ({@code CompilationMXBean}). It answers true once, at the first pass where at least
 * {@code minRequests} requests have been served and compile time grew by less than {@code quietCompileMillis} since
 * the previous pass: traffic has exercised the request path and the JIT has little left to do. Not thread-safe:
 * one caller, one pass at a time.
 */
final class JitWarmup {
    private final long minRequests;
    private final long quietCompileMillis;
    private long lastCompileMillis = -1;
    private boolean settled;

    JitWarmup(long minRequests, long quietCompileMillis) {
        if (minRequests < 0 || quietCompileMillis <= 0) {
            throw new IllegalArgumentException("minRequests >= 0 and quietCompileMillis > 0 required");
        }
        this.minRequests = minRequests;
        this.quietCompileMillis = quietCompileMillis;
    }

    /** One periodic pass: true exactly once, at the first pass that finds the JIT settled (see the class comment). */
    boolean settled(long requests, long compileMillis) {
        if (settled) {
            return false;
        }
        long grew = lastCompileMillis < 0 ? Long.MAX_VALUE : compileMillis - lastCompileMillis;
        lastCompileMillis = compileMillis;
        settled = requests >= minRequests && grew < quietCompileMillis;
        return settled;
    }

    /** Whether a pass has already answered true. */
    boolean done() {
        return settled;
    }
}
