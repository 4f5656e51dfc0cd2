package dev.hedgerow.routing;

import dev.hedgerow.catalog.GroupSettings;
import dev.hedgerow.state.RouteSnapshot;

import java.util.Optional;

/**
 * Reads the learned per-route models out of a snapshot's blobs: TTFT by prompt size, decode speed, headroom,
 * standing against the SLO targets. Stateless and thread-safe.
 */
public interface RouteModels {

    /**
     * The route's first visible token for the request's prompt size; with {@code thinks}, its learned thinking on top
     * (the request asks for reasoning, or the route's model reasons unasked: {@link RequestFacts#thinksOn}).
     */
    TtftEstimate ttft(RouteSnapshot state, RequestFacts facts, boolean thinks);

    /** {@link #ttft(RouteSnapshot, RequestFacts, boolean)} with thinking when the request asks for reasoning. */
    default TtftEstimate ttft(RouteSnapshot state, RequestFacts facts) {
        return ttft(state, facts, facts.reasoning());
    }

    /** Measured decode tokens per second (0 when unknown). */
    double decodeSpeed(RouteSnapshot state);

    /** False when the route's operator reports no real headroom right now (queue full, memory pressure high). */
    boolean hasHeadroom(RouteSnapshot state);

    /** The route's current capacity report, if a fresh one exists. */
    Optional<CapacityReport> capacity(RouteSnapshot state);

    /** The route's standing against the group's speed targets. */
    SloTracker.Status sloStatus(RouteSnapshot state, GroupSettings.Slo slo);

    /**
     * Whether the route currently meets the SLO targets: not {@link SloTracker.Status#BELOW}. A route not yet
     * measured counts as meeting them (exploration measures it); a route below them returns once its tracker has
     * seen enough good samples in a row (hysteresis), or when its verdict expires unrefreshed.
     */
    default boolean meetsSlo(RouteSnapshot state, GroupSettings.Slo slo) {
        return sloStatus(state, slo) != SloTracker.Status.BELOW;
    }

    /**
     * The route's judged accuracy ({@code llm_accuracy}): the decayed mean of its judge scores and their count;
     * unmeasured when it was never scored.
     */
    default Ewma accuracyScores(RouteSnapshot state) {
        return Ewma.decode(state.blob(LearnedModels.ACCURACY).orElse(null), LearnedModels.ACCURACY_ALPHA);
    }
}
