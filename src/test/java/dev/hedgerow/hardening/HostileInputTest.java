package dev.hedgerow.hardening;

import com.fasterxml.jackson.databind.JsonNode;
import dev.hedgerow.sim.ModelScript;
import dev.hedgerow.sim.SimConfig;
import dev.hedgerow.testsupport.GatewayHarness;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

import java.io.ByteArrayOutputStream;
import java.nio.charset.StandardCharsets;
import java.util.Map;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** The named hostile inputs, one behaviour each, over real HTTP to a real gateway instance (1 MiB body limit). */
class HostileInputTest {
    static GatewayHarness gw;
    static final byte[] AUTH = "Authorization: Bearer k-acme\r\nContent-Type: application/json\r\n"
            .getBytes(StandardCharsets.UTF_8);

    @BeforeAll
    static void start() {
        gw = GatewayHarness.start(HostileInputProperties.YAML, Map.of("alpha", SimConfig.of(3).withApiKey("sk-alpha")
                .withModel("alpha-model", ModelScript.defaults().withLength(4)
                        .withLatency(ModelScript.Latency.of(0, 0)))));
    }

    @AfterAll
    static void stop() {
        gw.close();
    }

    static RawHttp.Response post(byte[] body) {
        return RawHttp.send(gw.port(), RawHttp.request("POST", "/v1/chat/completions", AUTH, body));
    }

    static byte[] withContent(String content) {
        return ("{\"model\":\"chat\",\"messages\":[{\"role\":\"user\",\"content\":\"" + content + "\"}]}")
                .getBytes(StandardCharsets.UTF_8);
    }

    @Test
    void aBodyOverTheLimitIs413InTheEnvelope() {
        RawHttp.Response r = post(withContent("a".repeat(2 * 1024 * 1024)));
        assertEquals(413, r.status());
        assertEquals("request_too_large", Envelope.assert4xx(r.status(), r.body(), "2 MiB").path("code").asText());
    }

    @Test
    void aChunkedBodyOverTheLimitIs413InTheEnvelope() {
        ByteArrayOutputStream req = new ByteArrayOutputStream();
        req.writeBytes(("POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nConnection: close\r\n"
                + "Transfer-Encoding: chunked\r\n").getBytes(StandardCharsets.US_ASCII));
        req.writeBytes(AUTH);
        req.writeBytes("\r\n".getBytes(StandardCharsets.US_ASCII));
        byte[] chunk = "b".repeat(64 * 1024).getBytes(StandardCharsets.US_ASCII);
        for (int i = 0; i < 20; i++) {
            req.writeBytes((Integer.toHexString(chunk.length) + "\r\n").getBytes(StandardCharsets.US_ASCII));
            req.writeBytes(chunk);
            req.writeBytes("\r\n".getBytes(StandardCharsets.US_ASCII));
        }
        req.writeBytes("0\r\n\r\n".getBytes(StandardCharsets.US_ASCII));
        RawHttp.Response r = RawHttp.send(gw.port(), req.toByteArray());
        assertEquals(413, r.status());
        Envelope.assert4xx(r.status(), r.body(), "chunked 1.25 MiB");
    }

