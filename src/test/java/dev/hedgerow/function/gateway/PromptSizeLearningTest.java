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
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Keln's "predicted TTFT for your prompt size", learnt from live traffic, over real HTTP: a route measured only on
 * short prompts (as the prober's standard-size probes measure every route) learns what a long prompt costs it from
 * the first long prompt it serves, so the next one of that size is held to a window that fits it and is not
 * hedged. The simulator's TTFT is 20 ms + 400 ms per thousand prompt tokens, with no jitter.
 */
class PromptSizeLearningTest {
    static final long SEED = 53;
    static final int LENGTH = 4;
    static final String YAML = """
            orgs:
              - id: acme
                keys: [{ name: app, key: "k-acme" }]
                providers:
                  - { id: a, base_url: "${SIM_A_URL}" }
                  - { id: b, base_url: "${SIM_B_URL}" }
                routes:
                  - { alias: grow, provider: a, model: m-prefill, priority: 1, context_window: 131072 }
                  - { alias: grow, provider: b, model: m-prefill, priority: 2, context_window: 131072 }
                  - { alias: warm, provider: a, model: m-prefill, priority: 1 }
                  - { alias: warm, provider: b, model: m-prefill, priority: 2 }
                groups:
                  grow: { strategy: priority }
                  warm: { strategy: priority, hedging: false }
            """;

    static GatewayHarness gw;

    @BeforeAll
    static void start() {
        ModelScript prefill = ModelScript.defaults().withLength(LENGTH)
                .withLatency(ModelScript.Latency.of(20, 2000).withTtftPer1kPromptTokens(400));
        gw = GatewayHarness.start(YAML, Map.of(
                "a", SimConfig.of(SEED).withModel("m-prefill", prefill),
                "b", SimConfig.of(SEED).withModel("m-prefill", prefill)));
        RestAssured.baseURI = gw.baseUrl();
        // a fresh JVM's first requests are slow (class loading, JIT, connections): spent on another alias, so the
        // route under test is measured at its own speed
        for (int i = 0; i < 10; i++) {
            stream("warm", "warm-up " + i);
        }
    }

    @AfterAll
    static void stop() {
        gw.close();
    }

    static String stream(String prompt) {
        return stream("grow", prompt);
    }

    static String stream(String alias, String prompt) {
        return given().auth().oauth2("k-acme").contentType("application/json")
                .body("{\"model\":\"" + alias + "\",\"stream\":true"
                        + ",\"messages\":[{\"role\":\"user\",\"content\":\"" + prompt + "\"}]}")
                .post("/v1/chat/completions").then().statusCode(200).extract().asString();
    }

    @Test
    void aRouteLearntOnShortPromptsLearnsALongPromptsCostFromTheFirstOne() {
        for (int i = 0; i < 12; i++) {
            stream("short " + i);   // ~25 ms each: a tight line, a narrow window
        }
        String words = "word ".repeat(3000);
        stream(words + "first");     // ~1.2 s: far from every sample, so learnt in full (it may be hedged)
        String prompt = words + "second";
        String out = stream(prompt);
        assertEquals(SimText.expected(SEED, prompt, LENGTH), Sse.content(out));
        JsonNode trail = Sse.trail(out);
        assertEquals("success", trail.get(0).path("outcome").asText(), trail.toString());
        // the window fits a long prompt now: no hedge, or (on a loaded machine, the second long prompt measured a few
        // ms slower than the first) one only near the long prompt's own TTFT, never at a short prompt's window (tens
        // of ms), where a route that had not learnt the first long prompt's cost would hedge
        long primaryTtft = trail.get(0).path("ttft_ms").asLong();
        for (int i = 1; i < trail.size(); i++) {
            assertTrue(trail.get(i).path("start_ms").asLong() >= primaryTtft * 8 / 10,
                    "a hedge only near the long prompt's TTFT: " + trail);
        }
    }
}
