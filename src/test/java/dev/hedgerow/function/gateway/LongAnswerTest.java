package dev.hedgerow.function.gateway;

import com.fasterxml.jackson.databind.JsonNode;
import dev.hedgerow.api.Json;
import dev.hedgerow.sim.ModelScript;
import dev.hedgerow.sim.SimConfig;
import dev.hedgerow.sim.SimText;
import dev.hedgerow.state.RouteSnapshot;
import dev.hedgerow.testsupport.GatewayHarness;
import io.restassured.response.Response;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

import java.io.IOException;
import java.time.Duration;
import java.util.List;
import java.util.Map;

import static io.restassured.RestAssured.given;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;

/**
 * A non-streamed answer arrives whole, so Hedgerow cannot see it progress: it must wait as long as the answer the
 * request allows takes to write, not cut it at the first-token ceiling as if the provider were silent. Over real
 * HTTP: the simulator writes 60 tokens at 20 a second (3 s) while the group's ceiling is 1 s.
 */
class LongAnswerTest {
    static final long SEED = 5;
    static final String YAML = """
            orgs:
              - id: acme
                keys: [{ name: app, key: "k" }]
                providers:
                  - { id: sim, base_url: "${SIM_SIM_URL}" }
                routes:
                  - { id: long-a, alias: long, provider: sim, model: m-a }
                  - { id: long-b, alias: long, provider: sim, model: m-b, priority: 2 }
                  - { id: essay-a, alias: essay, provider: sim, model: m-a }
                  - { id: essay-b, alias: essay, provider: sim, model: m-b, priority: 2 }
                groups:
                  long: { strategy: priority, hedging: false, first_token_floor: 200ms, first_token_ceiling: 1s,
                          slo: { decode_tokens_per_second: 1000 } }
                  essay: { strategy: priority, hedging: false, first_token_floor: 200ms, first_token_ceiling: 1s,
                           read_timeout: 1s, slo: { decode_tokens_per_second: 20 } }
            """;

    static GatewayHarness gw;

    @BeforeAll
    static void start() {
        ModelScript slow = ModelScript.defaults().withLength(60).withLatency(ModelScript.Latency.of(100, 20));
        gw = GatewayHarness.start(YAML, Map.of("sim",
                SimConfig.of(SEED).withModel("m-a", slow).withModel("m-b", slow)));
    }

    @AfterAll
    static void stop() {
        gw.close();
    }

    @Test
    void aNonStreamedAnswerLongerThanTheFirstTokenCeilingIsWaitedFor() throws IOException {
        // a few short streams teach the route its first-token time (about 100 ms): the old wait, three first-token
        // windows of that plus 256 tokens at the SLO speed, came to about 1.4 s and cut this 3 s answer
        for (int i = 0; i < 5; i++) {
            given().baseUri(gw.baseUrl()).auth().oauth2("k").contentType("application/json")
                    .body("{\"model\":\"long\",\"stream\":true,\"max_tokens\":2,"
                            + "\"messages\":[{\"role\":\"user\",\"content\":\"warm\"}]}")
                    .post("/v1/chat/completions").then().statusCode(200);
        }
        long spare = gw.sim("sim").stats("m-b").received();
        Response r = given().baseUri(gw.baseUrl()).auth().oauth2("k").contentType("application/json")
                .body("{\"model\":\"long\",\"messages\":[{\"role\":\"user\",\"content\":\"a long essay\"}]}")
                .post("/v1/chat/completions");
        assertEquals(200, r.statusCode(), r.asString());
        JsonNode trail = Json.parse(r.header("x-hedgerow-attempts").getBytes());
        assertEquals(1, trail.size(), trail.toString());
        assertEquals("success", trail.path(0).path("outcome").asText());
        assertEquals(SimText.expected(SEED, "a long essay", 60),
                r.jsonPath().getString("choices[0].message.content"));
        assertEquals(spare, gw.sim("sim").stats("m-b").received(), "no second route was asked");
    }

    /**
     * Most providers send a non-streamed answer's head only once the answer is written, so the wait for that head is
     * the answer's own (here 40 tokens at the group's SLO speed of 20 a second, three times over), not the group's
     * read_timeout of 1 s: the simulator's head comes after about 2 s, and is served with no failure and no cooldown.
     */
    @Test
    void aNonStreamedAnswerWhoseHeadComesAfterReadTimeoutIsWaitedFor() throws IOException {
        long spare = gw.sim("sim").stats("m-b").received();
        Response r = given().baseUri(gw.baseUrl()).auth().oauth2("k").contentType("application/json")
                .body("{\"model\":\"essay\",\"max_tokens\":40,"
                        + "\"messages\":[{\"role\":\"user\",\"content\":\"a slow essay\"}]}")
                .post("/v1/chat/completions");
        assertEquals(200, r.statusCode(), r.asString());
        JsonNode trail = Json.parse(r.header("x-hedgerow-attempts").getBytes());
        assertEquals(1, trail.size(), trail.toString());
        assertEquals("essay-a", trail.path(0).path("route").asText().replace("acme/", ""), trail.toString());
        assertEquals("success", trail.path(0).path("outcome").asText(), trail.toString());
        assertEquals(SimText.expected(SEED, "a slow essay", 40), r.jsonPath().getString("choices[0].message.content"));
        assertEquals(spare, gw.sim("sim").stats("m-b").received(), "no second route was asked");
        RouteSnapshot health = gw.core().store().snapshot(List.of("acme/essay-a"), Duration.ofMinutes(1))
                .await().atMost(Duration.ofSeconds(5)).get("acme/essay-a");
        assertEquals(0, health.fails());
        assertFalse(health.coolingDown());
    }
}
