package dev.hedgerow.function.gateway;

import dev.hedgerow.routing.TokenCounter;
import dev.hedgerow.sim.ModelScript;
import dev.hedgerow.sim.SimConfig;
import dev.hedgerow.testsupport.GatewayHarness;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

import java.util.Map;

import static io.restassured.RestAssured.given;
import static org.hamcrest.Matchers.containsString;
import static org.hamcrest.Matchers.equalTo;
import static org.junit.jupiter.api.Assertions.assertNotEquals;

/**
 * A prompt of megabytes is tokenized exactly for its first {@link TokenCounter#MAX_EXACT_CHARS} chars only, the
 * rest estimated at the ratio of what was counted: BPE at ~0.4 µs a char would otherwise spend seconds of a worker's
 * CPU on each such request. Over real HTTP, with an 8 MiB body limit as the packaged app has.
 */
class HugePromptTest {
    static final String YAML = """
            orgs:
              - id: acme
                keys: [{ name: app, key: "k-acme" }]
                providers:
                  - { id: alpha, base_url: "${SIM_ALPHA_URL}" }
                routes:
                  - { alias: chat, provider: alpha, model: m, context_window: 100000 }
            """;

    static GatewayHarness gw;

    @BeforeAll
    static void start() {
        gw = GatewayHarness.startWithBodyLimit(YAML, Map.of("alpha", SimConfig.of(1).withModel("m",
                ModelScript.defaults().withLength(4))), 8 * 1024 * 1024);
    }

    @AfterAll
    static void stop() {
        gw.close();
    }

    @Test
    void textPastTheExactBudgetIsEstimatedAtTheCountedRatioAndRoutedOnIt() {
        // ~1.05 M chars of Latin text (3 chars a token), then 1 M chars of one CJK character (1-2 a token)
        String content = "ab ".repeat(350_000) + "日".repeat(1_000_000);
        TokenCounter tokens = TokenCounter.shared();
        int head = TokenCounter.MAX_EXACT_CHARS - "user".length(); // the role string is counted first
        long exactTokens = tokens.countText("user") + tokens.countText(content.substring(0, head));
        long exactChars = "user".length() + head;
        long estimate = (long) Math.ceil((double) (content.length() - head) * exactTokens / exactChars);
        long expected = TokenCounter.REPLY_PRIMING + TokenCounter.TOKENS_PER_MESSAGE + exactTokens + estimate;
        assertNotEquals(expected, TokenCounter.REPLY_PRIMING + TokenCounter.TOKENS_PER_MESSAGE
                + tokens.countText("user") + tokens.countText(content), "the tail's ratio differs from the head's");

        given().baseUri(gw.baseUrl()).auth().oauth2("k-acme").contentType("application/json")
                .body("{\"model\":\"chat\",\"messages\":[{\"role\":\"user\",\"content\":\"" + content + "\"}]}")
                .post("/v1/chat/completions").then().statusCode(400)
                .body("error.code", equalTo("context_length_exceeded"))
                .body("error.message", containsString("maximum context length is 100000 tokens. However, you"
                        + " requested " + expected + " tokens"));
    }

    /**
     * A body over the size the event loop parses itself is parsed on a worker (megabytes of JSON held a loop, and
     * every other org's requests on it, for seconds; hunt29-d), and its refusals are the same as a small body's.
     */
    @Test
    void aLargeBodyParsedOffTheLoopIsRefusedAsASmallOneIs() {
        String pad = "x".repeat(64 * 1024);
        given().baseUri(gw.baseUrl()).auth().oauth2("k-acme").contentType("application/json")
                .body("{\"model\":\"nope\",\"messages\":[{\"role\":\"user\",\"content\":\"" + pad + "\"}]}")
                .post("/v1/chat/completions").then().statusCode(404)
                .body("error.code", equalTo("model_not_found"))
                .body("error.message", containsString("nope"));
        given().baseUri(gw.baseUrl()).auth().oauth2("k-acme").contentType("application/json")
                .body("{\"model\":\"chat\",\"temperature\":3,\"messages\":[{\"role\":\"user\",\"content\":\""
                        + pad + "\"}]}")
                .post("/v1/chat/completions").then().statusCode(400)
                .body("error.param", equalTo("temperature"));
        given().baseUri(gw.baseUrl()).auth().oauth2("k-acme").contentType("application/json")
                .body("{\"model\":\"chat\",\"messages\":[{\"role\":\"user\",\"content\":\"" + pad
                        + "\\ud83d\"}]}")
                .post("/v1/chat/completions").then().statusCode(400);
        given().baseUri(gw.baseUrl()).auth().oauth2("k-acme").contentType("application/json")
                .body("{\"model\":\"chat\",\"messages\":[{\"role\":\"user\",\"content\":\"" + pad + "\"}]}")
                .post("/v1/chat/completions").then().statusCode(200);
    }
}
