package dev.hedgerow.hardening;

import com.fasterxml.jackson.databind.JsonNode;
import dev.hedgerow.sim.ModelScript;
import dev.hedgerow.sim.SimConfig;
import dev.hedgerow.testsupport.GatewayHarness;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.Socket;
import java.net.SocketTimeoutException;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.Locale;
import java.util.Map;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * A request body is read only for a caller whose key the gateway knows, and only for so long: an unknown key is
 * answered 401 while its body is still coming (130 unauthenticated 8 MiB bodies, sent all but their last bytes and
 * held, filled a 1 GiB heap for good and left the instance answering nothing; found by hunt29-d), and a known
 * caller's body still coming after the body timeout is answered 408 and its connection closed (a trickled body held
 * its connection for Quarkus' 30-minute idle timeout).
 */
class BodyDeadlineTest {
    static GatewayHarness gw;

    @BeforeAll
    static void start() {
        gw = GatewayHarness.startWithBodyTimeout(HostileInputProperties.YAML, Map.of("alpha", SimConfig.of(3)
                .withApiKey("sk-alpha").withModel("alpha-model", ModelScript.defaults().withLength(4)
                        .withLatency(ModelScript.Latency.of(0, 0)))), Duration.ofSeconds(1));
    }

    @AfterAll
    static void stop() {
        gw.close();
    }

    /** What the gateway answered a request that declared 512 KiB and sent {@code sent} bytes of it, then waited. */
    static RawHttp.Response partial(String authorization, int sent) throws IOException {
        String head = "POST /v1/chat/completions HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
                + (authorization == null ? "" : "Authorization: " + authorization + "\r\n")
                + "Content-Length: " + 512 * 1024 + "\r\n\r\n";
        try (Socket s = new Socket("127.0.0.1", gw.port())) {
            s.setSoTimeout(8_000);
            OutputStream out = s.getOutputStream();
            out.write(head.getBytes(StandardCharsets.US_ASCII));
            out.write("{\"model\":\"chat\",\"messages\":[".getBytes(StandardCharsets.US_ASCII));
            out.write(" ".repeat(sent).getBytes(StandardCharsets.US_ASCII));
            out.flush();
            return answer(s.getInputStream());
        } catch (SocketTimeoutException e) {
            throw new AssertionError("no answer while the body was still coming", e);
        }
    }

    /** Reads one answer: its head, then as many body bytes as its Content-Length says (not up to the close). */
    static RawHttp.Response answer(InputStream in) throws IOException {
        ByteArrayOutputStream all = new ByteArrayOutputStream();
        int headEnd = -1;
        int length = -1;
        Map<String, String> headers = new java.util.HashMap<>();
        while (true) {
            int b = in.read();
            if (b < 0) {
                throw new IOException("closed before the answer ended: " + all.toString(StandardCharsets.ISO_8859_1));
            }
            all.write(b);
            String text = all.toString(StandardCharsets.ISO_8859_1);
            if (headEnd < 0 && text.endsWith("\r\n\r\n")) {
                headEnd = text.length();
                String[] lines = text.split("\r\n");
                for (int i = 1; i < lines.length; i++) {
                    int colon = lines[i].indexOf(':');
                    if (colon > 0) {
                        headers.put(lines[i].substring(0, colon).trim().toLowerCase(Locale.ROOT),
                                lines[i].substring(colon + 1).trim());
                    }
                }
                length = Integer.parseInt(headers.getOrDefault("content-length", "0"));
            }
            if (headEnd >= 0 && text.length() - headEnd >= length) {
                String status = text.substring(9, 12);
                return new RawHttp.Response(Integer.parseInt(status), headers, text.substring(headEnd));
            }
        }
    }

    @Test
    void anUnknownKeyIsAnswered401WhileItsBodyIsStillComing() throws IOException {
        for (String auth : new String[]{null, "Bearer nope", "Bearer a-acme-not-a-client-key"}) {
            RawHttp.Response r = partial(auth, 1024);
            assertEquals(401, r.status(), auth + ": " + r.body());
            Envelope.assert4xx(r.status(), r.body(), "unknown key " + auth);
            assertEquals("close", r.headers().get("connection"), auth);
        }
    }

    @Test
    void aKnownCallersBodyStillComingAfterTheTimeoutIs408AndTheConnectionCloses() throws IOException {
        RawHttp.Response r = partial("Bearer k-acme", 1024);
        assertEquals(408, r.status(), r.body());
        JsonNode err = Envelope.assert4xx(r.status(), r.body(), "slow body");
        assertEquals("request_timeout", err.path("code").asText(), r.body());
        assertEquals("close", r.headers().get("connection"));
        dev.hedgerow.testsupport.Eventually.eventually(
                () -> gw.metric("hedgerow_requests", "org", "acme", "status", "408") >= 1, "counted for its org");
    }

    @Test
    void aWholeBodyIsServedAsBefore() {
        RawHttp.Response r = RawHttp.send(gw.port(), RawHttp.request("POST", "/v1/chat/completions",
                "Authorization: Bearer k-acme\r\nContent-Type: application/json\r\n".getBytes(StandardCharsets.UTF_8),
                HostileInputTest.withContent("hello")));
        assertEquals(200, r.status(), r.body());
    }

    /**
     * Over HTTP/2 the 408 answers the slow stream alone: "connection: close" is no HTTP/2 header (the client saw a
     * protocol error instead of the 408; review28), and the connection's other streams go on.
     */
    @Test
    void overHttp2TheSlowStreamIsAnswered408AndItsConnectionServesOn() throws Exception {
        io.vertx.core.Vertx vertx = io.vertx.core.Vertx.vertx();
        try {
            io.vertx.core.http.HttpClient client = vertx.createHttpClient(new io.vertx.core.http.HttpClientOptions()
                    .setProtocolVersion(io.vertx.core.http.HttpVersion.HTTP_2).setHttp2ClearTextUpgrade(false)
                    .setDefaultHost("127.0.0.1").setDefaultPort(gw.port()).setHttp2MaxPoolSize(1));
            io.vertx.core.http.RequestOptions post = new io.vertx.core.http.RequestOptions()
                    .setMethod(io.vertx.core.http.HttpMethod.POST).setURI("/v1/chat/completions")
                    .addHeader("Authorization", "Bearer k-acme").addHeader("Content-Type", "application/json");
            java.util.concurrent.CompletableFuture<String> slow = new java.util.concurrent.CompletableFuture<>();
            client.request(post).onSuccess(req -> {
                req.response().onSuccess(r -> r.body().onSuccess(b -> slow.complete(r.statusCode() + " " + b))
                        .onFailure(slow::completeExceptionally)).onFailure(slow::completeExceptionally);
                req.setChunked(true);
                req.write("{\"model\":\"chat\",\"messages\":[");   // and nothing more
            }).onFailure(slow::completeExceptionally);
            String answer = slow.get(10, java.util.concurrent.TimeUnit.SECONDS);
            assertTrue(answer.startsWith("408 "), answer);
            assertTrue(answer.contains("request_timeout"), answer);

            java.util.concurrent.CompletableFuture<Integer> next = new java.util.concurrent.CompletableFuture<>();
            client.request(post).compose(req -> req.send(new String(HostileInputTest.withContent("hello"),
                    StandardCharsets.UTF_8))).onSuccess(r -> next.complete(r.statusCode()))
                    .onFailure(next::completeExceptionally);
            assertEquals(200, next.get(10, java.util.concurrent.TimeUnit.SECONDS));
        } finally {
            vertx.close().toCompletionStage().toCompletableFuture().get(10, java.util.concurrent.TimeUnit.SECONDS);
        }
    }
}