    /**
     * A chunk size no decoder can read ({@code ffffffffffffffff}): the framing is the client's fault, so it is no
     * ERROR with a stack trace in the log, which any client without a key could flood (found by hunt20); the
     * connection ends, and the gateway serves the next request.
     */
    @Test
    void aMalformedChunkSizeIsNoServerError() {
        try (dev.hedgerow.testsupport.LogCapture logs = new dev.hedgerow.testsupport.LogCapture()) {
            ByteArrayOutputStream req = new ByteArrayOutputStream();
            req.writeBytes(("POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nConnection: close\r\n"
                    + "Transfer-Encoding: chunked\r\n").getBytes(StandardCharsets.US_ASCII));
            req.writeBytes(AUTH);
            req.writeBytes("\r\nffffffffffffffff\r\nabc".getBytes(StandardCharsets.US_ASCII));
            String answer;
            try (java.net.Socket sock = new java.net.Socket("127.0.0.1", gw.port())) {
                sock.setSoTimeout(10_000);
                sock.getOutputStream().write(req.toByteArray());
                answer = new String(sock.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
            } catch (java.io.IOException e) {
                answer = "";   // a reset: the connection ended
            }
            assertTrue(answer.isEmpty() || answer.startsWith("HTTP/1.1 400"), answer);
            assertEquals(200, post(withContent("still serving")).status());
            assertTrue(logs.lines().stream().noneMatch(l -> l.contains("SEVERE") || l.contains("ERROR")),
                    String.join("\n", logs.lines()));
        }
    }

    @Test
    void nestingDeeperThan64Is400AndDepth64IsServed() {
        String deep = "[".repeat(65) + "]".repeat(65);
        RawHttp.Response r = post(("{\"model\":\"chat\",\"messages\":[{\"role\":\"user\",\"content\":\"x\"}],"
                + "\"x_deep\":" + deep + "}").getBytes(StandardCharsets.UTF_8));
        assertEquals(400, r.status());
        assertEquals("invalid_json", Envelope.assert4xx(r.status(), r.body(), "depth 66").path("code").asText());
        // the body object is level 1: 63 more arrays reach exactly the limit
        String ok = "[".repeat(63) + "]".repeat(63);
        RawHttp.Response served = post(("{\"model\":\"chat\",\"messages\":[{\"role\":\"user\",\"content\":\"x\"}],"
                + "\"x_deep\":" + ok + "}").getBytes(StandardCharsets.UTF_8));
        assertEquals(200, served.status(), served.body());
    }

    @Test
    void invalidUtf8Is400() {
        byte[] head = withContent("caf");
        byte[] body = new byte[head.length + 2];
        // overlong encoding of '/', which Jackson alone would decode without complaint
        int at = new String(head, StandardCharsets.UTF_8).indexOf("caf") + 3;
        System.arraycopy(head, 0, body, 0, at);
        body[at] = (byte) 0xC0;
        body[at + 1] = (byte) 0xAF;
        System.arraycopy(head, at, body, at + 2, head.length - at);
        RawHttp.Response r = post(body);
        assertEquals(400, r.status(), r.body());
        assertEquals("invalid_utf8", Envelope.assert4xx(r.status(), r.body(), "overlong").path("code").asText());
    }

    /**
     * A body in UTF-16 or UTF-32 without a byte-order mark is refused as not UTF-8: its ASCII characters are NUL-padded
     * (well-formed UTF-8), and Jackson, reading bytes, detected the encoding and served it (found by hunt13).
     */
    @Test
    void aUtf16OrUtf32BodyIs400() {
        for (java.nio.charset.Charset cs : new java.nio.charset.Charset[] {StandardCharsets.UTF_16LE,
                StandardCharsets.UTF_16BE, java.nio.charset.Charset.forName("UTF-32LE")}) {
            byte[] body = new String(withContent("hello"), StandardCharsets.UTF_8).getBytes(cs);
            RawHttp.Response r = post(body);
            assertEquals(400, r.status(), cs + ": " + r.body());
            assertEquals("invalid_utf8", Envelope.assert4xx(r.status(), r.body(), cs.name()).path("code").asText());
        }
    }

    /**
     * A body that is not JSON is told what is wrong and where, without the parser's class, feature or constraint
     * names: "enable `JsonReadFeature.ALLOW_NON_NUMERIC_NUMBERS` to allow" and "[Source: REDACTED
     * (`StreamReadFeature.INCLUDE_SOURCE_IN_LOCATION` disabled); ..." reached clients (found by hunt13).
     */
    @Test
    void aParseErrorSaysWhereWithoutTheParsersOwnNames() {
        String head = "{\"model\":\"chat\",\"messages\":[{\"role\":\"user\",\"content\":\"x\"}]";
        Map<String, String> bodies = new java.util.LinkedHashMap<>();
        bodies.put("NaN", head + ",\"temperature\":NaN}");
        bodies.put("plus sign", head + ",\"max_tokens\":+2}");
        bodies.put("comment", head + " /* hi */}");
        bodies.put("single quotes", head + ",'seed':1}");
        bodies.put("unclosed array", "{\"model\":\"chat\",\"messages\":[");
        bodies.put("long number", head + ",\"seed\":" + "9".repeat(2000) + "}");
        bodies.put("trailing value", head + "} {}");
        bodies.put("deep", head + ",\"x\":" + "[".repeat(70) + "]".repeat(70) + "}");
        bodies.put("long name", head + ",\"" + "k".repeat(70_000) + "\":1}");
        bodies.forEach((what, body) -> {
            RawHttp.Response r = post(body.getBytes(StandardCharsets.UTF_8));
            JsonNode err = Envelope.assert4xx(r.status(), r.body(), what);
            assertEquals("invalid_json", err.path("code").asText(), what + ": " + r.body());
            String message = err.path("message").asText();
            // a syntax error says where; a limit (length, depth) says which and its bound
            assertTrue(message.matches(".*\\(line \\d+, column \\d+\\)")
                    || message.matches(".*exceeds the maximum allowed \\(\\d+\\)"), what + ": " + message);
            for (String internal : new String[] {"`", "Feature", "Constraints", "jackson", "Source", "REDACTED"}) {
                assertTrue(!message.contains(internal), what + " names " + internal + ": " + message);
            }
        });
    }

    @Test
    void anEscapedLoneSurrogateIs400NamingTheField() {
        RawHttp.Response r = post(withContent("half an emoji \\ud83d"));
        assertEquals(400, r.status(), r.body());
        JsonNode err = Envelope.assert4xx(r.status(), r.body(), "lone surrogate");
        assertEquals("invalid_unicode", err.path("code").asText());
        assertEquals("messages[0].content", err.path("param").asText());
    }

    @Test
    void aPairedSurrogateEscapeIsServed() {
        RawHttp.Response r = post(withContent("an emoji \\ud83d\\ude00"));
        assertEquals(200, r.status(), r.body());
    }

    @Test
    void aHeaderBlockOverTheLimitIs431InTheEnvelopeAndTheConnectionCloses() {
        byte[] headers = ("Authorization: Bearer k-acme\r\nX-Big: " + "h".repeat(64 * 1024) + "\r\n")
                .getBytes(StandardCharsets.US_ASCII);
        RawHttp.Response r = RawHttp.send(gw.port(), RawHttp.request("POST", "/v1/chat/completions", headers,
                withContent("x")));
        assertEquals(431, r.status());
        assertEquals("headers_too_large", Envelope.assert4xx(r.status(), r.body(), "64 KiB header")
                .path("code").asText());
        assertEquals("close", r.headers().get("connection"));
    }

    @Test
    void aRequestLineOverTheServersLimitIs414() {
        // refused by the HTTP server's decoder (4 KiB initial line) before any route runs: its own bare 414
        RawHttp.Response r = RawHttp.send(gw.port(), RawHttp.request("POST", "/models/" + "m".repeat(8192)
                + "/v1/chat/completions", AUTH, withContent("x")));
        assertEquals(414, r.status());
    }

    /** Vert.x decodes a multipart body into form fields and leaves the body empty: it is not called "empty". */
    @Test
    void aMultipartBodyIs415NamingItsTypeNotAnEmptyBody() {
        byte[] body = ("--xyz\r\nContent-Disposition: form-data; name=\"model\"\r\n\r\nchat\r\n--xyz--\r\n")
                .getBytes(StandardCharsets.US_ASCII);
        RawHttp.Response r = RawHttp.send(gw.port(), RawHttp.request("POST", "/v1/chat/completions",
                "Authorization: Bearer k-acme\r\nContent-Type: multipart/form-data; boundary=xyz\r\n"
                        .getBytes(StandardCharsets.US_ASCII), body));
        assertEquals(415, r.status(), r.body());
        JsonNode err = Envelope.assert4xx(r.status(), r.body(), "multipart");
        assertEquals("unsupported_media_type", err.path("code").asText());
        assertTrue(err.path("message").asText().contains("multipart/form-data"), r.body());
    }

    /** A gzip body was read as it came and refused as "not valid UTF-8", which named the wrong problem. */
    @Test
    void aCompressedBodyIs415NamingItsEncoding() throws java.io.IOException {
        java.io.ByteArrayOutputStream zipped = new java.io.ByteArrayOutputStream();
        try (java.util.zip.GZIPOutputStream gz = new java.util.zip.GZIPOutputStream(zipped)) {
            gz.write(("{\"model\":\"chat\",\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}]}")
                    .getBytes(StandardCharsets.UTF_8));
        }
        RawHttp.Response r = RawHttp.send(gw.port(), RawHttp.request("POST", "/v1/chat/completions",
                (new String(AUTH, StandardCharsets.US_ASCII) + "Content-Encoding: gzip\r\n")
                        .getBytes(StandardCharsets.US_ASCII), zipped.toByteArray()));
        assertEquals(415, r.status(), r.body());
        JsonNode err = Envelope.assert4xx(r.status(), r.body(), "gzip");
        assertEquals("unsupported_content_encoding", err.path("code").asText());
        assertTrue(err.path("message").asText().contains("gzip"), r.body());

        // identity is no encoding at all
        RawHttp.Response plain = RawHttp.send(gw.port(), RawHttp.request("POST", "/v1/chat/completions",
                (new String(AUTH, StandardCharsets.US_ASCII) + "Content-Encoding: identity\r\n")
                        .getBytes(StandardCharsets.US_ASCII), withContent("hi")));
        assertEquals(200, plain.status(), plain.body());
    }

    /**
     * A transfer coding other than chunked: the server undoes only the chunked framing, so {@code gzip, chunked} was
     * read as compressed bytes and refused for "a NUL byte", which named the wrong problem (found by hunt22).
     */
    @Test
    void aGzipTransferCodingIs415NamingIt() throws java.io.IOException {
        java.io.ByteArrayOutputStream zipped = new java.io.ByteArrayOutputStream();
        try (java.util.zip.GZIPOutputStream gz = new java.util.zip.GZIPOutputStream(zipped)) {
            gz.write(("{\"model\":\"chat\",\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}]}")
                    .getBytes(StandardCharsets.UTF_8));
        }
        java.io.ByteArrayOutputStream chunked = new java.io.ByteArrayOutputStream();
        chunked.writeBytes((Integer.toHexString(zipped.size()) + "\r\n").getBytes(StandardCharsets.US_ASCII));
        chunked.writeBytes(zipped.toByteArray());
        chunked.writeBytes("\r\n0\r\n\r\n".getBytes(StandardCharsets.US_ASCII));
        byte[] head = RawHttp.request("POST", "/v1/chat/completions", (new String(AUTH, StandardCharsets.US_ASCII)
                + "Transfer-Encoding: gzip, chunked\r\n").getBytes(StandardCharsets.US_ASCII), null);
        byte[] request = java.util.Arrays.copyOf(head, head.length + chunked.size());
        System.arraycopy(chunked.toByteArray(), 0, request, head.length, chunked.size());
        RawHttp.Response r = RawHttp.send(gw.port(), request);
        JsonNode err = Envelope.assert4xx(r.status(), r.body(), "gzip transfer coding");
        assertEquals(415, r.status(), r.body());
        assertEquals("unsupported_transfer_encoding", err.path("code").asText());
        assertTrue(err.path("message").asText().contains("Transfer-Encoding gzip"), r.body());
    }

    @Test
    void missingMessagesIs400NamingMessages() {
        RawHttp.Response r = post("{\"model\":\"chat\"}".getBytes(StandardCharsets.UTF_8));
        assertEquals(400, r.status());
        assertEquals("messages", Envelope.assert4xx(r.status(), r.body(), "no messages").path("param").asText());
    }

    @Test
    void emptyMessagesIs400NamingMessages() {
        RawHttp.Response r = post("{\"model\":\"chat\",\"messages\":[]}".getBytes(StandardCharsets.UTF_8));
        assertEquals(400, r.status());
        assertEquals("messages", Envelope.assert4xx(r.status(), r.body(), "[] messages").path("param").asText());
    }

    /**
     * A path that does not decode never reaches a gateway route: Quarkus' HTTP layer validates the URI before any
     * router and answers an empty 400 itself (a router-wide {@code errorHandler(400)} is never called; tried). Only
     * {@code -Dvertx.disableURIValidation} would let it through, and then every edge would have to parse bad URIs.
     */
    @Test
    void aBadPercentEscapeInThePathAliasIsAPlain400NotAHang() {
        RawHttp.Response r = RawHttp.send(gw.port(), RawHttp.request("POST", "/models/%ZZ/v1/chat/completions",
                AUTH, withContent("x")));
        assertEquals(400, r.status(), r.body());
    }
}
