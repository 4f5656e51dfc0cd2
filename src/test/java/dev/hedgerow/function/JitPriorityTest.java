package dev.hedgerow.function;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.condition.EnabledOnOs;
import org.junit.jupiter.api.condition.OS;

import java.nio.file.Path;
import java.util.List;
import java.util.concurrent.CountDownLatch;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * The JIT priority pass on this machine's real {@code /proc} and {@code chrt}. The JVM's own compiler threads are
 * only found, not moved (an idle-policy JIT would slow the rest of the suite); the move itself is made on a thread
 * of the test's own, picked by name the same way.
 */
@EnabledOnOs(OS.LINUX)
class JitPriorityTest {

    @Test
    void findsThisJvmsCompilerThreads() {
        List<Long> tids = JitPriority.forThisJvm().compilerThreads();
        assertFalse(tids.isEmpty(), "HotSpot runs C1/C2 compiler threads");
        assertTrue(JitPriority.isCompilerThread("C2 CompilerThre"));
        assertTrue(JitPriority.isCompilerThread("C1 CompilerThre"));
        assertTrue(JitPriority.isCompilerThread("JVMCI CompilerT"));
        assertFalse(JitPriority.isCompilerThread("vert.x-eventloo"));
        assertFalse(JitPriority.isCompilerThread("GC Thread#0"));
    }

    @Test
    void movesMatchingThreadsToIdlePolicyOnceAndLeavesOthers() throws Exception {
        CountDownLatch release = new CountDownLatch(1);
        Thread probe = parked("hr-jit-probe", release);
        Thread bystander = parked("hr-jit-other", release);
        try {
            JitPriority pass = new JitPriority(Path.of("/proc/self/task"), "hr-jit-probe"::equals);
            List<Long> found = pass.compilerThreads();
            assertEquals(1, found.size(), "the one thread with that name");
            long tid = found.get(0);
            assertEquals(0, pass.policy(tid), "starts under the normal policy");

            JitPriority.Outcome first = pass.apply();
            assertTrue(first.supported());
            assertEquals(1, first.lowered(), "moved: " + first);
            assertTrue(first.failures().isEmpty(), first.failures().toString());
            assertEquals(JitPriority.SCHED_IDLE, pass.policy(tid));

            JitPriority.Outcome second = pass.apply();
            assertEquals(0, second.lowered(), "nothing left to move");
            assertEquals(1, second.alreadyIdle());

            JitPriority others = new JitPriority(Path.of("/proc/self/task"), "hr-jit-other"::equals);
            assertEquals(0, others.policy(others.compilerThreads().get(0)), "a thread of another name is untouched");
        } finally {
            release.countDown();
            probe.join();
            bystander.join();
        }
    }

    /**
     * A running thread of that name, waiting until {@code release} opens. Returns once the thread runs: HotSpot sets
     * the native name ({@code /proc/self/task/<tid>/comm}) in the new thread before its {@code run()}, so a bare
     * {@code start()} could return while the name is still the JVM's default (seen on a loaded host).
     */
    private static Thread parked(String name, CountDownLatch release) throws InterruptedException {
        CountDownLatch running = new CountDownLatch(1);
        Thread t = new Thread(() -> {
            running.countDown();
            try {
                release.await();
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
        }, name);
        t.start();
        running.await();
        return t;
    }

    @Test
    void withoutProcNothingChanges() {
        JitPriority.Outcome o = new JitPriority(Path.of("/nonexistent/task"), n -> true).apply();
        assertFalse(o.supported());
        assertEquals(0, o.lowered());
    }
}
