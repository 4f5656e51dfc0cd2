package dev.hedgerow.testsupport;

import io.smallrye.mutiny.Uni;

import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.function.IntPredicate;

/** Runs one check from several threads at once, for state that threads share without locks. */
public final class AtOnce {
    private AtOnce() {
    }

    /**
     * Outside Quarkus, Mutiny's first decorated Uni (an emitter, a deferred) looks up SmallRye's context manager,
     * which is registered lazily and unguarded: several threads doing it first at once fail with "ContextManagerProvider
     * already set". One Uni made here first, before any thread starts.
     */
    public static void settleMutiny() {
        Uni.createFrom().emitter(e -> e.complete(null)).await().indefinitely();
    }

    /**
     * Runs {@code check(i)} for i in [0, perThread) on each of {@code threads} threads at once (thread t passes
     * {@code t * perThread + i}, so each thread's inputs are its own) and returns how many calls answered false.
     */
    public static int failures(int threads, int perThread, IntPredicate check) throws Exception {
        settleMutiny();
        ExecutorService pool = Executors.newFixedThreadPool(threads);
        try {
            List<Future<Integer>> counts = new ArrayList<>();
            for (int t = 0; t < threads; t++) {
                int base = t * perThread;
                counts.add(pool.submit(() -> {
                    int bad = 0;
                    for (int i = 0; i < perThread; i++) {
                        if (!check.test(base + i)) {
                            bad++;
                        }
                    }
                    return bad;
                }));
            }
            int bad = 0;
            for (Future<Integer> f : counts) {
                bad += f.get(60, TimeUnit.SECONDS);
            }
            return bad;
        } finally {
            pool.shutdownNow();
        }
    }
}
