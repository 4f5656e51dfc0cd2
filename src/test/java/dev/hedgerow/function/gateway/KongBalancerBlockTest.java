package dev.hedgerow.function.gateway;

import dev.hedgerow.sim.Fault;
import dev.hedgerow.sim.ModelScript;
import dev.hedgerow.sim.SimConfig;
import dev.hedgerow.testsupport.GatewayHarness;
import io.restassured.response.Response;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

import static io.restassured.RestAssured.given;
import static org.junit.jupiter.api.Assertions.assertEquals;

/**
 * Kong's {@code config.balancer} block as Kong writes it (nested under {@code balancer}, timeouts in bare
 * milliseconds) through the HTTP API: two gateways with the same routes, one configured with Hedgerow's flat keys,
 * the other with Kong's block, must route alike.
 */
class KongBalancerBlockTest {
    static final String ROUTES = """
            orgs:
              - id: acme
                keys: [{ name: app, key: "k-acme" }]
                providers:
                  - { id: sim, base_url: "${SIM_SIM_URL}", api_key: "sk-sim" }
                routes:
                  - { id: ch-a, alias: sticky, provider: sim, model: m-ch-a }
                  - { id: ch-b, alias: sticky, provider: sim, model: m-ch-b }
                  - { id: ch-c, alias: sticky, provider: sim, model: m-ch-c }
                  - { id: slow, alias: slowhead, provider: sim, model: m-slow, weight: 100 }
                  - { id: quick, alias: slowhead, provider: sim, model: m-quick, weight: 0 }
                groups:
            """;
    static final String FLAT = ROUTES + """
                  sticky: { strategy: consistent_hashing, hash_on_header: X-Session, retries: 2,
                            failover_criteria: [error, timeout, http_500], hedging: false }
                  slowhead: { strategy: weighted, read_timeout: 300, hedging: false }
            """;
    static final String KONG = ROUTES + """
                  sticky:
                    hedging: false
                    balancer:
                      algorithm: consistent-hashing
                      hash_on_header: X-Session
                      retries: 2
                      failover_criteria: [error, timeout, http_500]
                      connect_timeout: 60000
                      read_timeout: 60000
                      write_timeout: 60000
                      slots: 10000
                  slowhead:
                    hedging: false
                    balancer: { algorithm: round-robin, read_timeout: 300 }
            """;

    static GatewayHarness flat;
    static GatewayHarness kong;

    @BeforeAll
    static void start() {
        ModelScript instant = ModelScript.defaults().withLength(4).withLatency(ModelScript.Latency.INSTANT);
        SimConfig sim = SimConfig.of(17).withApiKey("sk-sim");
        for (String m : List.of("m-ch-a", "m-ch-b", "m-ch-c", "m-quick", "m-slow")) {
            sim = sim.withModel(m, instant);
        }
        flat = GatewayHarness.start(FLAT, Map.of("sim", sim));
        kong = GatewayHarness.start(KONG, Map.of("sim", sim));
    }

    @AfterAll
    static void stop() {
        if (flat != null) {
            flat.close();
        }
        if (kong != null) {
            kong.close();
        }
    }

    static Response send(GatewayHarness gw, String alias, Map<String, String> headers) {
        return given().baseUri(gw.baseUrl()).auth().oauth2("k-acme").contentType("application/json")
                .headers(headers)
                .body("{\"model\":\"" + alias + "\",\"messages\":[{\"role\":\"user\",\"content\":\"hello\"}]}")
                .post("/v1/chat/completions");
    }

    static String served(GatewayHarness gw, String alias, Map<String, String> headers) {
        Response r = send(gw, alias, headers);
        assertEquals(200, r.statusCode(), r.asString());
        return r.header("x-hedgerow-route");
    }

    @Test
    void consistentHashingInKongsBlockSticksOnItsHeaderExactlyAsTheFlatGroupDoes() {
        Map<String, String> kongRoutes = new LinkedHashMap<>();
        for (int k = 0; k < 24; k++) {
            String session = "user-" + k;
            String expected = served(flat, "sticky", Map.of("X-Session", session));
            for (int rep = 0; rep < 3; rep++) {
                // Kong's default hash header changes on every request: only the configured X-Session counts
                String r = served(kong, "sticky", Map.of("X-Session", session,
                        "X-Kong-LLM-Request-ID", session + "-" + rep));
                assertEquals(expected, r, "session " + session + ": Kong's block routes as the flat group");
            }
            kongRoutes.put(session, expected);
        }
        System.out.println("[kong] balancer block, consistent-hashing sessions: " + kongRoutes);
        // tolerance: 24 equally weighted keys on 3 members; all three take some
        assertEquals(3, new HashSet<>(kongRoutes.values()).size(), kongRoutes.toString());
    }

    /**
     * read_timeout: 300 is 300 ms as in Kong. It bounds a stream's response head (a non-streamed answer's head is
     * waited for as long as the answer), so a stream goes to a route that sends none: read as seconds, the attempt
     * would be abandoned at the first-token ceiling (timeout_first_token) instead.
     */
    @Test
    void aBareReadTimeoutIsKongsMillisecondsFlatAndNested() {
        for (GatewayHarness gw : List.of(flat, kong)) {
            gw.sim("sim").enqueue("m-slow", Fault.noResponse());
            Response r = given().baseUri(gw.baseUrl()).auth().oauth2("k-acme").contentType("application/json")
                    .body("{\"model\":\"slowhead\",\"stream\":true,"
                            + "\"messages\":[{\"role\":\"user\",\"content\":\"hello\"}]}")
                    .post("/v1/chat/completions");
            assertEquals(200, r.statusCode(), r.asString());
            assertEquals(List.of("slow:failed:timeout_read", "quick:success"), KongRetryTest.streamTrail(r),
                    gw == flat ? "flat read_timeout: 300" : "balancer.read_timeout: 300");
        }
    }
}
