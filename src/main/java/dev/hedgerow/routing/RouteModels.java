package dev.hedgerow.routing;

import dev.hedgerow.state.RouteSnapshot;

/**
 * Reads the learned per-route models out of a snapshot's blobs: TTFT by prompt size, decode speed, headroom.
 * Stateless and thread-safe.
 */
public interface RouteModels {

    TtftEstimate ttft(RouteSnapshot state, RequestFacts facts);

    /** Measured decode tokens per second (0 when unknown). */
    double decodeSpeed(RouteSnapshot state);

    /** False when the route's operator reports no real headroom right now (queue full, memory pressure high). */
    boolean hasHeadroom(RouteSnapshot state);
}
