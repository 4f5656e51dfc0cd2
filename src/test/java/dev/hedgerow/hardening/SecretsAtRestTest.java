package dev.hedgerow.hardening;

import dev.hedgerow.sim.ModelScript;
import dev.hedgerow.sim.SimConfig;
import dev.hedgerow.sim.SimServer;
import dev.hedgerow.sim.SimStats;
import dev.hedgerow.state.RedisStateStore;
import dev.hedgerow.testsupport.GatewayHarness;
import dev.hedgerow.testsupport.LogCapture;
import dev.hedgerow.testsupport.RedisServer;
import dev.hedgerow.testsupport.RedisStores;
import io.vertx.core.Vertx;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;

import static dev.hedgerow.testsupport.Eventually.eventually;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Secrets at rest and in flight, on a real gateway over a private Redis: client and admin keys are stored only as
 * SHA-256, provider API keys only sealed ("enc:v1:"), and neither a response nor a log line ever carries one,
 * while the provider still receives its key.
 */
class SecretsAtRestTest {
    static final String PROVIDER_KEY = "sk-alpha-SECRET-0001";
    static final String WRONG_PROVIDER_KEY = "sk-wrong-SECRET-0002";
    static final List<String> SECRETS = List.of(PROVIDER_KEY, WRONG_PROVIDER_KEY, "k-acme-SECRET-0003",
            "a-acme-SECRET-0004", "cap-SECRET-0005");
    static final String YAML = """
            orgs:
              - id: acme
                keys: [{ name: app, key: "k-acme-SECRET-0003" }]
                admin_keys: [{ name: ops, key: "a-acme-SECRET-0004" }]
                providers:
                  - { id: alpha, base_url: "${SIM_ALPHA_URL}", api_key: "sk-alpha-SECRET-0001", capacity_key: "cap-SECRET-0005" }
                  - { id: wrong, base_url: "${SIM_ALPHA_URL}", api_key: "sk-wrong-SECRET-0002" }
                routes:
                  - { alias: chat, provider: alpha, model: m }
                  - { alias: denied, provider: wrong, model: m }
            """;
    static Vertx vertx;
    static RedisServer redis;
    static Map<String, SimServer> sims;
    static GatewayHarness gw;
    static final HttpClient CLIENT = HttpClient.newHttpClient();

    @BeforeAll
    static void start() {
        vertx = Vertx.vertx();
        redis = RedisServer.start();
        sims = GatewayHarness.startSims(vertx, Map.of("alpha", SimConfig.of(1).withApiKey(PROVIDER_KEY)
                .withModel("m", ModelScript.defaults().withLength(6).withLatency(ModelScript.Latency.of(0, 0)))));
        RedisStateStore store = RedisStores.standalone(vertx, redis.url());
        gw = GatewayHarness.start(vertx, YAML, sims, store);
    }

    @AfterAll
    static void stop() {
        gw.close();
        sims.values().forEach(SimServer::close);
        redis.close();
        vertx.close().toCompletionStage().toCompletableFuture().join();
    }

    static String call(String method, String path, String key, String body) throws Exception {
        HttpRequest.Builder b = HttpRequest.newBuilder(URI.create(gw.baseUrl() + path))
                .header("content-type", "application/json");
        if (key != null) {
            b.header("authorization", "Bearer " + key);
        }
        b.method(method, body == null ? HttpRequest.BodyPublishers.noBody() : HttpRequest.BodyPublishers.ofString(body));
        HttpResponse<String> r = CLIENT.send(b.build(), HttpResponse.BodyHandlers.ofString());
        return r.statusCode() + " " + r.headers().map() + "\n" + r.body();
    }

    static String chat(String alias, boolean stream) {
        return "{\"model\":\"" + alias + "\",\"stream\":" + stream
                + ",\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}]}";
    }

