package dev.hedgerow.dispatch;

import dev.hedgerow.api.Json;
import org.junit.jupiter.api.Test;

import java.nio.charset.StandardCharsets;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * An embeddings answer relayed as the provider wrote it: every field but {@code model}, {@code provider} and
 * {@code usage} copied byte for byte (floats in their own spelling, base64 strings, fields the gateway does not know),
 * the gateway's model, provider and usage added, and anything that is not one JSON object with a {@code data} array
 * refused.
 */
class EmbeddingsReplyTest {

    private static EmbeddingsReply.Relayed relay(String body) {
        return EmbeddingsReply.relay(body.getBytes(StandardCharsets.UTF_8), "nomic-embed", "fire\"works", () -> 7);
    }

    private static String text(EmbeddingsReply.Relayed r) {
        assertNull(r.invalid(), r.invalid());
        assertNull(r.error(), r.error());
        String s = new String(r.body(), StandardCharsets.UTF_8);
        try {
            Json.parse(r.body()); // one valid JSON document
        } catch (java.io.IOException e) {
            throw new AssertionError(s, e);
        }
        return s;
    }

    @Test
    void floatsAndUnknownFieldsAreCopiedAsWrittenAndModelProviderAndUsageAreTheGateways() {
        String data = "[{\"object\":\"embedding\",\"index\":0,\"embedding\":[1e-7,-0.0,0.10000000149011612,"
                + "3.4028235E38,-1]}]";
        String body = "{\"model\":\"upstream-name\",\"object\":\"list\",\"data\":" + data
                + ",\"provider\":\"theirs\",\"usage\":{\"prompt_tokens\":3,\"total_tokens\":3},"
                + "\"x_extra\":{\"nested\":[1,{\"a\":\"é 東京\"}]}}";
        assertEquals("{\"object\":\"list\",\"data\":" + data + ",\"x_extra\":{\"nested\":[1,{\"a\":\"é 東京\"}]},"
                + "\"model\":\"nomic-embed\",\"provider\":\"fire\\\"works\","
                + "\"usage\":{\"prompt_tokens\":3,\"total_tokens\":3}}", text(relay(body)));
        assertEquals(3, relay(body).promptTokens(), "the provider's count is billed");
    }

    @Test
    void aPrettyPrintedAnswerKeepsEachFieldsOwnBytesWithoutItsSeparators() {
        String body = "{\n  \"object\" : \"list\" ,\n  \"data\" : [ \"QUJD\" ,\n \"REVG\" ]\n ,\"model\":\"m\"\n}\n";
        assertEquals("{\"object\" : \"list\",\"data\" : [ \"QUJD\" ,\n \"REVG\" ],\"model\":\"nomic-embed\","
                + "\"provider\":\"fire\\\"works\",\"usage\":{\"prompt_tokens\":7,\"total_tokens\":7}}",
                text(relay(body)));
    }

    @Test
    void withoutUsageTheGatewaysCountIsSentAndNothingIsReportedAsTheProviders() {
        EmbeddingsReply.Relayed r = relay("{\"data\":[]}");
        assertEquals("{\"data\":[],\"model\":\"nomic-embed\",\"provider\":\"fire\\\"works\","
                + "\"usage\":{\"prompt_tokens\":7,\"total_tokens\":7}}", text(r));
        assertEquals(7, r.promptTokens(), "the gateway's count is billed");
    }

    @Test
    void whatIsNoEmbeddingsListIsRefused() {
        for (String bad : new String[]{"[1,2]", "\"list\"", "{\"object\":\"list\"}", "{\"data\":{\"a\":1}}",
                "{\"data\":[1,2]} {}", "{\"data\":[1,2]", "{\"data\":[1,,2]}", "", "{\"data\":[1.5e]}"}) {
            EmbeddingsReply.Relayed r = relay(bad);
            assertTrue(r.invalid() != null && r.body() == null, bad + " -> " + r);
        }
    }

    @Test
    void aProvidersErrorInA200IsReportedAsItsError() {
        EmbeddingsReply.Relayed r = relay("{\"error\":{\"message\":\"overloaded\"},\"data\":[]}");
        assertNull(r.body());
        assertTrue(r.error().contains("overloaded"), r.error());
        assertEquals("{\"data\":[],\"error\":null,\"model\":\"nomic-embed\",\"provider\":\"fire\\\"works\","
                + "\"usage\":{\"prompt_tokens\":7,\"total_tokens\":7}}", text(relay("{\"data\":[],\"error\":null}")));
    }
}
