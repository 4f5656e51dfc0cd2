package dev.hedgerow.function.gateway;

import dev.hedgerow.catalog.SecretBox;
import dev.hedgerow.sim.ModelScript;
import dev.hedgerow.sim.SimConfig;
import dev.hedgerow.sim.SimServer;
import dev.hedgerow.state.MemoryStateStore;
import dev.hedgerow.state.StateStore;
import dev.hedgerow.testsupport.GatewayHarness;
import dev.hedgerow.testsupport.LogCapture;
import dev.hedgerow.time.Ticker;
import io.vertx.core.Vertx;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Set;

import static dev.hedgerow.testsupport.Eventually.eventually;
import static io.restassured.RestAssured.given;
import static org.junit.jupiter.api.Assertions.assertEquals;

/**
 * An instance whose secret key is not the one the stored catalog was sealed with (one mis-set pod, or a fleet
 * restarted with a rotated key and an unchanged file) cannot read the stored orgs: it knows which (its readiness
 * reports them, and goes DOWN) and logs each once, not at every poll with a stack trace (2,000 lines in 22 s with two
 * orgs; found by hunt8). Two instances on one store, each with its own key, over HTTP.
 */
class WrongSecretKeyTest {
    static final String YAML = """
            orgs:
              - id: acme
                keys: [{ name: app, key: "k-acme" }]
                providers:
                  - { id: alpha, base_url: "${SIM_ALPHA_URL}", api_key: "sk-alpha" }
                routes:
                  - { alias: chat, provider: alpha, model: m }
            """;

    /** Not this JVM's ephemeral key, which the harness seals with by default. */
    static final String OTHER_KEY = java.util.Base64.getEncoder().encodeToString(new byte[32]);

    Vertx vertx;
    Map<String, SimServer> sims;
    final List<GatewayHarness> instances = new ArrayList<>();

    @BeforeEach
    void start() {
        vertx = Vertx.vertx();
        sims = GatewayHarness.startSims(vertx, Map.of("alpha", SimConfig.of(1).withApiKey("sk-alpha").withModel("m",
                ModelScript.defaults().withLength(4).withLatency(ModelScript.Latency.of(0, 0)))));
    }

    @AfterEach
    void stop() {
        instances.forEach(GatewayHarness::close);
        sims.values().forEach(SimServer::close);
        vertx.close().toCompletionStage().toCompletableFuture().join();
    }

    static int chat(GatewayHarness gw) {
        return given().baseUri(gw.baseUrl()).auth().oauth2("k-acme").contentType("application/json")
                .body("{\"model\":\"chat\",\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}]}")
                .post("/v1/chat/completions").statusCode();
    }

    @Test
    void anInstanceThatCannotReadTheStoredCatalogSaysWhichOrgsOnceAndKeepsSayingSo() throws InterruptedException {
        StateStore shared = new MemoryStateStore(Ticker.system());
        GatewayHarness sealer = GatewayHarness.start(vertx, YAML, sims, shared);
        instances.add(sealer);
        assertEquals(200, chat(sealer));
        try (LogCapture log = new LogCapture()) {
            GatewayHarness other = GatewayHarness.start(vertx, YAML, sims, shared, SecretBox.of(OTHER_KEY));
            instances.add(other);
            eventually(() -> other.core().catalog().unreadableOrgs().equals(Set.of("acme")), "acme is unreadable");
            Thread.sleep(1_000);   // five catalog polls
            assertEquals(Set.of("acme"), other.core().catalog().unreadableOrgs(), "still, at every poll");
            assertEquals(401, chat(other), "it serves no org it cannot read");
            long errors = log.lines().stream().filter(l -> l.contains("stored catalog of org acme")).count();
            assertEquals(1, errors, String.join("\n", log.lines()));
        }
        assertEquals(Set.of(), sealer.core().catalog().unreadableOrgs());
    }

    /**
     * With a file revision, such an instance took the org it cannot read for one whose publication was lost and
     * logged "publishing it again" at every poll, writing nothing (found by hunt14).
     */
    @Test
    void anInstanceThatCannotReadTheStoredCatalogDoesNotKeepPublishingItsFile() throws InterruptedException {
        String revised = "revision: 3\n" + YAML;
        StateStore shared = new MemoryStateStore(Ticker.system());
        instances.add(GatewayHarness.start(vertx, revised, sims, shared));
        try (LogCapture log = new LogCapture()) {
            GatewayHarness other = GatewayHarness.start(vertx, revised, sims, shared, SecretBox.of(OTHER_KEY));
            instances.add(other);
            eventually(() -> other.core().catalog().unreadableOrgs().equals(Set.of("acme")), "acme is unreadable");
            Thread.sleep(1_000);   // five catalog polls
            assertEquals(0, log.lines().stream().filter(l -> l.contains("publishing it again")).count(),
                    String.join("\n", log.lines()));
        }
    }
}
