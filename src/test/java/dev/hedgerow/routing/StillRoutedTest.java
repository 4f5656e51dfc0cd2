package dev.hedgerow.routing;

import dev.hedgerow.catalog.Catalog;
import dev.hedgerow.catalog.CatalogLoader;
import dev.hedgerow.catalog.Org;
import dev.hedgerow.catalog.Route;
import org.junit.jupiter.api.Test;

import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.function.UnaryOperator;

import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Whether a route a request planned on is still one the catalog lets it take (asked before each hedge, failover and
 * resume; hunt28): each operator edit that takes it out of the request's way, and those that do not.
 */
class StillRoutedTest {
    static final String YAML = """
            orgs:
              - id: acme
                keys: [{ name: app, key: "k-acme" }]
                providers:
                  - { id: p, base_url: "http://127.0.0.1:1/v1" }
                  - { id: q, base_url: "http://127.0.0.1:2/v1" }
                routes:
                  - { id: r1, alias: chat, provider: p, model: m1 }
                  - { id: r2, alias: chat, provider: p, model: m2 }
            """;

    final Org planned = new CatalogLoader(k -> null).parse(YAML).orgs().get(0);
    final Route r1 = planned.route("r1").orElseThrow();

    /** The catalog after {@code edit} of route {@code id} (null: removed). */
    Catalog after(String id, UnaryOperator<Route> edit) {
        List<Route> routes = new ArrayList<>();
        for (Route r : planned.routes()) {
            Route e = r.id().equals(id) ? edit.apply(r) : r;
            if (e != null) {
                routes.add(e);
            }
        }
        return new Catalog(List.of(planned.withRoutesAndGroups(routes, planned.groups())), Map.of(), Map.of());
    }

    static Route tagged(Route r, String tag) {
        List<String> tags = new ArrayList<>(r.tags());
        tags.add(tag);
        return new Route(r.id(), r.alias(), r.provider(), r.model(), r.weight(), r.priority(), r.contextWindow(),
                r.capabilities(), r.parameters(), r.price(), r.description(), tags, r.embeddings());
    }

    static Route moved(Route r, String alias, String provider, String model) {
        return new Route(r.id(), alias, provider, model, r.weight(), r.priority(), r.contextWindow(),
                r.capabilities(), r.parameters(), r.price(), r.description(), r.tags(), r.embeddings());
    }

    @Test
    void aRouteTheCatalogStillHoldsAsPlannedIsStillRouted() {
        assertTrue(Router.stillRouted(after("none", r -> r), planned, r1));
        assertTrue(Router.stillRouted(after("r1", r -> tagged(r, Route.PINNED)), planned, r1), "pinned itself");
        assertTrue(Router.stillRouted(after("r2", r -> tagged(r, Route.DRAINED)), planned, r1), "another drained");
    }

    @Test
    void anEditThatTakesTheRouteOutOfTheRequestsWayIsSeen() {
        assertFalse(Router.stillRouted(after("r1", r -> tagged(r, Route.DRAINED)), planned, r1), "drained");
        assertFalse(Router.stillRouted(after("r2", r -> tagged(r, Route.PINNED)), planned, r1), "another pinned");
        assertFalse(Router.stillRouted(after("r1", r -> moved(r, "other", "p", "m1")), planned, r1), "moved");
        assertFalse(Router.stillRouted(after("r1", r -> moved(r, "chat", "q", "m1")), planned, r1), "provider");
        assertFalse(Router.stillRouted(after("r1", r -> moved(r, "chat", "p", "m9")), planned, r1), "model");
        assertFalse(Router.stillRouted(after("r1", r -> null), planned, r1), "removed");
        assertFalse(Router.stillRouted(Catalog.empty(), planned, r1), "its org removed");
    }
}
