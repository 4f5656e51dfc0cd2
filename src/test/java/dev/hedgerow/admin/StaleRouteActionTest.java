package dev.hedgerow.admin;

import dev.hedgerow.api.RequestException;
import dev.hedgerow.catalog.Org;
import dev.hedgerow.sim.ModelScript;
import dev.hedgerow.sim.SimConfig;
import dev.hedgerow.testsupport.GatewayHarness;
import org.junit.jupiter.api.Test;

import java.time.Duration;
import java.util.Map;
import java.util.concurrent.CompletionException;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;

/**
 * A pin or drain asked of a route as this instance knew it, after another admin moved the route to another alias (on
 * this instance or another, within a catalog poll): it answered 200 and audited the action, yet nothing was pinned or
 * drained, and a pin stripped the old group's pin. It is now refused with 409 route_moved, and nothing changes.
 * (found by review3)
 */
class StaleRouteActionTest {
    static final String YAML = """
            orgs:
              - id: acme
                keys: [{ name: app, key: "k-acme" }]
                admin_keys: [{ name: ops, key: "a-acme" }]
                providers:
                  - { id: alpha, base_url: "${SIM_ALPHA_URL}" }
                routes:
                  - { id: r1, alias: chat, provider: alpha, model: m }
                  - { id: r2, alias: chat, provider: alpha, model: m }
                  - { id: r3, alias: other, provider: alpha, model: m }
                  - { id: r4, alias: other, provider: alpha, model: m }
            """;

    static RequestException refusal(Runnable action) {
        CompletionException e = assertThrows(CompletionException.class, action::run);
        return (RequestException) e.getCause();
    }

    @Test
    void aPinOrDrainOfARouteMovedMeanwhileIsRefusedAndChangesNothing() {
        try (GatewayHarness gw = GatewayHarness.start(YAML, Map.of("alpha", SimConfig.of(1).withModel("m",
                ModelScript.defaults().withLength(4))))) {
            AdminService admin = new AdminService(gw.core());
            Org stale = gw.core().catalog().current().org("acme").orElseThrow();
            admin.pin(stale, "r2", "ops").await().atMost(Duration.ofSeconds(5));
            admin.moveRoute(stale, "r1", "other", false, null, null, null, "ops").await().atMost(Duration.ofSeconds(5));

            RequestException pin = refusal(() -> admin.pin(stale, "r1", "ops").subscribeAsCompletionStage().join());
            assertEquals(409, pin.error().status());
            assertEquals("route_moved", pin.error().code());
            RequestException drain = refusal(() -> admin.drain(stale, "r1", true, "ops").subscribeAsCompletionStage()
                    .join());
            assertEquals("route_moved", drain.error().code());

            Org now = gw.core().catalog().current().org("acme").orElseThrow();
            assertEquals("other", now.route("r1").orElseThrow().alias());
            assertFalse(now.route("r1").orElseThrow().pinned());
            assertFalse(now.route("r1").orElseThrow().drained());
            assertEquals(true, now.route("r2").orElseThrow().pinned(), "chat's pin is kept");
        }
    }
}
