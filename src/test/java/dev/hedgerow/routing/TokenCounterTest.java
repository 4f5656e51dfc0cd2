package dev.hedgerow.routing;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.hedgerow.testsupport.AtOnce;
import org.junit.jupiter.api.Test;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

class TokenCounterTest {
    private static final ObjectMapper JSON = new ObjectMapper();
    private final TokenCounter counter = TokenCounter.shared();

    private static JsonNode json(String s) throws Exception {
        return JSON.readTree(s);
    }

    @Test
    void usesO200kBase() {
        assertEquals("o200k_base", counter.encodingName());
    }

    @Test
    void countsPlainText() {
        assertEquals(0, counter.countText(""));
        assertEquals(0, counter.countText(null));
        assertEquals(2, counter.countText("Hello world"));
    }

    /**
     * A long text is tokenized in slices cut where the tokenizer's own pre-split cuts (before a word's space), so
     * the count is the whole text's: prose with numbers, punctuation, line breaks and non-Latin words.
     */
    @Test
    void aLongTextCountedInSlicesCountsAsTheWholeText() {
        StringBuilder sb = new StringBuilder();
        java.util.Random r = new java.util.Random(7);
        String[] words = {"the", "gateway", "routes", "42", "requests,", "résumé", "日本語の", "text.\n", "don't",
                "(hedged)", "1234567", "—", "naïve"};
        while (sb.length() < 5 * TokenCounter.SLICE + 123) {
            sb.append(words[r.nextInt(words.length)]).append(r.nextInt(9) == 0 ? "  " : " ");
        }
        String text = sb.toString();
        int whole = com.knuddels.jtokkit.Encodings.newLazyEncodingRegistry()
                .getEncoding(com.knuddels.jtokkit.api.EncodingType.O200K_BASE).countTokensOrdinary(text);
        assertEquals(whole, counter.countText(text));
    }

    /**
     * The head of a text within a token budget (what semantic routing embeds of a long prompt): whole tokens, as many
     * as fit, across slices; the text itself when it fits; a spaceless run costs no more than its head.
     */
    @Test
    void aHeadWithinATokenBudgetTakesAsManyTokensAsFit() {
        StringBuilder sb = new StringBuilder();
        java.util.Random r = new java.util.Random(11);
        String[] words = {"the", "gateway", "routes", "42", "requests,", "résumé", "日本語の", "text.\n", "naïve"};
        while (sb.length() < 3 * TokenCounter.SLICE) {
            sb.append(words[r.nextInt(words.length)]).append(' ');
        }
        String text = sb.toString();
        int whole = counter.countText(text);
        assertEquals(text, counter.head(text, whole));
        assertEquals("Hello world", counter.head("Hello world", 2));
        assertEquals("Hello", counter.head("Hello world", 1));
        for (int max : new int[] {1, 700, 2500, whole - 1}) {
            String head = counter.head(text, max);
            assertTrue(text.startsWith(head));
            int tokens = counter.countText(head);
            assertTrue(tokens <= max && tokens >= max - 1, max + " -> " + tokens);
        }
        String spaceless = "x".repeat(8 * 1024 * 1024);
        assertEquals(8191, counter.countText(counter.head(spaceless, 8191)), 1);
    }

    /**
     * The inputs of one embeddings request share one exact budget, as a chat request's messages do: past
     * {@link TokenCounter#MAX_EXACT_CHARS} chars, an input is estimated at the tokens per char counted so far
     * (found by review6: every input was counted exactly, however large the batch).
     */
    @Test
    void anEmbeddingsBatchSharesOneExactBudget() {
        String prose = "hello world ".repeat(TokenCounter.MAX_EXACT_CHARS / 12);   // 2 tokens per 12 chars
        String digits = "7".repeat(90_000);                                         // 1 token per 3 chars exactly
        var count = counter.sharingOneBudget();
        assertEquals(counter.countText(prose), count.applyAsInt(prose));
        int left = TokenCounter.MAX_EXACT_CHARS - prose.length();
        int estimated = count.applyAsInt(digits);
        double perChar = (counter.countText(prose) + counter.countText(digits.substring(0, left)))
                / (double) (prose.length() + left);
        assertEquals(counter.countText(digits.substring(0, left))
                + (int) Math.ceil((digits.length() - left) * perChar), estimated);
        assertTrue(estimated < counter.countText(digits), "the part past the budget is estimated, not counted");
    }

