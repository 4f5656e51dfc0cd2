package dev.hedgerow.sim;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import java.net.http.HttpResponse;
import java.util.List;
import org.junit.jupiter.api.Test;

class SimChatTest extends SimFixture {

    static final long SEED = 42;
    static final String PROMPT = "Tell me about the hedgerow";

    @Override
    SimConfig config() {
        return SimConfig.of(SEED)
                .withModel("m1", ModelScript.defaults().withLength(20))
                .withModel("m2", ModelScript.defaults().withLength(20).withSeed(99)
                        .withLatency(ModelScript.Latency.of(10, 2000)))
                .withModel("plain", ModelScript.defaults().withLength(10).withCapabilities(
                        ModelScript.Capabilities.DEFAULT.withTools(false).withJsonMode(false)
                                .withUsage(ModelScript.UsageMode.NONE)))
                .withModel("vision", ModelScript.defaults().withCapabilities(
                        ModelScript.Capabilities.DEFAULT.withImages(true)));
    }

    @Test
    void streamingTextEqualsExpected() {
        SimHttp.Raw r = http.stream(SimHttp.chat("m1", PROMPT, true));
        assertEquals(200, r.status());
        assertNull(r.error());
        assertTrue(r.headers().firstValue("content-type").orElse("").startsWith("text/event-stream"));
        assertEquals(SimText.expected(SEED, PROMPT, 20), r.content());
        assertTrue(r.endsWithDone());
        List<JsonNode> chunks = r.chunks();
        assertEquals("assistant", chunks.get(0).path("choices").path(0).path("delta").path("role").asText());
        assertEquals("stop", chunks.get(chunks.size() - 1).path("choices").path(0).path("finish_reason").asText());
        assertEquals("chat.completion.chunk", chunks.get(1).path("object").asText());
        assertEquals("m1", chunks.get(1).path("model").asText());
    }

    @Test
    void nonStreamingTextEqualsExpectedWithUsage() {
        HttpResponse<String> r = http.post("/v1/chat/completions", SimHttp.chat("m1", PROMPT, false));
        assertEquals(200, r.statusCode());
        JsonNode body = SimHttp.tree(r.body());
        assertEquals("chat.completion", body.path("object").asText());
        assertEquals(SimText.expected(SEED, PROMPT, 20), body.path("choices").path(0).path("message").path("content").asText());
        assertEquals(20, body.path("usage").path("completion_tokens").asInt());
        // reply priming 3 + one message: 4 (framing and role) + 7 o200k tokens of the prompt
        assertEquals(3 + 4 + 7, body.path("usage").path("prompt_tokens").asInt());
    }

    @Test
    void textDependsOnPromptAndSeedButNotOnModel() {
        SimHttp.Raw a = http.stream(SimHttp.chat("m1", PROMPT, true));
        SimHttp.Raw b = http.stream(SimHttp.chat("m2", PROMPT, true));
        assertEquals(a.content(), b.content());
        assertFalse(a.content().equals(SimText.expected(SEED, "another prompt", 20)));
        assertFalse(a.content().equals(SimText.expected(SEED + 1, PROMPT, 20)));
    }

    @Test
    void maxTokensCutsTheTextAndFinishesWithLength() {
        String body = "{\"model\":\"m1\",\"stream\":true,\"max_tokens\":5,\"messages\":[{\"role\":\"user\",\"content\":\""
                + PROMPT + "\"}]}";
        SimHttp.Raw r = http.stream(body);
        assertEquals(SimText.expected(SEED, PROMPT, 5), r.content());
        List<JsonNode> chunks = r.chunks();
        assertEquals("length", chunks.get(chunks.size() - 1).path("choices").path(0).path("finish_reason").asText());
        String nonStream = body.replace("\"stream\":true", "\"stream\":false").replace("\"max_tokens\"", "\"max_completion_tokens\"");
        JsonNode ns = SimHttp.tree(http.post("/v1/chat/completions", nonStream).body());
        assertEquals(SimText.expected(SEED, PROMPT, 5), ns.path("choices").path(0).path("message").path("content").asText());
    }

    static final String SEVERAL = "{\"model\":\"m1\",\"stream\":true,\"n\":3,\"stream_options\":"
            + "{\"include_usage\":true},\"messages\":[{\"role\":\"user\",\"content\":\"" + PROMPT + "\"}]}";

