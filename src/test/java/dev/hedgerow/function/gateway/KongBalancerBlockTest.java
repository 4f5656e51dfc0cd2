package dev.hedgerow.function.gateway;

import com.fasterxml.jackson.databind.JsonNode;
import dev.hedgerow.api.Json;
import dev.hedgerow.sim.ModelScript;
import dev.hedgerow.sim.SimConfig;
import dev.hedgerow.testsupport.GatewayHarness;
import io.restassured.response.Response;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

import java.io.IOException;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;

import static io.restassured.RestAssured.given;
import static org.junit.jupiter.api.Assertions.assertEquals;

/**
 * Kong's {@code config.balancer} settings as Kong writes them (timeouts in bare milliseconds) through the HTTP
 * API.
 */
class KongBalancerBlockTest {
    static final String FLAT = """
            orgs:
              - id: acme
                keys: [{ name: app, key: "k-acme" }]
                providers:
                  - { id: sim, base_url: "${SIM_SIM_URL}", api_key: "sk-sim" }
                routes:
                  - { id: slow, alias: slowhead, provider: sim, model: m-slow, weight: 100 }
                  - { id: quick, alias: slowhead, provider: sim, model: m-quick, weight: 0 }
                groups:
                  slowhead: { strategy: weighted, read_timeout: 300, hedging: false }
            """;

    static GatewayHarness flat;

    @BeforeAll
    static void start() {
        ModelScript instant = ModelScript.defaults().withLength(4).withLatency(ModelScript.Latency.INSTANT);
        SimConfig sim = SimConfig.of(17).withApiKey("sk-sim").withModel("m-quick", instant)
                // its non-streamed answer (and so its response head) comes after 5 s: far past 300 ms, far short
                // of 300 s
                .withModel("m-slow", instant.withLatency(ModelScript.Latency.of(5_000, 0)));
        flat = GatewayHarness.start(FLAT, Map.of("sim", sim));
    }

    @AfterAll
    static void stop() {
        if (flat != null) {
            flat.close();
        }
    }

    static Response send(GatewayHarness gw, String alias, Map<String, String> headers) {
        return given().baseUri(gw.baseUrl()).auth().oauth2("k-acme").contentType("application/json")
                .headers(headers)
                .body("{\"model\":\"" + alias + "\",\"messages\":[{\"role\":\"user\",\"content\":\"hello\"}]}")
                .post("/v1/chat/completions");
    }

    /** The attempt trail as "route:outcome:error" strings. */
    static List<String> trail(Response r) throws IOException {
        List<String> out = new ArrayList<>();
        for (JsonNode a : Json.parse(r.header("x-hedgerow-attempts").getBytes())) {
            out.add(a.path("route").asText() + ":" + a.path("outcome").asText()
                    + (a.path("error").isNull() || a.path("error").isMissingNode() ? ""
                    : ":" + a.path("error").asText()));
        }
        return out;
    }

    @Test
    void aBareReadTimeoutIsKongsMilliseconds() throws IOException {
        // read_timeout: 300 is 300 ms as in Kong; read as seconds the slow route would answer after 5 s
        Response r = send(flat, "slowhead", Map.of());
        assertEquals(200, r.statusCode(), r.asString());
        assertEquals(List.of("slow:failed:timeout_read", "quick:success"), trail(r));
    }
}