    @Test
    void countsSpecialTokenMarkersAsOrdinaryText() {
        assertTrue(counter.countText("a <|endoftext|> b") > 3);
    }

    @Test
    void countsChatLikeOpenAiCookbookExample() throws Exception {
        // openai-cookbook "How to count tokens with tiktoken": gpt-4o reports 124 prompt tokens for these messages
        JsonNode req = json("""
                {"model":"gpt-4o","messages":[
                 {"role":"system","content":"You are a helpful, pattern-following assistant that translates corporate jargon into plain English."},
                 {"role":"system","name":"example_user","content":"New synergies will help drive top-line growth."},
                 {"role":"system","name":"example_assistant","content":"Things working well together will increase revenue."},
                 {"role":"system","name":"example_user","content":"Let's circle back when we have more time to touch base on opportunities for increased leverage."},
                 {"role":"system","name":"example_assistant","content":"Let's talk later when we're less busy about how to do better."},
                 {"role":"user","content":"This late pivot means we don't have time to boil the ocean for the client deliverable."}]}
                """);
        assertEquals(124, counter.countRequest(req));
    }

    /**
     * What a route reads before it answers: a chat request's prompt, an embeddings request's inputs, all of them (the
     * size its latency is learnt and predicted by), counted as the gateway's embeddings facts count them.
     */
    @Test
    void anEmbeddingsRequestsInputIsEveryInputsTokens() throws Exception {
        JsonNode chat = json("{\"messages\":[{\"role\":\"user\",\"content\":\"Hello world\"}],\"input\":\"x\"}");
        assertEquals(counter.countRequest(chat), counter.countInput(chat));
        int hello = counter.countText("Hello world");
        int bye = counter.countText("Goodbye, cruel world");
        assertEquals(hello, counter.countInput(json("{\"input\":\"Hello world\"}")));
        assertEquals(hello + bye, counter.countInput(json("{\"input\":[\"Hello world\",\"Goodbye, cruel world\"]}")));
        assertEquals(3, counter.countInput(json("{\"input\":[1,2,3]}")));
        assertEquals(5, counter.countInput(json("{\"input\":[[1,2,3],[4,5]]}")));
        for (String body : new String[]{"{\"input\":\"Hello world\"}",
                "{\"input\":[\"Hello world\",\"Goodbye, cruel world\"]}", "{\"input\":[[1,2,3],[4,5]]}"}) {
            String withModel = body.replace("{", "{\"model\":\"m\",");
            RequestFacts facts = RequestFacts.of(dev.hedgerow.api.EmbeddingsRequest.parse(
                    withModel.getBytes(java.nio.charset.StandardCharsets.UTF_8), null, a -> a), counter,
                    java.util.Map.of());
            assertEquals(counter.countInput(json(body)), facts.inputTokens(), body);
        }
    }

    @Test
    void addsFramingPerMessageAndReplyPriming() throws Exception {
        JsonNode req = json("{\"messages\":[{\"role\":\"user\",\"content\":\"Hello world\"}]}");
        int expected = TokenCounter.REPLY_PRIMING + TokenCounter.TOKENS_PER_MESSAGE + counter.countText("user")
                + counter.countText("Hello world");
        assertEquals(expected, counter.countRequest(req));
    }

    @Test
    void contentPartsCountTheirTextLikeAStringDoes() throws Exception {
        JsonNode asString = json("{\"role\":\"user\",\"content\":\"Hello world, again\"}");
        JsonNode asParts = json("""
                {"role":"user","content":[{"type":"text","text":"Hello world,"},{"type":"text","text":" again"}]}
                """);
        assertEquals(counter.countText("Hello world,") + counter.countText(" again"),
                counter.countContent(asParts.get("content")));
        assertTrue(Math.abs(counter.countMessage(asString) - counter.countMessage(asParts)) <= 1);
    }