    /**
     * Several choices ({@code n}) in one stream, as OpenAI streams them: each choice its own deterministic text
     * (choice i is the text of seed + i, so the first is the answer to a request for one), their chunks interleaved
     * (each carrying its index), each choice finished once, and the usage chunk counting every choice.
     */
    @Test
    void severalChoicesStreamInterleavedEachItsOwnTextAndFinish() {
        SimHttp.Raw r = http.stream(SEVERAL);
        assertEquals(200, r.status());
        assertNull(r.error());
        assertTrue(r.endsWithDone());
        StringBuilder[] texts = {new StringBuilder(), new StringBuilder(), new StringBuilder()};
        int[] finishes = new int[3];
        List<Integer> order = new java.util.ArrayList<>();
        JsonNode usage = null;
        for (JsonNode c : r.chunks()) {
            if (c.has("usage")) {
                usage = c.get("usage");
            }
            for (JsonNode choice : c.path("choices")) {
                int i = choice.path("index").asInt();
                String content = choice.path("delta").path("content").asText("");
                texts[i].append(content);
                if (!content.isEmpty()) {
                    order.add(i);
                }
                if (choice.hasNonNull("finish_reason")) {
                    assertEquals("stop", choice.get("finish_reason").asText());
                    finishes[i]++;
                }
            }
        }
        for (int i = 0; i < 3; i++) {
            assertEquals(SimText.expected(SEED + i, PROMPT, 20), texts[i].toString(), "choice " + i);
            assertEquals(1, finishes[i], "choice " + i + " finishes once");
        }
        assertEquals(List.of(0, 1, 2, 0, 1, 2), order.subList(0, 6), "the choices interleave");
        assertNotNull(usage);
        assertEquals(60, usage.path("completion_tokens").asInt(), usage.toString());
    }

    /** A whole answer to {@code n} holds every choice, with its index and text, and usage counting them all. */
    @Test
    void severalChoicesInAWholeAnswer() {
        JsonNode r = SimHttp.tree(http.post("/v1/chat/completions", SEVERAL.replace("\"stream\":true",
                "\"stream\":false")).body());
        assertEquals(3, r.path("choices").size(), r.toString());
        for (int i = 0; i < 3; i++) {
            JsonNode choice = r.path("choices").get(i);
            assertEquals(i, choice.path("index").asInt());
            assertEquals(SimText.expected(SEED + i, PROMPT, 20), choice.path("message").path("content").asText());
            assertEquals("stop", choice.path("finish_reason").asText());
        }
        assertEquals(60, r.path("usage").path("completion_tokens").asInt());
    }

    @Test
    void firstUserMessageSeedsTheTextEvenAfterASystemMessage() {
        String body = "{\"model\":\"m1\",\"messages\":[{\"role\":\"system\",\"content\":\"be brief\"},"
                + "{\"role\":\"user\",\"content\":[{\"type\":\"text\",\"text\":\"" + PROMPT + "\"}]}]}";
        JsonNode r = SimHttp.tree(http.post("/v1/chat/completions", body).body());
        assertEquals(SimText.expected(SEED, PROMPT, 20), r.path("choices").path(0).path("message").path("content").asText());
    }

    @Test
    void unknownModelGets404ErrorEnvelope() {
        HttpResponse<String> r = http.post("/v1/chat/completions", SimHttp.chat("nope", PROMPT, true));
        assertEquals(404, r.statusCode());
        JsonNode err = SimHttp.tree(r.body()).path("error");
        assertEquals("model_not_found", err.path("code").asText());
        assertTrue(err.has("message") && err.has("type") && err.has("param"));
    }

    @Test
    void modelsAreListed() {
        JsonNode r = SimHttp.tree(http.get("/v1/models").body());
        assertEquals("list", r.path("object").asText());
        assertEquals(4, r.path("data").size());
        assertEquals("m1", r.path("data").path(0).path("id").asText());
    }

