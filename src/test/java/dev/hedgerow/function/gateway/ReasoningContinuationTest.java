package dev.hedgerow.function.gateway;

import com.fasterxml.jackson.databind.JsonNode;
import dev.hedgerow.sim.Fault;
import dev.hedgerow.sim.ModelScript;
import dev.hedgerow.sim.SimConfig;
import dev.hedgerow.sim.SimText;
import dev.hedgerow.testsupport.GatewayHarness;
import dev.hedgerow.testsupport.Sse;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

import java.util.ArrayList;
import java.util.List;
import java.util.Map;

import static io.restassured.RestAssured.given;
import static org.junit.jupiter.api.Assertions.assertEquals;

/**
 * A resume whose provider writes the continuation of the answer's text only as reasoning (vLLM's deepseek_r1 parser
 * takes everything before the end of the thinking for reasoning, and a prefill continuation never writes that end)
 * is a failed resume: the client is not shown a resume's reasoning, and taken as it came the answer ended cut short
 * with {@code finish_reason: "stop"} (found by hunt29-b). The stream resumes again on another route and ends whole.
 */
class ReasoningContinuationTest {
    static final long SEED = 29;
    static final int LENGTH = 24;
    static final String YAML = """
            orgs:
              - id: acme
                keys: [{ name: app, key: "k-acme" }]
                providers:
                  - { id: a, base_url: "${SIM_A_URL}" }
                routes:
                  - { id: first, alias: chat, provider: a, model: m-text, priority: 1, capabilities: [prefill] }
                  - { id: r1, alias: chat, provider: a, model: m-r1, priority: 2, capabilities: [prefill] }
                  - { id: last, alias: chat, provider: a, model: m-last, priority: 3, capabilities: [prefill] }
                groups:
                  chat: { strategy: priority, hedging: false }
            """;

    static GatewayHarness gw;

    @BeforeAll
    static void start() {
        ModelScript text = ModelScript.defaults().withLength(LENGTH).withLatency(ModelScript.Latency.of(2, 0));
        gw = GatewayHarness.start(YAML, Map.of("a", SimConfig.of(SEED).withModel("m-text", text)
                .withModel("m-last", text)
                .withModel("m-r1", text.withReasoning(new ModelScript.Reasoning(3, 0, 0).continuingAsReasoning()))));
    }

    @AfterAll
    static void stop() {
        gw.close();
    }

    @Test
    void aResumeThatWritesOnlyReasoningIsResumedAgainAndTheAnswerEndsWhole() {
        gw.sim("a").enqueue("m-text", Fault.dropAfter(6));
        String prompt = "think it over";
        String out = given().baseUri(gw.baseUrl()).auth().oauth2("k-acme").contentType("application/json")
                .body("{\"model\":\"chat\",\"stream\":true,\"messages\":[{\"role\":\"user\",\"content\":\""
                        + prompt + "\"}]}")
                .post("/v1/chat/completions").then().statusCode(200).extract().asString();
        assertEquals(SimText.expected(SEED, prompt, LENGTH), Sse.content(out), out);
        List<String> resumes = new ArrayList<>();
        for (JsonNode a : Sse.trail(out)) {
            if (a.path("kind").asText().equals("resume")) {
                resumes.add(a.path("route").asText() + ":" + a.path("outcome").asText() + ":"
                        + a.path("error").asText(""));
            }
        }
        assertEquals(List.of("r1:failed:zero_content", "last:success:"), resumes, out);
        assertEquals("stop", Sse.finishReason(out), out);
    }
}
