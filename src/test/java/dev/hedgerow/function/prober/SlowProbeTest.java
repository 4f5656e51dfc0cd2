package dev.hedgerow.function.prober;

import dev.hedgerow.sim.ModelScript;
import dev.hedgerow.sim.SimServer;
import dev.hedgerow.testsupport.AppTestResource;
import io.quarkus.test.junit.QuarkusTest;
import io.quarkus.test.junit.QuarkusTestProfile;
import io.quarkus.test.junit.TestProfile;
import io.restassured.response.Response;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

import java.util.Map;

import static io.restassured.RestAssured.given;
import static org.hamcrest.Matchers.equalTo;
import static org.hamcrest.Matchers.greaterThan;
import static org.hamcrest.Matchers.lessThan;
import static org.hamcrest.Matchers.matchesPattern;
import static org.hamcrest.Matchers.notNullValue;

/**
 * The real application's prober ({@code POST /prober/run}) in front of a route that answers at once and then writes
 * slowly, with the probe's time ({@code hedgerow.prober.timeout}) shorter than the answer: the route is serving, and
 * the admin API's health ({@code GET /admin/health}) shows it measured and healthy, not cooling down.
 */
@QuarkusTest
@TestProfile(SlowProbeTest.ShortProbes.class)
class SlowProbeTest {
    /**
     * The probe's time, short so that a round is quick and a slow writer outlasts it, and long enough that the probe
     * gets the 8 tokens a sustained-decode judgment takes however late a loaded host delivers its first token.
     */
    public static class ShortProbes implements QuarkusTestProfile {
        @Override
        public Map<String, String> getConfigOverrides() {
            return Map.of("hedgerow.prober.timeout", "6s");
        }
    }

    static final ModelScript FAST = ModelScript.defaults().withLength(24)
            .withLatency(ModelScript.Latency.of(10, 400));

    static SimServer alpha() {
        return AppTestResource.sims().get("alpha");
    }

    @AfterEach
    void restore() {
        alpha().script("solo-a", FAST);
    }

    /**
     * Every key of a JSON answer is snake_case, as in every other Hedgerow answer: the round report said {@code ttftMs}
     * and {@code tokensPerSecond}.
     */
    static void assertSnakeCase(String json) {
        java.util.List<String> camel = new java.util.ArrayList<>();
        java.util.ArrayDeque<com.fasterxml.jackson.databind.JsonNode> todo = new java.util.ArrayDeque<>();
        try {
            todo.push(new com.fasterxml.jackson.databind.ObjectMapper().readTree(json));
        } catch (java.io.IOException e) {
            throw new AssertionError("not JSON: " + json, e);
        }
        while (!todo.isEmpty()) {
            com.fasterxml.jackson.databind.JsonNode n = todo.pop();
            n.fields().forEachRemaining(f -> {
                if (!f.getKey().matches("[a-z0-9_]+")) {
                    camel.add(f.getKey());
                }
            });
            n.elements().forEachRemaining(todo::push);
        }
        org.junit.jupiter.api.Assertions.assertEquals(java.util.List.of(), camel, json);
    }

    @Test
    void aRouteStillWritingItsProbeAnswerWhenTimeRunsOutIsMeasuredAndStaysHealthy() {
        // first token at once, then 3 tokens/s: the 32-token speed probe needs over 10 s, the probe has 6 s (a timer
        // 4 s late could not see it finish). The SLO's sustained-decode judgment takes a sample of 8 tokens at least
        // (LearnedModels.SUSTAINED_MIN_TOKENS), 2.3 s after the first: 3.6 s to spare for the first token of a cold
        // app's first round on a loaded host. With 3 s and 4 tokens/s it was 1.2 s, and a round under load got fewer
        // than 8 tokens: the route was measured, its speed shown below 50, and its SLO status left at meets. (Slow
        // enough that the tokens bunched up behind a cold start's first round still average far below the 50
        // tokens/s SLO)
        alpha().script("solo-a", ModelScript.defaults().withLength(64).withLatency(ModelScript.Latency.of(10, 3)));

        Response round = given().auth().oauth2(AppTestResource.PROBER_TOKEN).post("/prober/run");

        round.then().statusCode(200).body("ran", equalTo(true))
                .body("routes.find { it.route == 'solo-alpha' }.outcome",
                        matchesPattern("slow: \\d+ token\\(s\\), answer not finished within 6000 ms"))
                .body("routes.find { it.route == 'solo-alpha' }.ttft_ms", notNullValue())
                .body("routes.find { it.route == 'solo-alpha' }.tokens_per_second", greaterThan(0f));
        assertSnakeCase(round.asString());
        given().auth().oauth2("a-acme").get("/admin/health?alias=solo").then().statusCode(200)
                .body("groups[0].members[0].route", equalTo("solo-alpha"))
                .body("groups[0].members[0].state", equalTo("healthy"))
                .body("groups[0].members[0].cooling_down", equalTo(false))
                .body("groups[0].members[0].fails", equalTo(0))
                .body("groups[0].members[0].measured", equalTo(true))
                .body("groups[0].members[0].samples.size()", equalTo(1))
                // learnt from the tokens that arrived: slower than the 50 tokens/s target, so below the SLO
                .body("groups[0].members[0].slo.decode_tokens_per_second", greaterThan(0f))
                .body("groups[0].members[0].slo.decode_tokens_per_second", lessThan(50f))
                .body("groups[0].members[0].slo.status", equalTo("below"));
        // and the gateway still serves from it: the only route of its alias
        given().auth().oauth2("k-acme").contentType("application/json")
                .body("{\"model\":\"solo\",\"max_tokens\":2,\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}]}")
                .post("/v1/chat/completions").then().statusCode(200)
                .header("x-hedgerow-route", equalTo("solo-alpha"));
    }
}
