package dev.hedgerow.function.gateway;

import dev.hedgerow.sim.Fault;
import dev.hedgerow.sim.ModelScript;
import dev.hedgerow.sim.SimConfig;
import dev.hedgerow.testsupport.GatewayHarness;
import dev.hedgerow.testsupport.Sse;
import org.junit.jupiter.api.Test;

import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.logging.Handler;
import java.util.logging.Level;
import java.util.logging.LogRecord;
import java.util.logging.Logger;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * A provider that resets its connection fails the attempt on it, which is recorded in the request's trail (and the
 * request fails over): Vert.x logged it once more at ERROR, "Connection reset" with no request to tell it by, once per
 * upstream reset, from the connection that had no handler of its own (found by hunt11: 378 such lines for 347
 * resets in a chaos run).
 */
class UpstreamResetLogTest {
    static final String YAML = """
            orgs:
              - id: acme
                keys: [{ name: app, key: "k-acme" }]
                providers:
                  - { id: alpha, base_url: "${SIM_ALPHA_URL}" }
                  - { id: beta, base_url: "${SIM_BETA_URL}" }
                routes:
                  - { alias: chat, provider: alpha, model: m, priority: 1 }
                  - { alias: chat, provider: beta, model: m, priority: 2 }
                groups:
                  chat: { strategy: priority, breaker: { max_fails: 0 } }
            """;

    @Test
    void anUpstreamResetIsInTheTrailAndNotLoggedAgainAsAnError() throws Exception {
        List<LogRecord> logged = new CopyOnWriteArrayList<>();
        Handler capture = new Handler() {
            @Override
            public void publish(LogRecord r) {
                logged.add(r);
            }

            @Override
            public void flush() {
            }

            @Override
            public void close() {
            }
        };
        Logger vertx = Logger.getLogger("io.vertx.core.net.impl.ConnectionBase");
        vertx.addHandler(capture);
        ModelScript text = ModelScript.defaults().withLength(8).withLatency(ModelScript.Latency.of(1, 0));
        try (GatewayHarness gw = GatewayHarness.start(YAML, Map.of("alpha", SimConfig.of(1).withModel("m", text),
                "beta", SimConfig.of(1).withModel("m", text)))) {
            for (int i = 0; i < 5; i++) {
                gw.sim("alpha").enqueue("m", Fault.reset());
                HttpResponse<String> r = HttpClient.newHttpClient().send(HttpRequest.newBuilder(
                                URI.create(gw.baseUrl() + "/v1/chat/completions"))
                        .header("Authorization", "Bearer k-acme").header("Content-Type", "application/json")
                        .POST(HttpRequest.BodyPublishers.ofString("{\"model\":\"chat\",\"stream\":true,"
                                + "\"messages\":[{\"role\":\"user\",\"content\":\"reset " + i + "\"}]}")).build(),
                        HttpResponse.BodyHandlers.ofString());
                assertEquals(200, r.statusCode(), r.body());
                assertEquals("transport_reset", Sse.trail(r.body()).get(0).path("error").asText(), r.body());
            }
            Thread.sleep(200);   // a connection's failure is handled on its event loop after the attempt's
        } finally {
            vertx.removeHandler(capture);
        }
        assertTrue(logged.stream().noneMatch(r -> r.getLevel().intValue() >= Level.WARNING.intValue()),
                () -> "logged: " + logged.stream().map(r -> r.getLevel() + " " + r.getMessage()).toList());
    }
}