    @Test
    void streamUsageOnlyWhenIncludeUsageAsked() {
        SimHttp.Raw without = http.stream(SimHttp.chat("m1", PROMPT, true));
        assertTrue(without.chunks().stream().noneMatch(c -> c.has("usage")));
        String with = "{\"model\":\"m1\",\"stream\":true,\"stream_options\":{\"include_usage\":true},"
                + "\"messages\":[{\"role\":\"user\",\"content\":\"" + PROMPT + "\"}]}";
        List<JsonNode> chunks = http.stream(with).chunks();
        JsonNode last = chunks.get(chunks.size() - 1);
        assertEquals(20, last.path("usage").path("completion_tokens").asInt());
        assertEquals(0, last.path("choices").size());
    }

    @Test
    void modelScriptedWithoutUsageNeverSendsIt() {
        String with = "{\"model\":\"plain\",\"stream\":true,\"stream_options\":{\"include_usage\":true},"
                + "\"messages\":[{\"role\":\"user\",\"content\":\"" + PROMPT + "\"}]}";
        assertTrue(http.stream(with).chunks().stream().noneMatch(c -> c.has("usage")));
        JsonNode ns = SimHttp.tree(http.post("/v1/chat/completions", SimHttp.chat("plain", PROMPT, false)).body());
        assertFalse(ns.has("usage"));
    }

    @Test
    void toolCallsAreStreamedWhenToolsAreOffered() {
        String body = "{\"model\":\"m1\",\"stream\":true,\"messages\":[{\"role\":\"user\",\"content\":\"" + PROMPT + "\"}],"
                + "\"tools\":[{\"type\":\"function\",\"function\":{\"name\":\"lookup\",\"parameters\":"
                + "{\"type\":\"object\",\"properties\":{\"query\":{\"type\":\"string\"}}}}}]}";
        List<JsonNode> chunks = http.stream(body).chunks();
        StringBuilder args = new StringBuilder();
        String name = null;
        for (JsonNode c : chunks) {
            JsonNode call = c.path("choices").path(0).path("delta").path("tool_calls").path(0);
            if (call.path("function").has("name")) {
                name = call.path("function").path("name").asText();
                assertTrue(call.path("id").asText().startsWith("call_"));
            }
            args.append(call.path("function").path("arguments").asText(""));
        }
        assertEquals("lookup", name);
        assertEquals(SimText.expected(SEED, PROMPT, 4), SimHttp.tree(args.toString()).path("query").asText());
        assertEquals("tool_calls", chunks.get(chunks.size() - 1).path("choices").path(0).path("finish_reason").asText());
    }

    @Test
    void toolsRejectedByAModelWithoutTools() {
        String body = "{\"model\":\"plain\",\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}],"
                + "\"tools\":[{\"type\":\"function\",\"function\":{\"name\":\"lookup\"}}]}";
        HttpResponse<String> r = http.post("/v1/chat/completions", body);
        assertEquals(400, r.statusCode());
        assertEquals("tools_not_supported", SimHttp.tree(r.body()).path("error").path("code").asText());
    }

    @Test
    void jsonModeContentIsAJsonObject() {
        String body = "{\"model\":\"m1\",\"stream\":true,\"response_format\":{\"type\":\"json_object\"},"
                + "\"messages\":[{\"role\":\"user\",\"content\":\"" + PROMPT + "\"}]}";
        JsonNode obj = SimHttp.tree(http.stream(body).content());
        assertTrue(obj.isObject());
        assertEquals(SimText.expected(SEED, PROMPT, 20), obj.path("text").asText());
        HttpResponse<String> refused = http.post("/v1/chat/completions", body.replace("\"m1\"", "\"plain\""));
        assertEquals(400, refused.statusCode());
    }

    @Test
    void imageInputAcceptedOnlyByImageCapableModel() {
        String body = "{\"model\":\"MODEL\",\"messages\":[{\"role\":\"user\",\"content\":[{\"type\":\"text\",\"text\":\"what is this\"},"
                + "{\"type\":\"image_url\",\"image_url\":{\"url\":\"data:image/png;base64,AAAA\"}}]}]}";
        HttpResponse<String> refused = http.post("/v1/chat/completions", body.replace("MODEL", "m1"));
        assertEquals(400, refused.statusCode());
        assertEquals("image_input_not_supported", SimHttp.tree(refused.body()).path("error").path("code").asText());
        HttpResponse<String> ok = http.post("/v1/chat/completions", body.replace("MODEL", "vision"));
        assertEquals(200, ok.statusCode());
        assertEquals(SimText.expected(SEED, "what is this", 64),
                SimHttp.tree(ok.body()).path("choices").path(0).path("message").path("content").asText());
    }

