package dev.hedgerow.routing;

import dev.hedgerow.api.ChatRequest;
import org.junit.jupiter.api.Test;

import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.Map;
import java.util.Set;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** {@link RequestFacts#of}: the facts the gateway routes on and the console explains, from one parsed request. */
class RequestFactsTest {
    static final TokenCounter TOKENS = TokenCounter.shared();
    static final PrefixHasher PREFIXES = new PrefixHasher(TOKENS, 4, 8);

    static ChatRequest chat(String json) {
        return ChatRequest.parse(json.getBytes(StandardCharsets.UTF_8), null);
    }

    @Test
    void derivesEveryNeedTheBodyAsksFor() {
        RequestFacts f = RequestFacts.of(chat("""
                {"model":"duo","stream":true,"max_tokens":64,"temperature":0.2,"reasoning_effort":"none",
                 "response_format":{"type":"json_object"},
                 "tools":[{"type":"function","function":{"name":"f","parameters":{}}}],
                 "messages":[{"role":"user","content":[{"type":"text","text":"look"},
                   {"type":"image_url","image_url":{"url":"https://example.com/a.png"}}]}]}
                """), TOKENS, PREFIXES, Map.of("x-user", "u1"));
        assertEquals(Set.of("tools", "json_mode", "images", "reasoning_off"), f.needs());
        assertTrue(f.parameters().containsAll(Set.of("max_tokens", "temperature")), f.parameters().toString());
        assertTrue(f.stream());
        assertFalse(f.reasoning());
        assertEquals(64, f.maxTokens());
        assertEquals(Map.of("x-user", "u1"), f.headers());
        assertEquals("look", f.lastUserText());
    }

    @Test
    void countsThePromptAndHashesItsPrefixInTheAliasNamespace() {
        String body = "{\"model\":\"%s\",\"messages\":[{\"role\":\"user\",\"content\":\"" + "tide ".repeat(40)
                + "\"}]}";
        RequestFacts duo = RequestFacts.of(chat(body.formatted("duo")), TOKENS, PREFIXES, Map.of());
        RequestFacts solo = RequestFacts.of(chat(body.formatted("solo")), TOKENS, PREFIXES, Map.of());
        assertEquals(TOKENS.countRequest(chat(body.formatted("duo")).body()), duo.promptTokens());
        assertTrue(duo.promptTokens() > 40, String.valueOf(duo.promptTokens()));
        assertEquals(PREFIXES.hashRequest("duo", chat(body.formatted("duo")).body()), duo.prefixHashes());
        assertFalse(duo.prefixHashes().isEmpty());
        assertFalse(duo.prefixHashes().stream().anyMatch(solo.prefixHashes()::contains),
                "one alias's prefix cache is not another's");
        assertEquals(List.of(), RequestFacts.of(chat("{\"model\":\"duo\",\"messages\":[{\"role\":\"user\","
                + "\"content\":\"hi\"}]}"), TOKENS, PREFIXES, Map.of()).needs().stream().toList());
    }
}
