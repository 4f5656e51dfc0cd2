package dev.hedgerow.dispatch;

import dev.hedgerow.catalog.Strategy;
import dev.hedgerow.routing.Candidate;

import java.util.HashSet;
import java.util.List;
import java.util.Set;
import java.util.function.Predicate;

/**
 * Which of a dispatch's ranked candidates comes next: the routes tried so far, the context size a route has
 * refused (no route with a window that small is tried again), and the order for a failover, a resume and a hedge.
 * Guarded by its dispatch.
 */
final class RouteChoice {
    private final List<Candidate> candidates;
    private final Strategy strategy;
    /** Whether a candidate is still one the catalog lets the request take (not drained, moved or removed since). */
    private final Predicate<Candidate> stillRouted;
    private final Set<String> tried = new HashSet<>();
    private int contextLimit = -1;
    /** Routes the shared state held out when last read (at a resume), whatever the plan saw. */
    private Set<String> heldOut = Set.of();

    RouteChoice(List<Candidate> candidates, Strategy strategy) {
        this(candidates, strategy, c -> true);
    }

    /**
     * {@code stillRouted} is asked at each choice: a stream's resume minutes after an operator drained, suspended by
     * edit, moved or removed a route went to it all the same, from the list made when the request began (found by
     * hunt28).
     */
    RouteChoice(List<Candidate> candidates, Strategy strategy, Predicate<Candidate> stillRouted) {
        this.candidates = candidates;
        this.strategy = strategy;
        this.stillRouted = stillRouted;
    }

    /** The route is being tried. */
    void tried(Candidate c) {
        tried.add(c.id());
    }

    /** The route may be tried again (a retry on the same route). */
    void untried(Candidate c) {
        tried.remove(c.id());
    }

    /** The ids of the routes tried so far (live: for Kong's priority rules). */
    Set<String> triedIds() {
        return tried;
    }

    /** A route refused the prompt as too long: only routes with a larger context window are tried from now on. */
    void contextExceeded(int contextWindow) {
        contextLimit = Math.max(contextLimit, contextWindow);
    }

    /**
     * The routes the state read now holds out (an operator's suspension, a failed verification, a cooldown or a
     * provider's wait given since the plan): no choice from now on takes them.
     */
    void heldOut(Set<String> ids) {
        heldOut = Set.copyOf(ids);
    }

    /** The next untried route, in ranked order, or null. */
    Candidate next() {
        return next(0);
    }

    /**
     * The first attempt's route: the best-ranked one, as planned moments ago. Not asked of the catalog: an edit that
     * landed between the plan and this start refused the request with a misleading "half-open probe in flight"
     * (the first full run's PartitionedEditTest); the plan was right when made, and later choices ask.
     */
    Candidate first() {
        for (Candidate c : candidates) {
            if (!tried.contains(c.id()) && fitsContext(c)) {
                return c;
            }
        }
        return null;
    }

    /** The next untried route whose declared context window takes {@code needed} tokens, in ranked order, or null. */
    private Candidate next(long needed) {
        for (Candidate c : candidates) {
            if (!tried.contains(c.id()) && fits(c, needed)) {
                return c;
            }
        }
        return null;
    }

    /**
     * Where a broken stream resumes: the next untried route; else a tried one other than {@code failed} that may take
     * the request again ({@code again}: as Kong's retries, one whose breaker this request's failures opened or that
     * asked it to wait is not), never one that refused the prompt as too long (a resume sends that prompt and the text
     * so far, longer still); else {@code failed} itself, the last resort, when {@code lastResort} allows it (it did
     * not ask the request to wait). A resume went back to a route that had answered this request with a 429 and a
     * 60 s Retry-After 150 ms before (found by hunt22). Each must declare a context window that takes the resume's
     * {@code needed} tokens (the prompt, the text so far, and what is left of {@code max_tokens}): a resume went to a
     * route of a 600-token window with an 808-token prefill (found by hunt27).
     */
    Candidate nextForResume(Candidate failed, long needed, Predicate<Candidate> again,
                            Predicate<Candidate> lastResort) {
        Candidate untried = next(needed);
        if (untried != null) {
            return untried;
        }
        for (Candidate c : candidates) {
            if ((failed == null || !c.id().equals(failed.id())) && fits(c, needed) && again.test(c)) {
                return c;
            }
        }
        return failed != null && fits(failed, needed) && lastResort.test(failed) ? failed : null;
    }

    /**
     * Kong's {@code retries} once every route was tried: the best-ranked route that may still take the request
     * again ({@code again}: its breaker is still closed), or null. Routes under the refused context size are
     * never retried.
     */
    Candidate retryTarget(Predicate<Candidate> again) {
        for (Candidate c : candidates) {
            if (fits(c) && again.test(c)) {
                return c;
            }
        }
        return null;
    }

    /**
     * Where a hedge for the racing attempt goes: the best-ranked untried route of the racing one's own kind (under
     * {@code priority}, its tier; under a strategy that shares by weight, a member with a share), and only when there
     * is none the next untried route in ranked order (a standby of its tier, then the next tier): a hedge escapes a
     * slow route, to the routes the operator prefers first. Under {@code priority} it went to the next tier first,
     * even beside an untried peer of the slow route's tier (found by hunt9).
     */
    Candidate hedgeTarget(Attempt racing) {
        Candidate slow = racing.cand;
        for (Candidate c : candidates) {
            if (!tried.contains(c.id()) && fits(c) && peer(c, slow)) {
                return c;
            }
        }
        return next();
    }

    /** Whether {@code c} is of {@code slow}'s kind: its priority tier, and not a standby where weights share. */
    private boolean peer(Candidate c, Candidate slow) {
        if (strategy == Strategy.PRIORITY && c.route().priority() != slow.route().priority()) {
            return false;
        }
        return !strategy.sharesByWeight() || c.route().weight() > 0;
    }

    /**
     * Whether the route's context window is larger than any a route refused the prompt at, the state last read does not
     * hold it out, and the catalog still lets the request take it.
     */
    private boolean fits(Candidate c) {
        return fitsContext(c) && !heldOut.contains(c.id()) && stillRouted.test(c);
    }

    /** Whether the route's context window is larger than any a route refused the prompt at. */
    private boolean fitsContext(Candidate c) {
        return contextLimit < 0 || c.route().contextWindow() > contextLimit;
    }

    /** {@link #fits(Candidate)}, and its declared window takes {@code needed} tokens. */
    private boolean fits(Candidate c, long needed) {
        return fits(c) && needed <= c.route().contextWindow();
    }
}