    @Test
    void apiKeyIsRequiredWhenConfigured() {
        try (SimServer keyed = SimServer.startBlocking(vertx, SimConfig.of(SEED).withApiKey("sk-sim")
                .withModel("m1", ModelScript.defaults()))) {
            SimHttp h = new SimHttp(keyed);
            HttpResponse<String> r = h.post("/v1/chat/completions", SimHttp.chat("m1", PROMPT, false));
            assertEquals(401, r.statusCode());
            assertEquals("invalid_api_key", SimHttp.tree(r.body()).path("error").path("code").asText());
            HttpResponse<String> ok = h.send(java.net.http.HttpRequest.newBuilder(
                            java.net.URI.create(keyed.baseUrl() + "/chat/completions"))
                    .header("Authorization", "Bearer sk-sim")
                    .POST(java.net.http.HttpRequest.BodyPublishers.ofString(SimHttp.chat("m1", PROMPT, false))).build());
            assertEquals(200, ok.statusCode());
            SimStats s = keyed.stats("m1");
            assertEquals(2, s.received());
            assertNull(s.recent().get(0).authorization());
            assertEquals("Bearer sk-sim", s.recent().get(1).authorization());
            assertEquals(SimHttp.chat("m1", PROMPT, false), s.recent().get(1).body());
        }
    }

    @Test
    void ttftFollowsTheScriptedLatency() {
        // A one-token prompt counts 3 + 4 + 1 = 8 prompt tokens: 120 ms + 8 × 20 ms.
        sim.script("slow", ModelScript.defaults().withLength(5).withLatency(
                ModelScript.Latency.of(120, 0).withTtftPer1kPromptTokens(20_000)));
        SimHttp.Raw r = http.stream(SimHttp.chat("slow", "x", true));
        long firstContent = r.elapsedMs();
        assertTrue(firstContent >= 280, "ttft " + firstContent);
        assertTrue(firstContent < 1000, "ttft " + firstContent);
    }

    @Test
    void heavyTailMultipliesTtft() {
        sim.script("tail", ModelScript.defaults().withLength(3).withLatency(
                ModelScript.Latency.of(50, 0).withHeavyTail(1.0, 4)));
        long elapsed = http.stream(SimHttp.chat("tail", "x", true)).elapsedMs();
        assertTrue(elapsed >= 200, "elapsed " + elapsed);
    }

    @Test
    void decodeSpeedPacesTheTokens() {
        sim.script("paced", ModelScript.defaults().withLength(20).withLatency(ModelScript.Latency.of(0, 100)));
        long elapsed = http.stream(SimHttp.chat("paced", PROMPT, true)).elapsedMs();
        // the pacing: 20 tokens at 100 a second cannot all arrive in less than 19 intervals
        assertTrue(elapsed >= 190, "elapsed " + elapsed);
        // the simulator's own speed is measured between the first and last deltas, which are due at fixed times
        // from the start: a first delta delayed by a stalled timer lets the rest catch up, so the measured speed
        // may come out above or below the script's; only that it was measured is asserted, and it is recorded as
        // the exchange ends, which may be just after the client read the last byte
        dev.hedgerow.testsupport.Eventually.eventually(() -> sim.stats("paced").speed().tokensPerSecond() > 0,
                "the decode speed was measured");
    }

    @Test
    void reasoningDeltasComeBeforeContentWithKeepAlivesDuringTheThinkingPause() {
        sim.script("thinker", ModelScript.defaults().withLength(5).withReasoning(new ModelScript.Reasoning(4, 120, 30)));
        SimHttp.Raw r = http.stream(SimHttp.chat("thinker", PROMPT, true));
        String text = r.text();
        int lastReasoning = text.lastIndexOf("reasoning_content");
        int firstKeepAlive = text.indexOf(": keep-alive\n\n");
        int firstContent = text.indexOf("\"content\":\"" + SimText.tokens(SEED, PROMPT, 1).get(0));
        assertTrue(lastReasoning > 0 && lastReasoning < firstKeepAlive && firstKeepAlive < firstContent, text);
        assertTrue(r.data().size() > 0);
        int keepAlives = text.split(": keep-alive\n\n", -1).length - 1;
        assertEquals(3, keepAlives);
        StringBuilder reasoning = new StringBuilder();
        r.chunks().forEach(c -> reasoning.append(c.path("choices").path(0).path("delta").path("reasoning_content").asText("")));
        assertEquals(String.join("", SimText.reasoningTokens(SEED, PROMPT, 4)), reasoning.toString());
        assertEquals(SimText.expected(SEED, PROMPT, 5), r.content());
        assertTrue(r.elapsedMs() >= 120);
    }

