package dev.hedgerow.function.gateway;

import com.fasterxml.jackson.databind.ObjectMapper;
import dev.hedgerow.sim.SimEmbeddings;
import dev.hedgerow.sim.SimText;
import dev.hedgerow.testsupport.AppTestResource;
import dev.hedgerow.testsupport.NodeScript;
import io.quarkus.test.common.QuarkusTestResource;
import io.quarkus.test.common.http.TestHTTPResource;
import io.quarkus.test.junit.QuarkusTest;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.Test;

import java.net.URL;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * The official OpenAI Node SDK ({@code openai}, pinned in {@code src/test/sdk/package.json}) against the real
 * application, as a user's code drives it: {@code src/test/sdk/sdk.spec.mjs} lists the models, completes with and
 * without streaming (the usage chunk, the {@code chat.completions.stream()} helper that checks chunk shapes
 * strictly), accumulates a streamed tool call and runs the SDK's tool runner, gets the SDK's error classes (404,
 * 400 with {@code param}, 401, and a 503 whose {@code Retry-After} its retries wait for), reads one stream across a
 * mid-stream resume (cut inside a multi-byte character) byte-exact with no seam, and aborts a stream with an
 * {@code AbortController}, which the gateway logs as 499, and embeds with {@code embeddings.create} (the base64
 * answer the SDK asks for by default and decodes itself, and floats). The expected texts are the simulator's deterministic
 * answers, computed here and handed to the script. Skipped, with a message, only when node is absent.
 */
@QuarkusTest
@QuarkusTestResource(value = AppTestResource.class, restrictToAnnotatedClass = false)
class OpenAiNodeSdkTest {
    static final int LENGTH = 24;
    /** The resumed stream is cut at the first non-ASCII character at or after this many tokens. */
    static final int CUT_AFTER = 8;

    @TestHTTPResource("/")
    URL base;

    @Test
    void theOfficialNodeSdkWorksAgainstTheGateway() throws Exception {
        Assumptions.assumeTrue(NodeScript.nodeOnPath(), "node is absent: the OpenAI Node SDK test needs node and npm "
                + "(scripts/browser-deps installs them with the SDK)");
        Path dir = Path.of("src/test/sdk");
        NodeScript.installIfMissing(dir, "openai");
        String expect = new ObjectMapper().writeValueAsString(expectations());
        NodeScript.Result r = NodeScript.run(List.of("node", "sdk.spec.mjs", base.toString().replaceAll("/$", ""),
                        AppTestResource.sims().get("alpha").rootUrl(), AppTestResource.sims().get("beta").rootUrl()),
                dir, Map.of("HEDGEROW_SDK_EXPECT", expect), NodeScript.PATIENCE_SECONDS);
        System.out.println(r.output());
        assertEquals(0, r.exit(), r.output());
        assertTrue(r.output().contains("sdk: all checks passed"), r.output());
    }

    /** The prompts the script sends and the simulator's answers to them (its text depends on the prompt only). */
    static Map<String, Object> expectations() {
        Map<String, Object> e = new LinkedHashMap<>();
        String plain = "sdk: hello from the Node SDK";
        e.put("plain", Map.of("prompt", plain, "text", text(plain), "completion_tokens", LENGTH));
        String two = "sdk: two choices, one stream";
        // the simulator's choice i is the text of its seed + i
        e.put("two", Map.of("prompt", two, "texts", List.of(text(two),
                SimText.expected(AppTestResource.SEED + 1, two, LENGTH))));
        String tools = "sdk: the weather, please";
        e.put("tools", Map.of("prompt", tools, "text", text(tools),
                // the simulator's tool call: the first tool's first property, set to the answer's first 4 tokens
                "city", String.join("", SimText.tokens(AppTestResource.SEED, tools, 4))));
        String out = "sdk: every route is out";
        e.put("out", Map.of("prompt", out, "text", text(out)));
        String resume = resumablePrompt();
        e.put("resume", Map.of("prompt", resume, "text", text(resume), "after_tokens", CUT_AFTER));
        String cut = "sdk: cut me off";
        e.put("cut", Map.of("prompt", cut, "text", SimText.expected(AppTestResource.SEED, cut, 3)));
        String abort = "sdk: abort me";
        e.put("abort", Map.of("prompt", abort, "text", text(abort)));
        List<String> inputs = List.of("sdk: embed the quick brown fox", "sdk: and the lazy dog");
        e.put("embed", Map.of("inputs", inputs,
                "vectors", inputs.stream().map(i -> SimEmbeddings.embed(i, SimEmbeddings.DIMENSION)).toList(),
                "eight", SimEmbeddings.embed(inputs.get(0), 8)));
        return e;
    }

    private static String text(String prompt) {
        return SimText.expected(AppTestResource.SEED, prompt, LENGTH);
    }

    /** A prompt whose answer has a multi-byte character after {@link #CUT_AFTER} tokens and before its last token. */
    private static String resumablePrompt() {
        for (int i = 0; ; i++) {
            String p = "sdk: resume me " + i;
            List<String> tokens = SimText.tokens(AppTestResource.SEED, p, LENGTH);
            for (int t = CUT_AFTER; t < LENGTH - 1; t++) {
                String tok = tokens.get(t);
                if (tok.getBytes(StandardCharsets.UTF_8).length != tok.length()) {
                    return p;
                }
            }
        }
    }
}
