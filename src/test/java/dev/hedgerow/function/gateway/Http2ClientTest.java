package dev.hedgerow.function.gateway;

import dev.hedgerow.sim.Fault;
import dev.hedgerow.sim.SimServer;
import dev.hedgerow.testsupport.AppTestResource;
import dev.hedgerow.testsupport.MetricsScrape;
import io.quarkus.test.common.QuarkusTestResource;
import io.quarkus.test.common.http.TestHTTPResource;
import io.quarkus.test.junit.QuarkusTest;
import io.vertx.core.Future;
import io.vertx.core.Promise;
import io.vertx.core.Vertx;
import io.vertx.core.buffer.Buffer;
import io.vertx.core.http.HttpClient;
import io.vertx.core.http.HttpClientOptions;
import io.vertx.core.http.HttpClientRequest;
import io.vertx.core.http.HttpClientResponse;
import io.vertx.core.http.HttpMethod;
import io.vertx.core.http.HttpVersion;
import io.vertx.core.http.RequestOptions;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

import java.net.URL;
import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

import static dev.hedgerow.testsupport.Eventually.eventually;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Clients speaking HTTP/2 to the real application (cleartext, with prior knowledge, as gRPC-style clients and
 * proxies in front of a gateway do; over TLS it is the same stream layer): streamed and whole answers arrive as over
 * HTTP/1.1, several streams share one connection, and a client resetting its stream (RST_STREAM, the connection kept
 * for its other streams) is a hang-up: the upstream call is hung up on and the request is logged 499, while the
 * connection goes on serving.
 */
@QuarkusTest
@QuarkusTestResource(value = AppTestResource.class, restrictToAnnotatedClass = false)
class Http2ClientTest {
    private static final Pattern DELTA = Pattern.compile("\"content\":\"((?:[^\"\\\\]|\\\\.)*)\"");
    private static final Pattern SOLO_499 =
            Pattern.compile("(?m)^hedgerow_requests_total\\{alias=\"solo\",org=\"acme\",status=\"499\"} ([0-9.eE+-]+)$");
    static Vertx vertx;

    @TestHTTPResource("/")
    URL base;

    @BeforeAll
    static void start() {
        vertx = Vertx.vertx();
    }

    @AfterAll
    static void stop() throws Exception {
        vertx.close().toCompletionStage().toCompletableFuture().get(10, TimeUnit.SECONDS);
    }

    private HttpClient client() {
        return vertx.createHttpClient(new HttpClientOptions().setProtocolVersion(HttpVersion.HTTP_2)
                .setHttp2ClearTextUpgrade(false).setDefaultHost(base.getHost()).setDefaultPort(base.getPort())
                .setHttp2MaxPoolSize(1).setHttp2MultiplexingLimit(10));
    }

    private static String body(String prompt, boolean stream) {
        return "{\"model\":\"solo\",\"stream\":" + stream + ",\"messages\":[{\"role\":\"user\",\"content\":\""
                + prompt + "\"}]}";
    }

    private static Future<HttpClientRequest> post(HttpClient client) {
        return client.request(new RequestOptions().setMethod(HttpMethod.POST).setURI("/v1/chat/completions")
                .addHeader("Authorization", "Bearer k-acme").addHeader("Content-Type", "application/json"));
    }

    /** Sends one request on {@code client} and returns its status, protocol and whole body. */
    private static Reply exchange(HttpClient client, String body) throws Exception {
        return post(client).compose(req -> req.send(body).compose(resp -> resp.body()
                        .map(b -> new Reply(resp.statusCode(), resp.version(), b.toString(StandardCharsets.UTF_8)))))
                .toCompletionStage().toCompletableFuture().get(20, TimeUnit.SECONDS);
    }

    record Reply(int status, HttpVersion version, String body) {
    }

    private static String streamedText(String sse) {
        StringBuilder sb = new StringBuilder();
        for (String line : sse.split("\n")) {
            if (line.startsWith("data: {") && line.contains("\"delta\"")) {
                Matcher m = DELTA.matcher(line);
                while (m.find()) {
                    sb.append(m.group(1));
                }
            }
        }
        return sb.toString();
    }

    private static SimServer alpha() {
        return AppTestResource.sims().get("alpha");
    }

    private static double solo499() {
        Matcher m = SOLO_499.matcher(MetricsScrape.text());
        return m.find() ? Double.parseDouble(m.group(1)) : 0;
    }

