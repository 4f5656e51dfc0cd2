package dev.hedgerow.sim;

import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

/**
 * The named gates streams wait at ({@link Fault.Gate}): a latch per name, closed until opened, then open for good
 * (until {@link #clear}). Thread-safe (one lock): tests open gates from their own thread while exchanges arrive on
 * event loops; a waiter's callback runs on the thread that opens the gate and must hop to its own context.
 */
public final class Gates {

    /**
     * What a gate saw: how many streams wait at it now, how many went on past it, and whether it was opened.
     *
     * @param passed streams that went on, opened or timed out ({@code timedOut} of them by their own limit)
     */
    public record State(int waiting, int passed, int timedOut, boolean opened) {
    }

    private static final class Gate {
        final List<Runnable> waiters = new ArrayList<>();
        int passed;
        int timedOut;
        boolean opened;
    }

    private final Map<String, Gate> gates = new HashMap<>();

    /**
     * A stream reached the gate: true if it is open (the stream goes on now, counted as passed), else
     * {@code onOpen} is kept and runs once when the gate is opened.
     */
    synchronized boolean arrive(String name, Runnable onOpen) {
        Gate g = gates.computeIfAbsent(name, k -> new Gate());
        if (g.opened) {
            g.passed++;
            return true;
        }
        g.waiters.add(onOpen);
        return false;
    }

    /**
     * The waiting stream {@code onOpen} stopped waiting without the gate opening: its own limit passed
     * ({@code timedOut}: it goes on, counted as passed) or its caller hung up. False if it no longer waited.
     */
    synchronized boolean leave(String name, Runnable onOpen, boolean timedOut) {
        Gate g = gates.get(name);
        if (g == null || !g.waiters.remove(onOpen)) {
            return false;
        }
        if (timedOut) {
            g.passed++;
            g.timedOut++;
        }
        return true;
    }

    /** Opens the gate: every stream waiting at it goes on, and every one that comes later passes at once. */
    void open(String name) {
        List<Runnable> go;
        synchronized (this) {
            Gate g = gates.computeIfAbsent(name, k -> new Gate());
            g.opened = true;
            g.passed += g.waiters.size();
            go = new ArrayList<>(g.waiters);
            g.waiters.clear();
        }
        go.forEach(Runnable::run);
    }

    synchronized State state(String name) {
        Gate g = gates.get(name);
        return g == null ? new State(0, 0, 0, false) : new State(g.waiters.size(), g.passed, g.timedOut, g.opened);
    }

    /** Forgets every gate that nobody waits at (one with waiters stays, so they are not stranded). */
    synchronized void clear() {
        gates.values().removeIf(g -> g.waiters.isEmpty());
    }
}
