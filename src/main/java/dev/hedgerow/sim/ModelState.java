package dev.hedgerow.sim;

import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Collection;
import java.util.Deque;
import java.util.List;
import java.util.SplittableRandom;
import java.util.random.RandomGenerator;

/** Mutable state of one scripted model: script, seeded random source, one-shot fault queue, counters. Thread-safe. */
final class ModelState {

    static final int RECENT = 20;
    private static final double ALPHA = 0.2;

    final String name;
    private ModelScript script;
    private RandomGenerator random;
    private final Deque<Fault> queued = new ArrayDeque<>();
    private final Deque<SimStats.RecordedRequest> recent = new ArrayDeque<>();
    private long received, completed, cancelled, dropped, rejected, faulted;
    private int running, waiting;
    private double ttftMs, tokensPerSecond;

    ModelState(String name, ModelScript script) {
        this.name = name;
        replace(script);
    }

    synchronized void replace(ModelScript s) {
        script = s;
        random = new SplittableRandom(s.seed());
    }

    synchronized ModelScript script() {
        return script;
    }

    synchronized int enqueue(Collection<Fault> faults) {
        queued.addAll(faults);
        return queued.size();
    }

    synchronized void clearFaults() {
        queued.clear();
    }

    synchronized int queuedFaults() {
        return queued.size();
    }

    /** The next queued one-shot fault, else the first probabilistic fault that rolls true, else null. */
    synchronized Fault drawFault() {
        Fault f = queued.poll();
        if (f == null) {
            for (ModelScript.FaultChance c : script.faults()) {
                if (random.nextDouble() < c.probability()) {
                    f = c.fault();
                    break;
                }
            }
        }
        if (f != null) {
            faulted++;
        }
        return f;
    }

    /**
     * Time to first token for a prompt, drawn from the script; always draws twice so the sequence is stable. A
     * slowed answer's factor reuses the tail draw (given {@code tail < p}, {@code tail / p} is uniform on [0, 1)),
     * so a step and a Pareto tail with the same seed and odds slow the same requests.
     */
    synchronized long drawTtftMs(int promptTokens) {
        ModelScript.Latency l = script.latency();
        double u = random.nextDouble();
        double tail = random.nextDouble();
        double ms = l.ttftBaseMs() + l.ttftMsPer1kPromptTokens() * promptTokens / 1000.0;
        ms *= 1 + l.jitter() * (2 * u - 1);
        if (tail < l.heavyTailProbability()) {
            ms *= l.slowdown(tail / l.heavyTailProbability());
        }
        return Math.max(0, Math.round(ms));
    }

    synchronized void received(SimStats.RecordedRequest r) {
        received++;
        recent.addLast(r);
        while (recent.size() > RECENT) {
            recent.removeFirst();
        }
    }

    synchronized void rejected() {
        rejected++;
    }

    synchronized void waiting(int delta) {
        waiting += delta;
    }

    synchronized void running(int delta) {
        running += delta;
    }

    synchronized void ended(Exchange.End end) {
        switch (end) {
            case COMPLETED -> completed++;
            case CANCELLED -> cancelled++;
            case DROPPED -> dropped++;
        }
    }

    synchronized void measured(double ttft, double tps) {
        ttftMs = ttftMs == 0 ? ttft : ttftMs + ALPHA * (ttft - ttftMs);
        if (tps > 0) {
            tokensPerSecond = tokensPerSecond == 0 ? tps : tokensPerSecond + ALPHA * (tps - tokensPerSecond);
        }
    }

    synchronized int running() {
        return running;
    }

    synchronized int waitingCount() {
        return waiting;
    }

    synchronized SimStats.Speed speed() {
        return new SimStats.Speed(ttftMs, tokensPerSecond);
    }

    synchronized void resetStats() {
        received = completed = cancelled = dropped = rejected = faulted = 0;
        recent.clear();
        ttftMs = tokensPerSecond = 0;
    }

    synchronized SimStats snapshot() {
        return new SimStats(received, completed, cancelled, dropped, rejected, faulted, running, waiting,
                new SimStats.Speed(ttftMs, tokensPerSecond), List.copyOf(new ArrayList<>(recent)));
    }
}
