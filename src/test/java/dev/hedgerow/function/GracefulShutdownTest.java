package dev.hedgerow.function;

import com.fasterxml.jackson.databind.JsonNode;
import dev.hedgerow.sim.ModelScript;
import dev.hedgerow.sim.SimConfig;
import dev.hedgerow.sim.SimServer;
import dev.hedgerow.sim.SimText;
import dev.hedgerow.testsupport.AppTestResource;
import dev.hedgerow.testsupport.PackagedApp;
import dev.hedgerow.testsupport.RedisServer;
import dev.hedgerow.testsupport.Resp;
import dev.hedgerow.testsupport.Sse;
import io.vertx.core.Vertx;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStream;
import java.io.InputStreamReader;
import java.net.ServerSocket;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.time.LocalDate;
import java.time.ZoneOffset;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * SIGTERM on the application as it ships (the packaged fast-jar, run as a process of its own on a private Redis, with
 * simulated providers streaming at a scripted pace): a stream in flight finishes whole, with {@code [DONE]}; a request
 * sent after the signal is refused with 503 {@code server_shutting_down} in the envelope with retry advice; a stream
 * longer than the grace period ({@code HEDGEROW_SHUTDOWN_GRACE}) ends at its end with that error as its last event,
 * saying how much it delivered, and is logged as 503 with attempts ended {@code shutdown} (not 499
 * {@code client_cancelled}); the process then exits; and the usage billed and the audit event of those requests, held
 * in a write batch far longer than the test ({@code HEDGEROW_STATE_WRITE_BATCH=10m}), are in Redis afterwards.
 * Before, the process stopped within half a second, cutting both streams mid-transfer and logging them as 499.
 */
class GracefulShutdownTest {
    static final long SEED = 7;
    static final int SHORT_TOKENS = 30;
    static final String GRACE = "6s";
    static final String PROMPT = "Tell me about hedgerows";

    static Vertx vertx;
    static SimServer sim;
    static RedisServer redis;

    @BeforeAll
    static void start() {
        vertx = Vertx.vertx();
        redis = RedisServer.start();
        // 20 tokens a second: the short answer takes 1.5 s, the long one 20 s, far past the grace period
        ModelScript.Latency pace = ModelScript.Latency.of(50, 20);
        sim = SimServer.startBlocking(vertx, SimConfig.of(SEED).withApiKey("sk-sim")
                .withModel("short-m", ModelScript.defaults().withLength(SHORT_TOKENS).withLatency(pace))
                .withModel("long-m", ModelScript.defaults().withLength(400).withLatency(pace))
                // the prober's test: a 4 s answer whose probes (32 tokens, 16 for the known-answer check) are quick,
                // and a model only the prober asks
                .withModel("marathon-m", ModelScript.defaults().withLength(800)
                        .withLatency(ModelScript.Latency.of(20, 200)))
                .withModel("probed-m", ModelScript.defaults().withLength(24)
                        .withLatency(ModelScript.Latency.of(5, 400))));
    }

    @AfterAll
    static void stop() {
        if (sim != null) {
            sim.close();
        }
        if (redis != null) {
            redis.close();
        }
        if (vertx != null) {
            vertx.close();
        }
    }

