package dev.hedgerow.function.gateway;

import com.openai.client.OpenAIClient;
import com.openai.client.okhttp.OpenAIOkHttpClient;
import com.openai.core.http.StreamResponse;
import com.openai.errors.NotFoundException;
import com.openai.helpers.ChatCompletionAccumulator;
import com.openai.errors.UnauthorizedException;
import com.openai.models.chat.completions.ChatCompletion;
import com.openai.models.chat.completions.ChatCompletionChunk;
import com.openai.models.chat.completions.ChatCompletionCreateParams;
import com.openai.models.chat.completions.ChatCompletionStreamOptions;
import dev.hedgerow.sim.ModelScript;
import dev.hedgerow.sim.SimConfig;
import dev.hedgerow.sim.SimText;
import dev.hedgerow.testsupport.GatewayHarness;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

import java.util.HashSet;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.atomic.AtomicLong;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** Wire compatibility with the official OpenAI Java SDK, streaming and not. */
class OpenAiSdkCompatibilityTest {
    static final long SEED = 3;
    static final String YAML = """
            orgs:
              - id: acme
                keys: [{ name: app, key: "k-sdk" }]
                providers:
                  - { id: alpha, base_url: "${SIM_ALPHA_URL}" }
                routes:
                  - { alias: chat, provider: alpha, model: alpha-model }
            """;
    static GatewayHarness gw;
    static OpenAIClient client;

    @BeforeAll
    static void start() {
        gw = GatewayHarness.start(YAML, Map.of("alpha", SimConfig.of(SEED).withModel("alpha-model",
                ModelScript.defaults().withLength(30).withLatency(ModelScript.Latency.of(5, 0)))));
        client = OpenAIOkHttpClient.builder().apiKey("k-sdk").baseUrl(gw.baseUrl() + "/v1").maxRetries(0).build();
    }

    @AfterAll
    static void stop() {
        client.close();
        gw.close();
    }

    private static ChatCompletionCreateParams params(String model, String prompt) {
        return ChatCompletionCreateParams.builder().model(model).addUserMessage(prompt).build();
    }

    @Test
    void nonStreamingCompletionParses() {
        ChatCompletion c = client.chat().completions().create(params("chat", "sdk please"));
        assertEquals(SimText.expected(SEED, "sdk please", 30), c.choices().get(0).message().content().orElseThrow());
        assertEquals("alpha-model", c.model());
        assertTrue(c.usage().orElseThrow().totalTokens() > 0);
    }

    @Test
    void streamingCompletionParsesWithUsage() {
        ChatCompletionCreateParams p = params("chat", "stream via sdk").toBuilder()
                .streamOptions(ChatCompletionStreamOptions.builder().includeUsage(true).build()).build();
        StringBuilder text = new StringBuilder();
        Set<String> ids = new HashSet<>();
        AtomicLong usage = new AtomicLong();
        try (StreamResponse<ChatCompletionChunk> s = client.chat().completions().createStreaming(p)) {
            s.stream().forEach(chunk -> {
                ids.add(chunk.id());
                chunk.choices().forEach(ch -> ch.delta().content().ifPresent(text::append));
                chunk.usage().ifPresent(u -> usage.set(u.completionTokens()));
            });
        }
        assertEquals(SimText.expected(SEED, "stream via sdk", 30), text.toString());
        assertEquals(1, ids.size());
        assertTrue(usage.get() > 0);
    }

    /**
     * Several choices in one stream ({@code n: 2}), put together by the SDK's own accumulator: every choice whole with
     * its index and finish, the usage counting both (the simulator's choice i is the text of its seed + i).
     */
    @Test
    void aStreamOfSeveralChoicesAccumulatesIntoEveryChoice() {
        ChatCompletionCreateParams p = params("chat", "two via sdk").toBuilder().n(2)
                .streamOptions(ChatCompletionStreamOptions.builder().includeUsage(true).build()).build();
        ChatCompletionAccumulator acc = ChatCompletionAccumulator.create();
        try (StreamResponse<ChatCompletionChunk> s = client.chat().completions().createStreaming(p)) {
            s.stream().forEach(acc::accumulate);
        }
        ChatCompletion c = acc.chatCompletion();
        assertEquals(2, c.choices().size());
        for (int i = 0; i < 2; i++) {
            ChatCompletion.Choice choice = c.choices().get(i);
            assertEquals(i, choice.index());
            assertEquals(SimText.expected(SEED + i, "two via sdk", 30), choice.message().content().orElseThrow());
            assertEquals(ChatCompletion.Choice.FinishReason.STOP, choice.finishReason());
        }
        assertEquals(60, c.usage().orElseThrow().completionTokens());
    }

    @Test
    void errorsMapToTheSdksExceptions() {
        assertThrows(NotFoundException.class, () -> client.chat().completions().create(params("nope", "x")));
        OpenAIClient wrong = OpenAIOkHttpClient.builder().apiKey("bad").baseUrl(gw.baseUrl() + "/v1").maxRetries(0)
                .build();
        assertThrows(UnauthorizedException.class, () -> wrong.chat().completions().create(params("chat", "x")));
        wrong.close();
    }

    @Test
    void listsModels() {
        assertEquals("chat", client.models().list().data().get(0).id());
    }
}
