package dev.hedgerow.function.gateway;

import dev.hedgerow.sim.ModelScript;
import dev.hedgerow.sim.SimConfig;
import dev.hedgerow.state.CachingStateStore;
import dev.hedgerow.testsupport.GatewayHarness;
import dev.hedgerow.testsupport.GatewayPair;
import dev.hedgerow.time.Ticker;
import org.junit.jupiter.api.Test;

import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.time.Duration;
import java.util.HashMap;
import java.util.Map;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Two gateway instances on one Redis, each on the production snapshot cache (which takes the group's rotation from
 * the shared cursor a block at a time), through the HTTP API: a 50/50 {@code weighted} group's requests sent to each in
 * turn. With blocks of one size (32) both instances were always at the same point of the rotation, and every pair of
 * requests went to the same member (found by hunt9: a fleet's concurrent load swung between members instead of being
 * spread). Now in step about half the time, and the members still share the load evenly.
 */
class FleetRotationTest {
    static final String YAML = """
            orgs:
              - id: acme
                keys: [{ name: app, key: "k-acme" }]
                providers:
                  - { id: alpha, base_url: "${SIM_ALPHA_URL}", api_key: "sk-alpha" }
                  - { id: beta, base_url: "${SIM_BETA_URL}", api_key: "sk-beta" }
                routes:
                  - { alias: duo, provider: alpha, model: m }
                  - { alias: duo, provider: beta, model: m }
                groups:
                  duo: { strategy: weighted, hedging: false }
            """;

    static final HttpClient http = HttpClient.newHttpClient();

    /** Two instances on a private Redis, each on its own production snapshot cache. */
    static GatewayPair fleet() {
        ModelScript fast = ModelScript.defaults().withLength(2).withLatency(ModelScript.Latency.of(0, 0));
        return GatewayPair.onPrivateRedis(YAML, Map.of(
                        "alpha", SimConfig.of(3).withApiKey("sk-alpha").withModel("m", fast),
                        "beta", SimConfig.of(3).withApiKey("sk-beta").withModel("m", fast)),
                store -> new CachingStateStore(store, Duration.ofMillis(50), Ticker.system()));
    }

    static String servedBy(GatewayHarness gw) throws Exception {
        HttpResponse<String> r = http.send(HttpRequest.newBuilder(URI.create(gw.baseUrl() + "/v1/chat/completions"))
                .header("Authorization", "Bearer k-acme").header("Content-Type", "application/json")
                .POST(HttpRequest.BodyPublishers.ofString(
                        "{\"model\":\"duo\",\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}]}")).build(),
                HttpResponse.BodyHandlers.ofString());
        assertEquals(200, r.statusCode(), r.body());
        return r.headers().firstValue("x-hedgerow-route").orElseThrow();
    }

    @Test
    void twoInstancesAreNotInStepOnTheGroupsRotation() throws Exception {
        try (GatewayPair fleet = fleet()) {
            GatewayHarness a = fleet.gw1();
            GatewayHarness b = fleet.gw2();
            int rounds = 400;
            int inStep = 0;
            Map<String, Integer> served = new HashMap<>();
            for (int i = 0; i < rounds; i++) {
                String one = servedBy(a);
                String two = servedBy(b);
                inStep += one.equals(two) ? 1 : 0;
                served.merge(one, 1, Integer::sum);
                served.merge(two, 1, Integer::sum);
            }
            // ~12 blocks per instance, each in step with the other's or not at random: all in step has P < 1e-4
            assertTrue(inStep < rounds * 9 / 10, "in step " + inStep + " of " + rounds);
            assertEquals(2, served.size(), served.toString());
            served.values().forEach(n -> assertTrue(Math.abs(n - rounds) <= 2 * 48, "shared evenly: " + served));
        }
    }
}