    @Test
    void sigtermFinishesStreamsInFlightRefusesNewRequestsAndEndsTheRestAtTheGracePeriod() throws Exception {
        Launched launched = launch("hedgerow-shutdown", """
                revision: 1
                orgs:
                  - id: acme
                    keys: [{ name: app, key: "k-acme" }]
                    providers:
                      - { id: sim, base_url: "%s", api_key: "sk-sim" }
                    routes:
                      - { alias: short, provider: sim, model: short-m }
                      - { alias: long, provider: sim, model: long-m }
                """.formatted(sim.baseUrl()), Map.of(
                "HEDGEROW_PROBER_INTERVAL", "0s", "HEDGEROW_STATE_WRITE_BATCH", "10m"));
        Process app = launched.app();
        Path log = launched.log();
        int port = launched.port();
        try {
            // Quarkus logs "Listening on" once the HTTP server is bound; "Hedgerow ready" comes before it, and a
            // request sent between the two was refused on a loaded machine
            awaitLog(app, log, "Listening on:", Duration.ofMinutes(2));
            HttpClient http = HttpClient.newBuilder().version(HttpClient.Version.HTTP_1_1).build();
            URI chat = URI.create("http://127.0.0.1:" + port + "/v1/chat/completions");

            Stream longer = Stream.open(http, chat, "long");
            Stream shorter = Stream.open(http, chat, "short");
            Stream twoChoices = Stream.open(http, chat, "long", "k-acme", ",\"n\":2");
            assertTrue(longer.firstContent.await(30, TimeUnit.SECONDS), () -> "the long stream began: "
                    + (longer.body.isDone() ? longer.body.handle((b, t) -> t != null ? t.toString() : b).join()
                    : "no answer yet"));
            assertTrue(shorter.firstContent.await(30, TimeUnit.SECONDS), "the short stream began");
            assertTrue(twoChoices.firstContent.await(30, TimeUnit.SECONDS), "the stream of two choices began");

            app.destroy(); // SIGTERM
            awaitLog(app, log, "Hedgerow is shutting down", Duration.ofSeconds(20));

            HttpResponse<String> refused = http.send(request(chat, "short"), HttpResponse.BodyHandlers.ofString());
            assertEquals(503, refused.statusCode(), refused.body());
            JsonNode err = new com.fasterxml.jackson.databind.ObjectMapper().readTree(refused.body()).path("error");
            assertEquals("server_shutting_down", err.path("code").asText(), refused.body());
            assertEquals("server_error", err.path("type").asText(), refused.body());
            assertEquals("1", refused.headers().firstValue("retry-after").orElse(null));
            assertEquals("1000", refused.headers().firstValue("retry-after-ms").orElse(null));

            String shortBody = shorter.body.get(60, TimeUnit.SECONDS);
            assertTrue(Sse.endsWithDone(shortBody), "the stream in flight finished:\n" + shortBody);
            assertEquals(SimText.expected(SEED, PROMPT, SHORT_TOKENS), Sse.content(shortBody));
            assertTrue(Sse.events(shortBody).stream().noneMatch(e -> e.has("error")), shortBody);

            String longBody = longer.body.get(60, TimeUnit.SECONDS);
            assertTrue(Sse.endsWithDone(longBody), "the long stream ended with [DONE]:\n" + longBody);
            List<JsonNode> events = Sse.events(longBody);
            JsonNode last = events.get(events.size() - 1);
            assertEquals("server_shutting_down", last.path("error").path("code").asText(), longBody);
            String delivered = Sse.content(longBody);
            assertFalse(delivered.isEmpty());
            assertTrue(SimText.expected(SEED, PROMPT, 400).startsWith(delivered), delivered);
            assertEquals(delivered.codePointCount(0, delivered.length()),
                    last.path("delivered").path("content_chars").asInt(), last.toString());
            assertEquals("shutdown", last.path("attempt_trail").path(0).path("outcome").asText(), last.toString());

            // a stream of two choices says what each choice received, so each can be asked for again
            String twoBody = twoChoices.body.get(60, TimeUnit.SECONDS);
            List<JsonNode> twoEvents = Sse.events(twoBody);
            JsonNode twoLast = twoEvents.get(twoEvents.size() - 1);
            assertEquals("server_shutting_down", twoLast.path("error").path("code").asText(), twoBody);
            int sum = 0;
            for (int i = 0; i < 2; i++) {
                StringBuilder text = new StringBuilder();
                for (JsonNode e : twoEvents) {
                    for (JsonNode c : e.path("choices")) {
                        if (c.path("index").asInt() == i) {
                            text.append(c.path("delta").path("content").asText(""));
                        }
                    }
                }
                JsonNode choice = twoLast.path("delivered").path("choices").path(i);
                assertEquals(i, choice.path("index").asInt(-1), twoLast.toString());
                assertEquals(text.codePointCount(0, text.length()), choice.path("content_chars").asInt(-1),
                        twoLast.toString());
                sum += text.codePointCount(0, text.length());
            }
            assertTrue(sum > 0, twoBody);
            assertEquals(sum, twoLast.path("delivered").path("content_chars").asInt(), twoLast.toString());

            assertTrue(app.waitFor(30, TimeUnit.SECONDS), "the process exits after the grace period");
            String out = Files.readString(log);
            assertTrue(out.matches("(?s).*request \\S+ org=acme key=app alias=short status=200 .*"), out);
            assertTrue(out.matches("(?s).*request \\S+ org=acme key=app alias=long status=503 .*\"outcome\":"
                    + "\"shutdown\".*"), out);
            assertFalse(out.contains("status=499"), out);

            // what the two requests billed and the long one's audit event reached Redis before the process went
            String day = LocalDate.now(ZoneOffset.UTC).toString();
            String ledger = Resp.command(redis.port(), "HGETALL", "hr:{o:acme}:ledger:" + day);
            assertTrue(ledger.contains("short") && ledger.contains("long"), "ledger: " + ledger);
            String audit = Resp.command(redis.port(), "XRANGE", "hr:{o:acme}:audit", "-", "+");
            assertTrue(audit.contains("503") && audit.contains("shutdown"), "audit: " + audit);
        } finally {
            if (app.isAlive()) {
                app.destroyForcibly();
            }
        }
    }

