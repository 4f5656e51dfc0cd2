package dev.hedgerow.function.gateway;

import com.fasterxml.jackson.databind.JsonNode;
import dev.hedgerow.sim.ModelScript;
import dev.hedgerow.sim.SimConfig;
import dev.hedgerow.sim.SimText;
import dev.hedgerow.testsupport.GatewayHarness;
import dev.hedgerow.testsupport.Sse;
import io.restassured.RestAssured;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

import java.util.Map;

import static io.restassured.RestAssured.given;
import static org.junit.jupiter.api.Assertions.assertEquals;

/**
 * Keln's "no give-up timer" over real HTTP: a silent attempt is abandoned for another route, never when nothing
 * else could be tried, since that would answer an error while the route is still serving. Scaled down: a route
 * learnt on short prompts (a first-token limit of about two seconds) gets a prompt whose prefill takes five.
 */
class NoGiveUpTimerTest {
    static final long SEED = 47;
    static final int LENGTH = 6;
    static final String YAML = """
            orgs:
              - id: acme
                keys: [{ name: app, key: "k-acme" }]
                providers:
                  - { id: a, base_url: "${SIM_A_URL}" }
                routes:
                  - { alias: prefill, provider: a, model: m-prefill, context_window: 131072 }
                groups:
                  prefill: { first_token_floor: 100ms, first_token_ceiling: 300ms }
            """;

    static GatewayHarness gw;

    @BeforeAll
    static void start() {
        // 10 ms plus 4 s per thousand prompt tokens to the first token: prefill dominates long prompts
        ModelScript prefill = ModelScript.defaults().withLength(LENGTH)
                .withLatency(ModelScript.Latency.of(10, 2000).withTtftPer1kPromptTokens(4000));
        gw = GatewayHarness.start(YAML, Map.of("a", SimConfig.of(SEED).withModel("m-prefill", prefill)));
        RestAssured.baseURI = gw.baseUrl();
    }

    @AfterAll
    static void stop() {
        gw.close();
    }

    static String stream(String prompt) {
        return given().auth().oauth2("k-acme").contentType("application/json")
                .body("{\"model\":\"prefill\",\"stream\":true"
                        + ",\"messages\":[{\"role\":\"user\",\"content\":\"" + prompt + "\"}]}")
                .post("/v1/chat/completions").then().statusCode(200).extract().asString();
    }

    @Test
    void theOnlyRouteIsNotAbandonedWhileItIsStillPrefillingALongPrompt() {
        for (int i = 0; i < 4; i++) {
            stream("short " + i);   // the route is learnt fast: its first-token limit falls to ~2 s
        }
        String prompt = "word ".repeat(1200).strip();   // ~1 200 tokens: ~5 s to the first token
        String out = stream(prompt);
        assertEquals(SimText.expected(SEED, prompt, LENGTH), Sse.content(out), out);
        JsonNode trail = Sse.trail(out);
        assertEquals(1, trail.size(), trail.toString());
        assertEquals("success", trail.get(0).path("outcome").asText(), trail.toString());
        assertEquals(0, gw.sim("a").stats("m-prefill").cancelled());
    }
}
