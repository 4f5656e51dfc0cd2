package dev.hedgerow.routing;

import dev.hedgerow.catalog.Provider;
import dev.hedgerow.catalog.Route;
import dev.hedgerow.state.RouteSnapshot;

/**
 * A route that passed every filter for one request, with the state it was judged on.
 *
 * @param key      the route's key in the shared store: {@code <org>/<routeId>} (route ids are unique per org only)
 * @param halfOpen the route is out of cooldown but still at its failure limit: it may serve only as the fleet's
 *                 single half-open probe (the dispatcher takes the probe slot first)
 * @param estimate the predicted first-token window for this request's prompt size
 */
public record Candidate(String key, Route route, Provider provider, RouteSnapshot state, boolean halfOpen, TtftEstimate estimate) {

    /** The store key; unique across orgs. */
    public String id() {
        return key;
    }
}