    /**
     * The prober's timer stops when the drain begins: while a stream keeps the process in its grace period, no new
     * probe round starts. A route only the prober asks for ({@code probed-m}) gets a speed probe and a known-answer
     * check per round; after the signal it may get at most the rest of the one round already running (rounds on an
     * instance never overlap). Before, the timer ran on until the process stopped, a round every few hundred ms here.
     */
    @Test
    void sigtermStopsTheProbersTimerBeforeTheGracePeriod() throws Exception {
        Launched launched = launch("hedgerow-shutdown-prober", """
                revision: 1
                orgs:
                  - id: probing
                    keys: [{ name: app, key: "k-probing" }]
                    providers:
                      - { id: sim, base_url: "%s", api_key: "sk-sim" }
                    routes:
                      - { alias: marathon, provider: sim, model: marathon-m }
                      - { alias: probed, provider: sim, model: probed-m }
                """.formatted(sim.baseUrl()), Map.of(
                "HEDGEROW_PROBER_INTERVAL", "100ms", "HEDGEROW_PROBER_MIN_INTERVAL", "0s"));
        Process app = launched.app();
        Path log = launched.log();
        int port = launched.port();
        try {
            awaitLog(app, log, "Listening on:", Duration.ofMinutes(2));
            long deadline = System.nanoTime() + Duration.ofSeconds(60).toNanos();
            while (sim.stats("probed-m").received() < 4) { // the timer's rounds are running
                assertTrue(System.nanoTime() < deadline, () -> "no probe rounds:\n" + read(log));
                Thread.sleep(20);
            }
            HttpClient http = HttpClient.newBuilder().version(HttpClient.Version.HTTP_1_1).build();
            URI chat = URI.create("http://127.0.0.1:" + port + "/v1/chat/completions");
            Stream marathon = Stream.open(http, chat, "marathon", "k-probing");
            assertTrue(marathon.firstContent.await(30, TimeUnit.SECONDS), "the stream began");

            app.destroy(); // SIGTERM
            awaitLog(app, log, "Hedgerow is shutting down", Duration.ofSeconds(20));
            long atSignal = sim.stats("probed-m").received();

            String body = marathon.body.get(60, TimeUnit.SECONDS); // the grace period: the stream in flight ends
            assertTrue(Sse.endsWithDone(body), body);
            assertTrue(app.waitFor(30, TimeUnit.SECONDS), "the process exits");
            long after = sim.stats("probed-m").received() - atSignal;
            assertTrue(after <= 2, after + " probe request(s) reached the provider after the signal (at most the "
                    + "round already running may send its 2):\n" + read(log));
        } finally {
            if (app.isAlive()) {
                app.destroyForcibly();
            }
        }
    }

    /** The packaged app, started as a process. */
    record Launched(Process app, Path log, int port) {
    }

