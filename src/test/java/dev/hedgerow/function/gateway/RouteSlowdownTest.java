package dev.hedgerow.function.gateway;

import dev.hedgerow.sim.ModelScript;
import dev.hedgerow.sim.SimConfig;
import dev.hedgerow.testsupport.GatewayHarness;
import io.restassured.RestAssured;
import io.restassured.response.Response;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Map;

import static io.restassured.RestAssured.given;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Keln learns each route's first-token time from live traffic and skips slow providers while faster ones exist:
 * a route that was fast and turns slow (a first token 50x later than it learnt, from one request to the next) loses
 * the pick within a few requests, not after dozens. Its learnt line had 40 samples at 30 ms; a heavy tail's single
 * late answer must not drag such a line (it is clipped), but late answer after late answer is a changed route.
 * Hedging is off in this group, so every request's first token is learnt from the route that served it.
 */
class RouteSlowdownTest {
    static final String YAML = """
            orgs:
              - id: acme
                keys: [{ name: app, key: "k-acme" }]
                providers:
                  - { id: alpha, base_url: "${SIM_ALPHA_URL}" }
                  - { id: beta, base_url: "${SIM_BETA_URL}" }
                routes:
                  - { id: s-alpha, alias: shift, provider: alpha, model: m }
                  - { id: s-beta, alias: shift, provider: beta, model: m }
                groups:
                  shift: { hedging: false }
            """;

    static GatewayHarness gw;

    @BeforeAll
    static void start() {
        // alpha learnt at 30 ms now takes 1.5 s to its first token; beta learnt at 200 ms still takes 200 ms
        gw = GatewayHarness.start(YAML, Map.of(
                "alpha", SimConfig.of(9).withModel("m", ModelScript.defaults().withLength(4)
                        .withLatency(ModelScript.Latency.of(1500, 0))),
                "beta", SimConfig.of(9).withModel("m", ModelScript.defaults().withLength(4)
                        .withLatency(ModelScript.Latency.of(200, 0)))));
        RestAssured.baseURI = gw.baseUrl();
        learnt("acme/s-alpha", 30);
        learnt("acme/s-beta", 200);
    }

    @AfterAll
    static void stop() {
        gw.close();
    }

    static void learnt(String route, double ttftMs) {
        GroupKit.learntTtft(gw.core().store(), route, ttftMs);
    }

    @Test
    void aRouteThatTurnsSlowLosesThePickWithinAFewRequests() {
        List<String> served = new ArrayList<>();
        for (int i = 0; i < 8; i++) {
            Response r = given().auth().oauth2("k-acme").contentType("application/json")
                    .body("{\"model\":\"shift\",\"stream\":true,\"messages\":[{\"role\":\"user\",\"content\":\"q"
                            + i + "\"}]}")
                    .post("/v1/chat/completions");
            assertEquals(200, r.statusCode(), r.asString());
            served.add(r.header("x-hedgerow-route"));
        }
        assertEquals("s-alpha", served.get(0), "learnt fastest: " + served);
        assertTrue(Collections.frequency(served, "s-alpha") <= 4, "still picked after turning slow: " + served);
        assertEquals(List.of("s-beta", "s-beta", "s-beta", "s-beta"), served.subList(4, 8), served.toString());
    }
}
