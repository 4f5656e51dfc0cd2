package dev.hedgerow.function.gateway;

import com.fasterxml.jackson.databind.JsonNode;
import dev.hedgerow.sim.Fault;
import dev.hedgerow.sim.ModelScript;
import dev.hedgerow.sim.SimConfig;
import dev.hedgerow.sim.SimText;
import dev.hedgerow.testsupport.GatewayHarness;
import dev.hedgerow.testsupport.Sse;
import io.restassured.RestAssured;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

import java.util.Map;

import static io.restassured.RestAssured.given;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * An attempt whose route answers its head and then only keep-alive comments, before its first token, while another
 * route could serve the request: each comment re-armed the first-token limit, so the client's stream never ended
 * (found by hunt4). Now the limit counts from the attempt's start; the request's last hope is still waited for while
 * it shows life (DispatchTimingTest). The timeouts only stop a hang; nothing here is timed.
 */
class KeepAliveHangTest {
    static final long SEED = 31;
    static final int LENGTH = 24;
    static final String YAML = """
            orgs:
              - id: acme
                keys: [{ name: app, key: "k-acme" }]
                providers:
                  - { id: a, base_url: "${SIM_A_URL}", dialect: sglang }
                  - { id: b, base_url: "${SIM_B_URL}", dialect: sglang }
                  - { id: c, base_url: "${SIM_C_URL}", dialect: sglang }
                routes:
                  - { alias: r, provider: a, model: m, priority: 1, capabilities: [prefill] }
                  - { alias: r, provider: b, model: m, priority: 2, capabilities: [prefill] }
                  - { alias: r, provider: c, model: m, priority: 3, capabilities: [prefill] }
                  - { alias: q, provider: a, model: m, priority: 1, capabilities: [prefill] }
                  - { alias: q, provider: b, model: m, priority: 2, capabilities: [prefill] }
                groups:
                  r: { strategy: priority, stall_floor: 300ms, first_token_ceiling: 2s }
                  q: { strategy: priority, hedging: false, first_token_ceiling: 2s }
            """;

    static GatewayHarness gw;

    @BeforeAll
    static void start() {
        ModelScript text = ModelScript.defaults().withLength(LENGTH).withLatency(ModelScript.Latency.of(5, 2000));
        gw = GatewayHarness.start(YAML, Map.of(
                "a", SimConfig.of(SEED).withModel("m", text),
                "b", SimConfig.of(SEED).withModel("m", text),
                "c", SimConfig.of(SEED).withModel("m", text)));
        RestAssured.baseURI = gw.baseUrl();
    }

    @AfterAll
    static void stop() {
        gw.close();
    }

    static String stream(String prompt) {
        return given().auth().oauth2("k-acme").contentType("application/json")
                .body("{\"model\":\"r\",\"stream\":true"
                        + ",\"messages\":[{\"role\":\"user\",\"content\":\"" + prompt + "\"}]}")
                .post("/v1/chat/completions").then().statusCode(200).extract().asString();
    }

    /** The stall that started it is cut after 300 ms; the resume's heartbeat-only route at its 2 s ceiling. */
    @Test
    @Timeout(value = 20, threadMode = Timeout.ThreadMode.SEPARATE_THREAD)   // without the fix the stream never ends
    void aResumeHungBehindKeepAlivesIsCutAndTheAnswerFinishedElsewhere() {
        String prompt = "resume then heartbeat";
        gw.sim("a").enqueue("m", Fault.dropAfter(5));
        gw.sim("b").enqueue("m", Fault.stallKeptAlive(0, 100));
        String out = stream(prompt);
        assertEquals(SimText.expected(SEED, prompt, LENGTH), Sse.content(out));
        JsonNode trail = Sse.trail(out);
        assertEquals("timeout_first_token", trail.get(1).path("error").asText(), trail.toString());
    }

    /**
     * README: a silent attempt is abandoned after first_token_ceiling "for another route (never the last one a
     * request has: with no other route ... it is waited for while the upstream shows life)". Another route is there.
     */
    @Test
    @Timeout(value = 20, threadMode = Timeout.ThreadMode.SEPARATE_THREAD)   // without the fix the stream never ends
    void aPrimaryHungBehindKeepAlivesIsAbandonedAtTheCeilingWhenAnotherRouteIsLeft() {
        String prompt = "primary heartbeat";
        gw.sim("a").enqueue("m", Fault.stallKeptAlive(0, 100));
        String out = given().auth().oauth2("k-acme").contentType("application/json")
                .body("{\"model\":\"q\",\"stream\":true"
                        + ",\"messages\":[{\"role\":\"user\",\"content\":\"" + prompt + "\"}]}")
                .post("/v1/chat/completions").then().statusCode(200).extract().asString();
        assertEquals(SimText.expected(SEED, prompt, LENGTH), Sse.content(out));
        assertEquals("timeout_first_token", Sse.trail(out).get(0).path("error").asText(), out);
    }

    /** Control: the same primary wholly silent (no heartbeat) is abandoned at the 2 s ceiling and b answers. */
    @Test
    @Timeout(value = 20, threadMode = Timeout.ThreadMode.SEPARATE_THREAD)
    void controlASilentPrimaryIsAbandonedAtTheCeiling() {
        String prompt = "primary silent";
        gw.sim("a").enqueue("m", Fault.stallForever(0));
        String out = given().auth().oauth2("k-acme").contentType("application/json")
                .body("{\"model\":\"q\",\"stream\":true"
                        + ",\"messages\":[{\"role\":\"user\",\"content\":\"" + prompt + "\"}]}")
                .post("/v1/chat/completions").then().statusCode(200).extract().asString();
        assertEquals(SimText.expected(SEED, prompt, LENGTH), Sse.content(out));
    }
}
