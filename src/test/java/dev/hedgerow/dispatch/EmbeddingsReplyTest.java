package dev.hedgerow.dispatch;

import dev.hedgerow.api.Json;
import org.junit.jupiter.api.Test;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Base64;
import java.util.List;
import java.util.Random;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
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

    /** Relays {@code body} to a request for floats (OpenAI's default). */
    private static EmbeddingsReply.Relayed relay(String body) {
        return EmbeddingsReply.relay(body.getBytes(StandardCharsets.UTF_8), EmbeddingsReply.Vectors.FLOAT,
                "nomic-embed", "fire\"works", () -> 7);
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

    /**
     * An answer led by a UTF-8 byte order mark: the parser skips it and counts its offsets after it, so every field
     * was copied three bytes off and the client got a 200 that was not JSON (found by review4).
     */
    @Test
    void anAnswerLedByAByteOrderMarkIsRelayedAsTheSameJson() {
        assertEquals("{\"object\":\"list\",\"data\":[{\"embedding\":[0.1]}],\"model\":\"nomic-embed\","
                + "\"provider\":\"fire\\\"works\",\"usage\":{\"prompt_tokens\":7,\"total_tokens\":7}}",
                text(relay("\uFEFF{\"object\":\"list\",\"data\":[{\"embedding\":[0.1]}],\"model\":\"x\"}")));
    }

    /**
     * A provider's prompt count that is not one (negative, fractional, absurd) is neither billed nor relayed as the
     * bill: the gateway's own count is (found by review4: -4 was billed, a ledger of negative cost).
     */
    @Test
    void aProvidersUsageThatIsNotACountIsReplacedByTheGatewaysOwn() {
        for (String given : new String[]{"-4", "2.5", "1e30", "\"12\"", "null"}) {
            EmbeddingsReply.Relayed r = relay("{\"data\":[1],\"usage\":{\"prompt_tokens\":" + given
                    + ",\"total_tokens\":" + given + "}}");
            assertEquals(7, r.promptTokens(), given);
            assertTrue(text(r).endsWith("\"usage\":{\"prompt_tokens\":7,\"total_tokens\":7}}"), given + ": " + text(r));
        }
        EmbeddingsReply.Relayed twelve = relay("{\"data\":[1],\"usage\":{\"prompt_tokens\":12.0}}");
        assertEquals(12, twelve.promptTokens());
        assertTrue(text(twelve).endsWith("\"usage\":{\"prompt_tokens\":12,\"total_tokens\":12}}"), text(twelve));
        // a prompt count that is one beside a total that is not: the bill is shown, not the provider's figures
        EmbeddingsReply.Relayed total = relay("{\"data\":[1],\"usage\":{\"prompt_tokens\":5,\"total_tokens\":-9}}");
        assertEquals(5, total.promptTokens());
        assertTrue(text(total).endsWith("\"usage\":{\"prompt_tokens\":5,\"total_tokens\":5}}"), text(total));
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

    /**
     * An answer arrives in reads of whatever size the connection gives, which may split a field name, a number or a
     * character's UTF-8 bytes: scanned as it arrives, it comes out as when scanned whole, refusals included.
     */
    @Test
    void anAnswerFedInPiecesOfAnySizeIsRelayedAsWhenFedWhole() {
        StringBuilder big = new StringBuilder("{\"object\":\"list\",\"data\":[");
        Random random = new Random(7);
        for (int i = 0; i < 40; i++) {
            big.append(i == 0 ? "" : ",").append("{\"object\":\"embedding\",\"index\":").append(i)
                    .append(",\"embedding\":[");
            for (int d = 0; d < 256; d++) {
                big.append(d == 0 ? "" : ",").append(random.nextFloat() * 2 - 1);
            }
            big.append("]}");
        }
        big.append("],\"model\":\"m\",\"usage\":{\"prompt_tokens\":40,\"total_tokens\":40}}");
        List<String> bodies = List.of(big.toString(),
                "{\"model\":\"x\",\"object\":\"list\",\"data\":[{\"embedding\":\"QUJD\"}],\"provider\":\"p\","
                        + "\"usage\":{\"prompt_tokens\":3,\"total_tokens\":3},\"x\":{\"n\":[1,{\"a\":\"é 東京\"}]}}",
                "{\n  \"object\" : \"list\" ,\n  \"data\" : [ \"QUJD\" ,\n \"REVG\" ]\n ,\"model\":\"m\"\n}\n",
                "{\"data\":[]}", "{\"error\":{\"message\":\"overloaded\"},\"data\":[]}",
                "{\"data\":[],\"error\":null}", "[1,2]", "\"list\"", "{\"object\":\"list\"}",
                "{\"data\":{\"a\":1}}", "{\"data\":[1,2]} {}", "{\"data\":[1,2]", "{\"data\":[1,,2]}", "",
                "{\"data\":[1.5e]}", "\uFEFF{\"object\":\"list\",\"data\":[{\"embedding\":[0.1]}],\"model\":\"x\"}");
        for (String body : bodies) {
          for (EmbeddingsReply.Vectors asked : EmbeddingsReply.Vectors.values()) {
            byte[] bytes = body.getBytes(StandardCharsets.UTF_8);
            EmbeddingsReply.Relayed whole = EmbeddingsReply.relay(bytes, asked, "nomic-embed", "fw", () -> 7);
            for (int size : new int[]{1, 2, 3, 5, 64, 8192, -1}) {
                EmbeddingsReply.Scan scan = new EmbeddingsReply.Scan(asked);
                for (byte[] piece : pieces(bytes, size, random)) {
                    scan.feed(piece);
                }
                EmbeddingsReply.Relayed r = scan.finish(bytes, "nomic-embed", "fw", () -> 7);
                String what = body.substring(0, Math.min(60, body.length())) + " for " + asked + " in pieces of "
                        + size;
                assertArrayEquals(whole.body(), r.body(), what);
                assertEquals(whole.invalid(), r.invalid(), what);
                assertEquals(whole.error(), r.error(), what);
                assertEquals(whole.promptTokens(), r.promptTokens(), what);
            }
          }
        }
        assertEquals(40, relay(bodies.get(0)).promptTokens());
    }

    private static EmbeddingsReply.Relayed relay(String body, EmbeddingsReply.Vectors vectors) {
        return EmbeddingsReply.relay(body.getBytes(StandardCharsets.UTF_8), vectors, "nomic-embed", "fw", () -> 7);
    }

    /** OpenAI's base64 form of a vector: its float32 values, little-endian, in standard padded base64. */
    private static String base64(float... v) {
        ByteBuffer buf = ByteBuffer.allocate(4 * v.length).order(ByteOrder.LITTLE_ENDIAN);
        for (float f : v) {
            buf.putFloat(f);
        }
        return Base64.getEncoder().encodeToString(buf.array());
    }

    private static final String USAGE = "\"model\":\"nomic-embed\",\"provider\":\"fw\","
            + "\"usage\":{\"prompt_tokens\":7,\"total_tokens\":7}}";

    /**
     * The OpenAI SDKs ask for base64 by default and decode whatever comes as base64: a provider that ignores
     * {@code encoding_format} and answers floats gave them empty vectors. Its vectors reach the client as OpenAI
     * writes them, the base64 of their little-endian float32 values (each number read as the float32 nearest it),
     * and every other byte as the provider wrote it (found by a black-box hunt).
     */
    @Test
    void floatsAnsweredToARequestForBase64AreRelayedAsBase64() {
        String body = "{\"object\":\"list\",\"data\":[{\"object\":\"embedding\",\"index\":0,"
                + "\"embedding\":[0.10000000149011612,-1,3.4028235E38,1e-45,0]},\n {\"index\":1 , \"embedding\" :"
                + " [ -0.0 , 2.5e-3 ] ,\"x\":[1.5]},{\"index\":2,\"embedding\":[]}]}";
        assertEquals("{\"object\":\"list\",\"data\":[{\"object\":\"embedding\",\"index\":0,"
                + "\"embedding\":\"" + base64(0.1f, -1f, Float.MAX_VALUE, Float.MIN_VALUE, 0f) + "\"},\n "
                + "{\"index\":1 , \"embedding\" : \"" + base64(-0.0f, 2.5e-3f) + "\" ,\"x\":[1.5]},"
                + "{\"index\":2,\"embedding\":\"\"}],"
                + USAGE, text(relay(body, EmbeddingsReply.Vectors.BASE64)));
        // as asked: relayed untouched
        String asked = "{\"data\":[{\"embedding\":\"" + base64(0.5f) + "\"}]}";
        assertEquals(asked.substring(0, asked.length() - 1) + "," + USAGE,
                text(relay(asked, EmbeddingsReply.Vectors.BASE64)));
    }

    /**
     * The reverse: base64 answered to a request for floats (or for nothing: floats are the default) reaches the client
     * as an array of its float32 values.
     */
    @Test
    void base64AnsweredToARequestForFloatsIsRelayedAsFloats() {
        String body = "{\"data\":[{\"index\":0,\"embedding\":\"" + base64(0.1f, -1f, 1e-7f, -0.0f)
                + "\"},{\"index\":1,\"embedding\" : \"" + base64(0.99999994f).replace("/", "\\/") + "\" }]}";
        String out = text(relay(body, EmbeddingsReply.Vectors.FLOAT));
        assertEquals("{\"data\":[{\"index\":0,\"embedding\":[0.1,-1.0,1.0E-7,-0.0]},{\"index\":1,\"embedding\" : "
                + "[0.99999994] }]," + USAGE, out);
        // base64 wrapped in lines (a MIME encoder's), or in the URL-safe alphabet without padding, is read too
        String wrapped = base64(0.99999994f, 0.5f, -2f);
        String urlSafe = base64(0.99999994f).replace('/', '_').replace('+', '-').replace("=", "");
        assertEquals("{\"data\":[{\"embedding\":[0.99999994,0.5,-2.0]},{\"embedding\":[0.99999994]}]," + USAGE,
                text(relay("{\"data\":[{\"embedding\":\"" + wrapped.substring(0, 8) + "\\r\\n"
                        + wrapped.substring(8) + "\\n\"},{\"embedding\":\"" + urlSafe + "\"}]}",
                        EmbeddingsReply.Vectors.FLOAT)));
        // as asked: relayed untouched, numbers in their own spelling
        String asked = "{\"data\":[{\"embedding\":[1e-1, 2]}]}";
        assertEquals(asked.substring(0, asked.length() - 1) + "," + USAGE,
                text(relay(asked, EmbeddingsReply.Vectors.FLOAT)));
        // a vector that cannot be written in the form asked for is no answer: the attempt fails over
        for (String bad : new String[]{"\"not base64!\"", "\"QUJD\"", "\"" + base64(Float.NaN) + "\""}) {
            EmbeddingsReply.Relayed r = relay("{\"data\":[{\"embedding\":" + bad + "}]}",
                    EmbeddingsReply.Vectors.FLOAT);
            assertTrue(r.invalid() != null && r.body() == null, bad + " -> " + r);
        }
        // 1e39 is no float32 (it was written as +Infinity's bits; review7)
        for (String bad : new String[]{"[1,null]", "[1,[2]]", "[\"a\"]", "[1e39]", "[-1e39]"}) {
            EmbeddingsReply.Relayed r = relay("{\"data\":[{\"embedding\":" + bad + "}]}",
                    EmbeddingsReply.Vectors.BASE64);
            assertTrue(r.invalid() != null && r.body() == null, bad + " -> " + r);
        }
    }

    /** Vectors rewritten as they arrive come out as when the answer is scanned whole, however it is cut. */
    @Test
    void vectorsRewrittenFromPiecesOfAnySizeAreAsWhenFedWhole() {
        Random random = new Random(11);
        StringBuilder floats = new StringBuilder("\uFEFF{\"object\":\"list\",\"data\":[");
        StringBuilder encoded = new StringBuilder("{\"object\":\"list\",\"data\":[");
        List<float[]> vectors = new ArrayList<>();
        for (int i = 0; i < 20; i++) {
            float[] v = new float[i == 5 ? 3072 : 300 + i]; // one past the gathering buffer's first 1024 floats
            for (int d = 0; d < v.length; d++) {
                v[d] = random.nextFloat() * 2 - 1;
            }
            vectors.add(v);
            floats.append(i == 0 ? "" : ",").append("{\"object\":\"embedding\",\"index\":").append(i)
                    .append(",\"embedding\":").append(Arrays.toString(v)).append('}');
            encoded.append(i == 0 ? "" : ",").append("{\"object\":\"embedding\",\"index\":").append(i)
                    .append(",\"embedding\":\"").append(base64(v)).append("\"}");
        }
        floats.append("],\"model\":\"m\"}");
        encoded.append("],\"model\":\"m\"}");
        for (Object[] c : new Object[][]{{floats.toString(), EmbeddingsReply.Vectors.BASE64},
                {encoded.toString(), EmbeddingsReply.Vectors.FLOAT}}) {
            byte[] bytes = ((String) c[0]).getBytes(StandardCharsets.UTF_8);
            EmbeddingsReply.Vectors asked = (EmbeddingsReply.Vectors) c[1];
            EmbeddingsReply.Relayed whole = EmbeddingsReply.relay(bytes, asked, "nomic-embed", "fw", () -> 7);
            com.fasterxml.jackson.databind.JsonNode data;
            try {
                data = Json.parse(whole.body()).path("data");
            } catch (java.io.IOException e) {
                throw new AssertionError(e);
            }
            for (int i = 0; i < vectors.size(); i++) {
                com.fasterxml.jackson.databind.JsonNode e = data.get(i).path("embedding");
                if (asked == EmbeddingsReply.Vectors.BASE64) {
                    assertEquals(base64(vectors.get(i)), e.asText(), "vector " + i);
                } else {
                    assertEquals(vectors.get(i).length, e.size());
                    for (int d = 0; d < e.size(); d++) {
                        assertEquals(vectors.get(i)[d], e.get(d).floatValue(), "vector " + i + "[" + d + "]");
                    }
                }
            }
            for (int size : new int[]{1, 3, 7, 64, 8192, -1}) {
                EmbeddingsReply.Scan scan = new EmbeddingsReply.Scan(asked);
                for (byte[] piece : pieces(bytes, size, random)) {
                    scan.feed(piece);
                }
                EmbeddingsReply.Relayed r = scan.finish(bytes, "nomic-embed", "fw", () -> 7);
                assertArrayEquals(whole.body(), r.body(), asked + " in pieces of " + size);
            }
        }
    }

    /** {@code bytes} in pieces of {@code size}, or of random sizes up to 100 for -1. */
    private static List<byte[]> pieces(byte[] bytes, int size, Random random) {
        List<byte[]> out = new ArrayList<>();
        for (int at = 0; at < bytes.length; ) {
            int n = Math.min(bytes.length - at, size > 0 ? size : 1 + random.nextInt(100));
            out.add(Arrays.copyOfRange(bytes, at, at + n));
            at += n;
        }
        return out;
    }
}