    /**
     * Starts the packaged app on {@code catalogYaml} with the suite's Redis, a free port, this test's grace period and
     * {@code env} on top of an environment cleared of Hedgerow's and Quarkus' settings; its output goes to a log file.
     */
    private static Launched launch(String name, String catalogYaml, Map<String, String> env) throws IOException {
        Path dir = Files.createTempDirectory(name);
        Path catalog = dir.resolve("hedgerow.yaml");
        Files.writeString(catalog, catalogYaml);
        int port = freePort();
        Path log = dir.resolve("app.log");
        ProcessBuilder pb = PackagedApp.process(log);
        pb.environment().put("QUARKUS_HTTP_PORT", Integer.toString(port));
        pb.environment().put("HEDGEROW_CONFIG", catalog.toString());
        pb.environment().put("REDIS_URL", redis.url());
        pb.environment().put("HEDGEROW_SECRET_KEY", AppTestResource.SECRET_KEY);
        pb.environment().put("HEDGEROW_SHUTDOWN_GRACE", GRACE);
        pb.environment().putAll(env);
        return new Launched(pb.start(), log, port);
    }

    private static String read(Path log) {
        try {
            return Files.readString(log);
        } catch (IOException e) {
            return e.toString();
        }
    }

    /** One streamed chat request read as it arrives: its first content, then its whole body. */
    static final class Stream {
        final CountDownLatch firstContent = new CountDownLatch(1);
        final CompletableFuture<String> body = new CompletableFuture<>();

        static Stream open(HttpClient http, URI chat, String alias) {
            return open(http, chat, alias, "k-acme");
        }

        static Stream open(HttpClient http, URI chat, String alias, String key) {
            return open(http, chat, alias, key, "");
        }

        static Stream open(HttpClient http, URI chat, String alias, String key, String extra) {
            Stream s = new Stream();
            http.sendAsync(request(chat, alias, key, extra), HttpResponse.BodyHandlers.ofInputStream()).whenComplete((r, t) -> {
                if (t != null) {
                    s.body.completeExceptionally(t);
                    return;
                }
                Thread reader = new Thread(() -> s.read(r.body()), "stream-" + alias);
                reader.setDaemon(true);
                reader.start();
            });
            return s;
        }

        private void read(InputStream in) {
            StringBuilder sb = new StringBuilder();
            try (BufferedReader r = new BufferedReader(new InputStreamReader(in, StandardCharsets.UTF_8))) {
                String line;
                while ((line = r.readLine()) != null) {
                    sb.append(line).append('\n');
                    if (line.contains("\"content\":\"")) {
                        firstContent.countDown();
                    }
                }
                body.complete(sb.toString());
            } catch (IOException e) {
                body.completeExceptionally(new AssertionError("cut after:\n" + sb, e));
            }
        }
    }

    static HttpRequest request(URI chat, String alias) {
        return request(chat, alias, "k-acme");
    }

    static HttpRequest request(URI chat, String alias, String key) {
        return request(chat, alias, key, "");
    }

    /** A streamed chat request for {@code alias}; {@code extra} is added to its body's fields (",\"n\":2"). */
    static HttpRequest request(URI chat, String alias, String key, String extra) {
        return HttpRequest.newBuilder(chat).header("Authorization", "Bearer " + key)
                .header("Content-Type", "application/json")
                .POST(HttpRequest.BodyPublishers.ofString("{\"model\":\"" + alias + "\",\"stream\":true" + extra
                        + ",\"messages\":[{\"role\":\"user\",\"content\":\"" + PROMPT + "\"}]}"))
                .build();
    }

    /** Waits for {@code text} in the process's log (its output), failing if the process ends first or time runs out. */
    static void awaitLog(Process app, Path log, String text, Duration max) throws Exception {
        long deadline = System.nanoTime() + max.toNanos();
        while (System.nanoTime() < deadline) {
            String out = Files.readString(log);
            if (out.contains(text)) {
                return;
            }
            if (!app.isAlive()) {
                throw new AssertionError("the process ended (" + app.exitValue() + ") before \"" + text + "\":\n"
                        + out);
            }
            Thread.sleep(20);
        }
        throw new AssertionError("no \"" + text + "\" within " + max + ":\n" + Files.readString(log));
    }

    static int freePort() throws IOException {
        try (ServerSocket s = new ServerSocket(0)) {
            return s.getLocalPort();
        }
    }
}
