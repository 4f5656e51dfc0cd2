package dev.hedgerow.function.gateway;

import com.fasterxml.jackson.databind.JsonNode;
import dev.hedgerow.sim.ModelScript;
import dev.hedgerow.sim.SimConfig;
import dev.hedgerow.sim.SimText;
import dev.hedgerow.state.RouteSnapshot;
import dev.hedgerow.testsupport.GatewayHarness;
import dev.hedgerow.testsupport.Sse;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

import java.time.Duration;
import java.util.List;
import java.util.Map;

import static io.restassured.RestAssured.given;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;

/**
 * A reasoning model that hides its reasoning (OpenAI's o-series) streams nothing while it thinks, and a request
 * need not ask for reasoning for it to think. Over real HTTP, scaled down (a 300 ms first-token ceiling): a route
 * known to think, by its learnt thinking time or by its {@code reasoning} capability, is waited for through a
 * silence its thinking explains, on a request without reasoning parameters, and nothing is counted against it.
 * Before, such a request was abandoned at the ordinary window for the next route and the thinking route cooled down.
 */
class SilentThinkingTest {
    static final long SEED = 53;
    static final int LENGTH = 8;
    static final String YAML = """
            orgs:
              - id: acme
                keys: [{ name: app, key: "k-acme" }]
                providers:
                  - { id: a, base_url: "${SIM_A_URL}" }
                  - { id: b, base_url: "${SIM_B_URL}" }
                routes:
                  - { id: think-a, alias: think, provider: a, model: m-think }
                  - { id: think-b, alias: think, provider: b, model: m-quick, priority: 2 }
                  - { id: deep-a, alias: deep, provider: a, model: m-deep, capabilities: [reasoning] }
                  - { id: deep-b, alias: deep, provider: b, model: m-quick, priority: 2 }
                groups:
                  think: { strategy: priority, hedging: false, first_token_floor: 100ms, first_token_ceiling: 300ms }
                  deep: { strategy: priority, hedging: false, first_token_floor: 100ms, first_token_ceiling: 1s }
            """;
    static final ModelScript QUICK = ModelScript.defaults().withLength(LENGTH)
            .withLatency(ModelScript.Latency.of(5, 2000));

    static GatewayHarness gw;

    @BeforeAll
    static void start() {
        gw = GatewayHarness.start(YAML, Map.of(
                "a", SimConfig.of(SEED).withModel("m-think", QUICK).withModel("m-deep", QUICK),
                "b", SimConfig.of(SEED).withModel("m-quick", QUICK)));
    }

    @AfterAll
    static void stop() {
        gw.close();
    }

    static String stream(String alias, String prompt) {
        return given().baseUri(gw.baseUrl()).auth().oauth2("k-acme").contentType("application/json")
                .body("{\"model\":\"" + alias + "\",\"stream\":true"
                        + ",\"messages\":[{\"role\":\"user\",\"content\":\"" + prompt + "\"}]}")
                .post("/v1/chat/completions").then().statusCode(200).extract().asString();
    }

    static RouteSnapshot health(String routeId) {
        String key = "acme/" + routeId;
        return gw.core().store().snapshot(List.of(key), Duration.ofMinutes(1)).await().atMost(Duration.ofSeconds(5))
                .get(key);
    }

    /**
     * Quick answers teach the route a first token of a few ms: its first-token window shrinks to about the floor,
     * so a silent attempt's ordinary wait is the group's first_token_ceiling.
     */
    static void learnQuickFirstTokens(String alias) {
        for (int i = 0; i < 6; i++) {
            stream(alias, "quick " + i);
        }
    }

    static void assertServedWithoutFailure(String out, String prompt, String route) {
        assertEquals(SimText.expected(SEED, prompt, LENGTH), Sse.content(out), out);
        JsonNode trail = Sse.trail(out);
        assertEquals(1, trail.size(), trail.toString());
        assertEquals(route, trail.get(0).path("route").asText().replace("acme/", ""), trail.toString());
        assertEquals("success", trail.get(0).path("outcome").asText(), trail.toString());
        assertEquals(0, health(route).fails(), "nothing counted against the thinking route");
        assertFalse(health(route).coolingDown());
    }

    @Test
    void aRouteWhoseThinkingIsLearntIsWaitedForWhileItThinksInSilence() {
        learnQuickFirstTokens("think");
        // one answer that shows its reasoning teaches the route its thinking time: 1.5 s from its first reasoning
        // to its first visible token
        gw.sim("a").script("m-think", QUICK.withReasoning(new ModelScript.Reasoning(2, 1500, 0)));
        stream("think", "show your thinking");
        // now it hides its reasoning, as OpenAI's o-series do: 1.5 s of silence (five times the 300 ms ceiling),
        // then the answer, to a request that asks for no reasoning
        gw.sim("a").script("m-think", QUICK.withReasoning(new ModelScript.Reasoning(0, 1500, 0)));
        String out = stream("think", "hidden thoughts");
        assertServedWithoutFailure(out, "hidden thoughts", "think-a");
    }

    @Test
    void aRouteDeclaringReasoningIsWaitedForWhileItThinksInSilence() {
        learnQuickFirstTokens("deep");
        // its thinking never measured, it may be silent for twice the ordinary wait (the 1 s ceiling): 2 s;
        // this answer comes after 1.5 s of silence
        gw.sim("a").script("m-deep", QUICK.withReasoning(new ModelScript.Reasoning(0, 1500, 0)));
        String out = stream("deep", "deep thoughts");
        assertServedWithoutFailure(out, "deep thoughts", "deep-a");
    }
}