    /** Ordinary traffic and every kind of failure: what clients and logs see of it. */
    static List<String> traffic() throws Exception {
        List<String> out = new ArrayList<>();
        out.add(call("POST", "/v1/chat/completions", "k-acme-SECRET-0003", chat("chat", true)));
        out.add(call("POST", "/v1/chat/completions", "k-acme-SECRET-0003", chat("chat", false)));
        out.add(call("POST", "/v1/chat/completions", "k-acme-SECRET-0003", chat("denied", false)));
        out.add(call("POST", "/v1/chat/completions", "k-acme-SECRET-0003", chat("denied", true)));
        out.add(call("POST", "/v1/chat/completions", "k-acme-SECRET-0003", chat("nosuch", false)));
        out.add(call("POST", "/v1/chat/completions", "a-acme-SECRET-0004", chat("chat", false)));
        out.add(call("POST", "/v1/chat/completions", "k-acme-SECRET-0003", "{\"model\":\"chat\""));
        out.add(call("GET", "/v1/models", "k-acme-SECRET-0003", null));
        return out;
    }

    @Test
    void theProviderStillReceivesItsKey() throws Exception {
        String r = call("POST", "/v1/chat/completions", "k-acme-SECRET-0003", chat("chat", false));
        assertTrue(r.startsWith("200 "), r);
        SimStats s = gw.sim("alpha").stats("m");
        assertTrue(s.recent().stream().anyMatch(x -> ("Bearer " + PROVIDER_KEY).equals(x.authorization())));
    }

    @Test
    void storedStateHoldsNoPlaintextKeyOfAnyKind() throws Exception {
        traffic();
        Map<String, String> dump = RedisDump.all(redis.port());
        assertTrue(dump.size() > 3, dump.keySet().toString());
        boolean sealedCatalog = false;
        for (Map.Entry<String, String> e : dump.entrySet()) {
            for (String secret : SECRETS) {
                assertFalse(String.valueOf(e.getValue()).contains(secret) || e.getKey().contains(secret),
                        "plaintext secret in " + e.getKey());
            }
            sealedCatalog |= String.valueOf(e.getValue()).contains("\"api_key\":\"enc:v1:");
        }
        assertTrue(sealedCatalog, "no sealed provider key found in " + dump.keySet());
    }

    @Test
    void noResponseAndNoLogLineCarriesAKey() throws Exception {
        List<String> responses;
        List<String> logs;
        try (LogCapture capture = new LogCapture()) {
            responses = traffic();
            // accounting runs after the response: wait for the request log line of each dispatched call (200, or
            // 502 when "denied"'s one route failed; a "denied" call finding that route cooling down is not dispatched)
            long dispatched = responses.subList(0, 7).stream() // the chat calls (the last is GET /v1/models)
                    .filter(r -> r.startsWith("200 ") || r.startsWith("502 ")).count();
            eventually(() -> capture.lines().stream().filter(l -> l.startsWith("dev.hedgerow.request ")).count()
                            >= dispatched,
                    "the request log has a line for each dispatched call");
            logs = capture.lines();
        }
        assertFalse(logs.isEmpty(), "the request log should have written something");
        for (String secret : SECRETS) {
            for (String r : responses) {
                assertFalse(r.contains(secret), "response carries " + secret + ": " + r);
            }
            for (String l : logs) {
                assertFalse(l.contains(secret), "log carries " + secret + ": " + l);
            }
        }
        // the wrong provider key did reach the provider, which refused it: a failure of that route (502 when it is
        // the only one), never passed through as if the client's key were wrong
        assertTrue(responses.get(2).startsWith("502 ") || responses.get(2).startsWith("503 "), responses.get(2));
        assertTrue(responses.get(3).startsWith("503 "), responses.get(3));
    }

    @Test
    void theInMemoryCatalogHoldsOnlyKeyHashes() {
        String printed = String.valueOf(gw.core().catalog().current().orgs());
        for (String secret : SECRETS) {
            assertFalse(printed.contains(secret), printed);
        }
        assertEquals(dev.hedgerow.catalog.Keys.sha256Hex("k-acme-SECRET-0003"),
                gw.core().catalog().current().orgs().get(0).keys().get(0).sha256());
    }
}
