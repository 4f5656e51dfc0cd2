package dev.hedgerow.function.gateway;

import com.fasterxml.jackson.databind.JsonNode;
import dev.hedgerow.sim.ModelScript;
import dev.hedgerow.sim.SimConfig;
import dev.hedgerow.sim.SimServer;
import dev.hedgerow.state.MemoryStateStore;
import dev.hedgerow.testsupport.GatewayHarness;
import dev.hedgerow.time.Ticker;
import io.restassured.response.Response;
import io.vertx.core.Vertx;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

import java.util.Map;
import java.util.function.Function;

import static dev.hedgerow.function.gateway.GroupKit.chat;
import static dev.hedgerow.function.gateway.GroupKit.trail;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * The upstream client's connect-time peer check, through the gateway's HTTP API: a provider whose host name
 * resolves to a refused address gets nothing sent, and the client gets the usual exhausted-routes envelope with the
 * refusal in the attempt trail. No test host resolves a name to a cloud metadata address, so the rule here refuses
 * loopback and the provider is addressed as {@code localhost}; production's rule is
 * {@code ProviderUrls.metadataReason}, which every other gateway test runs with.
 */
class PeerAddressBlockTest {
    Vertx vertx;
    GatewayHarness gw;

    @AfterEach
    void stop() {
        if (gw != null) {
            gw.close();
        }
        if (vertx != null) {
            vertx.close().toCompletionStage().toCompletableFuture().join();
        }
    }

    private SimServer startGateway(Function<String, String> rule) {
        vertx = Vertx.vertx();
        SimServer sim = SimServer.startBlocking(vertx, SimConfig.of(7).withModel("m",
                ModelScript.defaults().withLength(4)));
        String yaml = """
                orgs:
                  - id: acme
                    keys: [{ name: app, key: "k-acme" }]
                    providers:
                      - { id: named, base_url: "http://localhost:%d/v1", api_key: "sk-1" }
                    routes:
                      - { alias: solo, provider: named, model: m }
                """.formatted(sim.port());
        gw = GatewayHarness.start(vertx, yaml, Map.of("named", sim), new MemoryStateStore(Ticker.system()), rule);
        return sim;
    }

    @Test
    void aProviderNameResolvingToARefusedAddressGetsNothingAndTheClientAClearError() {
        SimServer sim = startGateway(ip -> ip.equals("127.0.0.1") ? "a refused address" : null);
        Response r = chat(gw, "solo", "hello");
        assertEquals(502, r.statusCode(), r.asString());
        assertEquals("upstream_error", r.jsonPath().getString("error.code"), r.asString());
        JsonNode attempt = trail(r).get(0);
        assertTrue(attempt.path("error").asText().startsWith("transport_connect"), attempt.toString());
        assertEquals(0, sim.stats("m").received(), "nothing was sent to the refused address");
    }

    @Test
    void theSameProviderIsServedWhenTheRuleAllowsItsAddress() {
        SimServer sim = startGateway(ip -> null);
        Response r = chat(gw, "solo", "hello");
        assertEquals(200, r.statusCode(), r.asString());
        assertEquals(1, sim.stats("m").received());
    }
}