    @Test
    void imagePartsCountAFixedAmountByDetail() throws Exception {
        JsonNode content = json("""
                [{"type":"image_url","image_url":{"url":"data:image/png;base64,AAAA","detail":"low"}},
                 {"type":"image_url","image_url":{"url":"https://example.com/cat.png"}}]
                """);
        assertEquals(TokenCounter.IMAGE_TOKENS_LOW + TokenCounter.IMAGE_TOKENS_HIGH, counter.countContent(content));
    }

    @Test
    void toolDefinitionsAndToolCallsAddTokens() throws Exception {
        JsonNode plain = json("{\"messages\":[{\"role\":\"user\",\"content\":\"weather?\"}]}");
        JsonNode withTools = json("""
                {"messages":[{"role":"user","content":"weather?"},
                  {"role":"assistant","content":null,"tool_calls":[{"id":"c1","type":"function",
                    "function":{"name":"get_weather","arguments":"{\\"city\\":\\"Paris\\"}"}}]}],
                 "tools":[{"type":"function","function":{"name":"get_weather","parameters":{"type":"object"}}}]}
                """);
        assertTrue(counter.countRequest(withTools) > counter.countRequest(plain) + 20);
    }

    @Test
    void malformedRequestsCountOnlyFraming() throws Exception {
        assertEquals(TokenCounter.REPLY_PRIMING, counter.countRequest(json("{}")));
        assertEquals(TokenCounter.REPLY_PRIMING, counter.countRequest(json("[1,2]")));
        assertEquals(TokenCounter.REPLY_PRIMING + TokenCounter.TOKENS_PER_MESSAGE,
                counter.countRequest(json("{\"messages\":[7]}")));
    }

    @Test
    void encodeLeadingStopsAtTheLimitWithTheSameIdsAsTheWholeText() {
        String text = "The quick brown fox jumps over the lazy dog. ".repeat(200);
        int[] head = counter.encodeLeading(text, 50);
        int[] more = counter.encodeLeading(text, 500);
        assertEquals(50, head.length);
        for (int i = 0; i < head.length; i++) {
            assertEquals(more[i], head[i]);
        }
    }

    @Test
    void aRememberedCountIsTheCountOfThatExactString() {
        // more strings than slots, twice over: each one still counts as the tokenizer counts it, never as another
        // string that shared its slot
        for (int round = 0; round < 2; round++) {
            for (int i = 0; i < TokenCounter.RECENT * 3; i++) {
                String text = "prompt " + i + " " + "word ".repeat(i % 7);
                assertEquals(counter.countText(text), counter.countRemembered(text), text);
            }
        }
        assertEquals(0, counter.countRemembered(""));
        assertEquals(0, counter.countRemembered(null));
        String longText = "long ".repeat(TokenCounter.MAX_REMEMBERED);
        assertEquals(counter.countText(longText), counter.countRemembered(longText), "past the memory's limit");
    }

    @Test
    void aRepeatedSystemPromptCountsTheSameEveryTime() throws Exception {
        String system = "You are a careful assistant. ".repeat(40);
        JsonNode a = json("{\"messages\":[{\"role\":\"system\",\"content\":\"" + system
                + "\"},{\"role\":\"user\",\"content\":\"first question\"}]}");
        JsonNode b = json("{\"messages\":[{\"role\":\"system\",\"content\":\"" + system
                + "\"},{\"role\":\"user\",\"content\":\"a second, longer question\"}]}");
        int expectedA = TokenCounter.REPLY_PRIMING + 2 * TokenCounter.TOKENS_PER_MESSAGE + counter.countText("system")
                + counter.countText(system) + counter.countText("user") + counter.countText("first question");
        int expectedB = expectedA - counter.countText("first question")
                + counter.countText("a second, longer question");
        for (int i = 0; i < 3; i++) {
            assertEquals(expectedA, counter.countRequest(a));
            assertEquals(expectedB, counter.countRequest(b));
        }
    }

    @Test
    void threadsSharingTheMemoryEachGetTheirOwnCounts() throws Exception {
        assertEquals(0, AtOnce.failures(4, 5_000, n -> {
            String text = "thread " + n / 5_000 + " says" + " again".repeat(n % 5) + " " + (n % 300);
            return counter.countRemembered(text) == counter.countText(text);
        }));
    }
}