    @Test
    void embeddingsOfRelatedTextsHaveHigherCosine() {
        String body = "{\"model\":\"m1\",\"input\":[\"the quick brown fox jumps\",\"a quick brown fox leaps\","
                + "\"quarterly revenue report for finance\"]}";
        JsonNode r = SimHttp.tree(http.post("/v1/embeddings", body).body());
        assertEquals(3, r.path("data").size());
        assertEquals(5 + 5 + 6, r.path("usage").path("prompt_tokens").asInt(), "o200k tokens of the inputs");
        float[][] v = new float[3][];
        for (int i = 0; i < 3; i++) {
            JsonNode e = r.path("data").path(i).path("embedding");
            assertEquals(SimEmbeddings.DIMENSION, e.size());
            v[i] = new float[e.size()];
            for (int j = 0; j < e.size(); j++) {
                v[i][j] = (float) e.get(j).asDouble();
            }
        }
        double related = SimEmbeddings.cosine(v[0], v[1]);
        double unrelated = SimEmbeddings.cosine(v[0], v[2]);
        assertTrue(related > 0.5, "related " + related);
        assertTrue(related > unrelated + 0.3, related + " vs " + unrelated);
        assertEquals(1.0, SimEmbeddings.cosine(v[0], v[0]), 1e-5);
    }

    @Test
    void embeddingsInBase64AreLittleEndianFloat32AndTokenIdsAreOneInputPerArray() {
        JsonNode b64 = SimHttp.tree(http.post("/v1/embeddings",
                "{\"model\":\"m1\",\"input\":\"fox\",\"encoding_format\":\"base64\",\"dimensions\":4}").body());
        byte[] raw = java.util.Base64.getDecoder().decode(b64.path("data").path(0).path("embedding").asText());
        java.nio.FloatBuffer floats = java.nio.ByteBuffer.wrap(raw).order(java.nio.ByteOrder.LITTLE_ENDIAN)
                .asFloatBuffer();
        float[] expected = SimEmbeddings.embed("fox", 4);
        assertEquals(4, floats.remaining());
        for (float f : expected) {
            assertEquals(f, floats.get());
        }
        JsonNode one = SimHttp.tree(http.post("/v1/embeddings", "{\"model\":\"m1\",\"input\":[5,6,7]}").body());
        assertEquals(1, one.path("data").size());
        assertEquals(3, one.path("usage").path("prompt_tokens").asInt());
        JsonNode two = SimHttp.tree(http.post("/v1/embeddings", "{\"model\":\"m1\",\"input\":[[5,6],[7]]}")
                .body());
        assertEquals(2, two.path("data").size());
        assertEquals(3, two.path("usage").path("prompt_tokens").asInt());
    }

    /** A script's embeddings_encoding answers one form whatever encoding_format asks, as some servers do. */
    @Test
    void aModelThatIgnoresEncodingFormatAnswersItsOwnForm() {
        sim.script("floats", ModelScript.defaults().withCapabilities(ModelScript.Capabilities.DEFAULT
                .withEmbeddingsEncoding(ModelScript.EmbeddingsEncoding.FLOAT)));
        sim.script("b64", SimJson.readScript("{\"capabilities\":{\"embeddings_encoding\":\"BASE64\"}}"));
        JsonNode floats = SimHttp.tree(http.post("/v1/embeddings",
                "{\"model\":\"floats\",\"input\":\"fox\",\"encoding_format\":\"base64\"}").body());
        assertTrue(floats.path("data").path(0).path("embedding").isArray(), floats.toString());
        for (String format : new String[]{"", ",\"encoding_format\":\"float\""}) {
            JsonNode b64 = SimHttp.tree(http.post("/v1/embeddings",
                    "{\"model\":\"b64\",\"input\":\"fox\"" + format + "}").body());
            assertTrue(b64.path("data").path(0).path("embedding").isTextual(), b64.toString());
        }
    }
}
