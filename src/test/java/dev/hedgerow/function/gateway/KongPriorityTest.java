package dev.hedgerow.function.gateway;

import dev.hedgerow.sim.Fault;
import dev.hedgerow.sim.ModelScript;
import dev.hedgerow.sim.SimConfig;
import dev.hedgerow.sim.SimServer;
import dev.hedgerow.state.MemoryStateStore;
import dev.hedgerow.testsupport.GatewayHarness;
import dev.hedgerow.time.FakeTicker;
import io.restassured.response.Response;
import io.vertx.core.Vertx;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

import java.time.Duration;
import java.util.List;
import java.util.Map;

import static io.restassured.RestAssured.given;
import static org.junit.jupiter.api.Assertions.assertEquals;

/**
 * Kong's {@code priority} strategy through the HTTP API, on a gateway whose state store runs on a fake ticker: the
 * top tier takes all traffic until it fails, the next tier only stands in while it is out, and a member the tier
 * gives weight 0 (no share of its traffic) still serves for its tier before the next tier does.
 */
class KongPriorityTest {
    static final String YAML = """
            orgs:
              - id: acme
                keys: [{ name: app, key: "k-acme" }]
                providers:
                  - { id: sim, base_url: "${SIM_SIM_URL}", api_key: "sk-sim" }
                routes:
                  - { id: top, alias: tiers, provider: sim, model: m-top, priority: 1 }
                  - { id: low, alias: tiers, provider: sim, model: m-low, priority: 2 }
                  - { id: main, alias: standby, provider: sim, model: m-main, priority: 1, weight: 100 }
                  - { id: spare, alias: standby, provider: sim, model: m-spare, priority: 1, weight: 0 }
                  - { id: next, alias: standby, provider: sim, model: m-next, priority: 2, weight: 100 }
                groups:
                  tiers: { strategy: priority, hedging: false, breaker: { max_fails: 1, fail_timeout: 10s } }
                  standby: { strategy: priority, hedging: false, breaker: { max_fails: 1, fail_timeout: 10s } }
            """;

    Vertx vertx;
    Map<String, SimServer> sims;
    FakeTicker ticker;
    GatewayHarness gw;

    @BeforeEach
    void start() {
        vertx = Vertx.vertx();
        ModelScript instant = ModelScript.defaults().withLength(4).withLatency(ModelScript.Latency.INSTANT);
        SimConfig sim = SimConfig.of(5).withApiKey("sk-sim");
        for (String m : List.of("m-top", "m-low", "m-main", "m-spare", "m-next")) {
            sim = sim.withModel(m, instant);
        }
        sims = GatewayHarness.startSims(vertx, Map.of("sim", sim));
        ticker = new FakeTicker();
        gw = GatewayHarness.start(vertx, YAML, sims, new MemoryStateStore(ticker));
    }

    @AfterEach
    void stop() {
        gw.close();
        sims.values().forEach(SimServer::close);
        vertx.close().toCompletionStage().toCompletableFuture().join();
    }

    private Response send(String alias) {
        return given().baseUri(gw.baseUrl()).auth().oauth2("k-acme").contentType("application/json")
                .body("{\"model\":\"" + alias + "\",\"messages\":[{\"role\":\"user\",\"content\":\"tiers\"}]}")
                .post("/v1/chat/completions");
    }

    private String served(String alias) {
        Response r = send(alias);
        assertEquals(200, r.statusCode(), r.asString());
        return r.header("x-hedgerow-route");
    }

    private long received(String model) {
        return sims.get("sim").stats(model).received();
    }

    @Test
    void theLowerTierStandsInOnlyWhileTheTopTierIsOutAndTrafficReturnsAfterFailTimeout() {
        for (int i = 0; i < 5; i++) {
            assertEquals("top", served("tiers"));
        }
        sims.get("sim").enqueue("m-top", Fault.status(500));
        assertEquals("low", served("tiers"), "the failure opened top's breaker (max_fails 1): the next tier serves");
        long top = received("m-top");
        ticker.advance(Duration.ofSeconds(9));
        for (int i = 0; i < 5; i++) {
            assertEquals("low", served("tiers"), "top is out for fail_timeout");
        }
        assertEquals(top, received("m-top"));

        ticker.advance(Duration.ofSeconds(2));
        // reconsidered after fail_timeout: its probe succeeds and the top tier takes everything again
        for (int i = 0; i < 5; i++) {
            assertEquals("top", served("tiers"));
        }
    }

    @Test
    void aZeroWeightMemberServesForItsTierBeforeTheNextTier() {
        for (int i = 0; i < 6; i++) {
            assertEquals("main", served("standby"), "weight 0 takes no share of its tier's traffic");
        }
        sims.get("sim").enqueue("m-main", Fault.status(500));
        assertEquals("spare", served("standby"), "main failed over to its tier mate");
        for (int i = 0; i < 4; i++) {
            assertEquals("spare", served("standby"), "main is out: its tier mate serves, not the next tier");
        }
        assertEquals(0, received("m-next"));

        sims.get("sim").enqueue("m-spare", Fault.status(500));
        assertEquals("next", served("standby"), "the whole top tier is out: the next tier serves");
    }
}
