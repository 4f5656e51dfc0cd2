package dev.hedgerow.function.gateway;

import com.fasterxml.jackson.databind.JsonNode;
import dev.hedgerow.function.prober.VertxMetricsSource;
import dev.hedgerow.prober.ProberConfig;
import dev.hedgerow.sim.ModelScript;
import dev.hedgerow.sim.SimConfig;
import dev.hedgerow.sim.SimServer;
import dev.hedgerow.state.MemoryStateStore;
import dev.hedgerow.testsupport.GatewayHarness;
import dev.hedgerow.time.Ticker;
import io.vertx.core.Vertx;
import io.restassured.response.Response;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

import java.time.Duration;
import java.util.Map;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * A route that turns slow for a few answers and then recovers, under {@code auto}, through the HTTP API (hedging
 * off, so each slow answer is learnt whole): it loses the pick within three answers and, once it is fast again, wins
 * it back after a few prober rounds (nothing else measures a route that lost the pick). The shift's errors were
 * learnt as the route's spread, so its recovered probes fell inside that spread's clip and the line followed them
 * only by forgetting: some 16 rounds, 4 minutes at the default interval, before it was picked again (found by
 * hunt10).
 */
class AutoRecoveryTest {
    static final String YAML = """
            orgs:
              - id: acme
                keys: [{ name: app, key: "k-acme" }]
                providers:
                  - { id: alpha, base_url: "${SIM_ALPHA_URL}" }
                  - { id: beta, base_url: "${SIM_BETA_URL}" }
                routes:
                  - { id: r-alpha, alias: rec, provider: alpha, model: m }
                  - { id: r-beta, alias: rec, provider: beta, model: m }
                groups:
                  rec: { hedging: false }
            """;

    static Vertx vertx;
    static Map<String, SimServer> sims;
    static GatewayHarness gw;
    static VertxMetricsSource metrics;

    static ModelScript ttft(long ms) {
        return ModelScript.defaults().withLength(2).withLatency(ModelScript.Latency.of(ms, 0));
    }

    @BeforeAll
    static void start() {
        vertx = Vertx.vertx();
        sims = GatewayHarness.startSims(vertx, Map.of("alpha", SimConfig.of(3).withModel("m", ttft(20)),
                "beta", SimConfig.of(3).withModel("m", ttft(250))));
        gw = GatewayHarness.start(vertx, YAML, sims, new MemoryStateStore(Ticker.system()));
        metrics = new VertxMetricsSource(vertx);
        GroupKit.learntTtft(gw.core().store(), "acme/r-alpha", 20);
        GroupKit.learntTtft(gw.core().store(), "acme/r-beta", 250);
    }

    @AfterAll
    static void stop() {
        gw.close();
        metrics.close();
        sims.values().forEach(SimServer::close);
        vertx.close().toCompletionStage().toCompletableFuture().join();
    }

    static void proberRound() {
        gw.proberRound(metrics, ProberConfig.defaults().withMinInterval(Duration.ZERO));
    }

    static String primary(int i) {
        Response r = GroupKit.chat(gw, "rec", "recovery " + i, true, null);
        assertEquals(200, r.statusCode(), r.asString());
        JsonNode trail = GroupKit.trail(r);
        return GroupKit.primary(trail);
    }

    @Test
    void aRouteSlowForAFewAnswersWinsThePickBackSoonAfterItRecovers() {
        assertEquals("r-alpha", primary(0));
        gw.sim("alpha").script("m", ttft(2000));
        int slowAnswers = 0;
        while (primary(++slowAnswers).equals("r-alpha")) {
            assertTrue(slowAnswers < 4, "alpha still picked after 3 slow answers");
        }
        gw.sim("alpha").script("m", ttft(20));
        int rounds = 0;
        while (!primary(100 + rounds).equals("r-alpha")) {
            // three probes far below its line in a row make the shift back
            assertTrue(++rounds <= 4, "alpha, fast again, not picked after " + (rounds - 1) + " prober rounds");
            proberRound();
        }
        for (int i = 0; i < 5; i++) {
            assertEquals("r-alpha", primary(200 + i), "alpha keeps the pick");
        }
    }
}