    @Test
    void streamedAndWholeAnswersComeOverHttp2AsOverHttp1AndShareOneConnection() throws Exception {
        HttpClient client = client();
        try {
            String prompt = "h2: several streams, one connection";
            String expected = alpha().expectedText(prompt, 24);
            List<Future<Reply>> streams = new java.util.ArrayList<>();
            for (int i = 0; i < 3; i++) {
                streams.add(post(client).compose(req -> req.send(body(prompt, true)).compose(resp -> resp.body()
                        .map(b -> new Reply(resp.statusCode(), resp.version(), b.toString(StandardCharsets.UTF_8))))));
            }
            for (Future<Reply> f : streams) {
                Reply r = f.toCompletionStage().toCompletableFuture().get(20, TimeUnit.SECONDS);
                assertEquals(200, r.status(), r.body());
                assertEquals(HttpVersion.HTTP_2, r.version());
                assertEquals(expected, streamedText(r.body()), r.body());
                assertTrue(r.body().endsWith("data: [DONE]\n\n"), r.body());
            }
            Reply whole = exchange(client, body(prompt, false));
            assertEquals(200, whole.status(), whole.body());
            assertEquals(HttpVersion.HTTP_2, whole.version());
            assertTrue(whole.body().contains("\"content\":\"" + expected.replace("\"", "\\\"") + "\""), whole.body());
        } finally {
            client.close();
        }
    }

    /**
     * A client that stops reading for a moment fills its flow-control window (64 KiB, the client's default here) and
     * has the rest of its answer wait at the gateway, as over HTTP/1.1: it is taken for gone only 8 MiB behind. Its
     * stream was reset at the first window's end, its answer lost (found by hunt22).
     */
    @Test
    void aClientAWindowBehindForAMomentStillGetsItsWholeAnswer() throws Exception {
        io.vertx.core.http.HttpClient client = client();
        dev.hedgerow.sim.ModelScript before = alpha().config().models().get("solo-a");
        try {
            // 1500 tokens at 3000 tokens/s: ~250 KB of events in half a second, four windows
            alpha().script("solo-a", before.withLength(1500)
                    .withLatency(dev.hedgerow.sim.ModelScript.Latency.of(5, 3000)));
            String prompt = "h2: a window behind";
            HttpClientRequest req = post(client).toCompletionStage().toCompletableFuture().get(10, TimeUnit.SECONDS);
            Promise<String> body = Promise.promise();
            Buffer got = Buffer.buffer();
            req.response().onSuccess((HttpClientResponse resp) -> {
                resp.pause();   // reads nothing for a second and a half: the window fills, the rest waits
                vertx.setTimer(1500, t -> resp.resume());
                resp.handler(got::appendBuffer);
                resp.endHandler(v -> body.tryComplete(got.toString(StandardCharsets.UTF_8)));
                resp.exceptionHandler(body::tryFail);
            });
            req.exceptionHandler(body::tryFail);
            req.end(body(prompt, true));
            String sse = body.future().toCompletionStage().toCompletableFuture().get(20, TimeUnit.SECONDS);
            assertTrue(sse.length() > 4 * 65_535, "several windows' worth: " + sse.length());
            assertEquals(alpha().expectedText(prompt, 1500), streamedText(sse));
            assertTrue(sse.endsWith("data: [DONE]\n\n"), sse.substring(Math.max(0, sse.length() - 200)));
        } finally {
            alpha().script("solo-a", before);
            client.close();
        }
    }

    @Test
    void aResetStreamIsAHangUpAndTheConnectionGoesOnServing() throws Exception {
        HttpClient client = client();
        try {
            String prompt = "h2: reset me";
            double before = solo499();
            long cancelledBefore = alpha().stats("solo-a").cancelled();
            alpha().enqueue("solo-a", new Fault.Gate(3, "h2-reset", -1));
            Promise<String> firstContent = Promise.promise();
            HttpClientRequest req = post(client).toCompletionStage().toCompletableFuture().get(10, TimeUnit.SECONDS);
            StringBuilder seen = new StringBuilder();
            req.response().onSuccess((HttpClientResponse resp) -> resp.handler((Buffer b) -> {
                seen.append(b.toString(StandardCharsets.UTF_8));
                if (!streamedText(seen.toString()).isEmpty()) {
                    firstContent.tryComplete(seen.toString());
                }
            }));
            req.end(body(prompt, true));
            String got = firstContent.future().toCompletionStage().toCompletableFuture().get(10, TimeUnit.SECONDS);
            assertTrue(alpha().expectedText(prompt, 24).startsWith(streamedText(got)), got);
            eventually(() -> alpha().gate("h2-reset").waiting() == 1, "the upstream waits at its gate mid-answer");
            assertTrue(req.reset(), "the stream is reset");

            eventually(() -> alpha().stats("solo-a").cancelled() == cancelledBefore + 1,
                    "the reset stream's upstream call is hung up on");
            eventually(() -> solo499() == before + 1, "the reset stream is logged as the client's hang-up (499)");
            assertEquals(0, alpha().gate("h2-reset").waiting(), "nothing waits at the gate any more");

            String after = "h2: after the reset";
            Reply r = exchange(client, body(after, true));
            assertEquals(200, r.status(), r.body());
            assertEquals(alpha().expectedText(after, 24), streamedText(r.body()), r.body());
        } finally {
            alpha().openGate("h2-reset");
            client.close();
        }
    }
}
