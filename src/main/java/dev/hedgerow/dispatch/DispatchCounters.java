package dev.hedgerow.dispatch;

import java.util.concurrent.atomic.AtomicLong;

/**
 * Counts what dispatch did across requests: hedges fired and refused by the budget, upstream tokens wasted on
 * cancelled hedge losers, and mid-stream resumes. A plain observer, so the Micrometer binding can read these
 * counters later; tests read them directly. Thread-safe.
 */
public final class DispatchCounters implements DispatchObserver {
    private final AtomicLong hedgesFired = new AtomicLong();
    private final AtomicLong hedgesRefused = new AtomicLong();
    private final AtomicLong wastedTokens = new AtomicLong();
    private final AtomicLong resumes = new AtomicLong();

    @Override
    public void hedge(DispatchRequest request, boolean fired) {
        (fired ? hedgesFired : hedgesRefused).incrementAndGet();
    }

    @Override
    public void wastedTokens(long tokens) {
        wastedTokens.addAndGet(tokens);
    }

    @Override
    public void resumed(DispatchRequest request, String reason) {
        resumes.incrementAndGet();
    }

    public long hedgesFired() {
        return hedgesFired.get();
    }

    /** Hedges the window called for but the shared hedge budget refused. */
    public long hedgesRefused() {
        return hedgesRefused.get();
    }

    /** Upstream tokens (the losers' prompts and whatever they generated) spent on hedges that lost. */
    public long wastedTokens() {
        return wastedTokens.get();
    }

    public long resumes() {
        return resumes.get();
    }
}
