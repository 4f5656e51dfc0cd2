package dev.hedgerow.function.gateway;

import dev.hedgerow.catalog.Org;
import dev.hedgerow.catalog.Route;
import dev.hedgerow.function.prober.VertxMetricsSource;
import dev.hedgerow.prober.ProberConfig;
import dev.hedgerow.routing.Router;
import dev.hedgerow.routing.SloTracker;
import dev.hedgerow.runtime.Hedgerow;
import dev.hedgerow.sim.ModelScript;
import dev.hedgerow.sim.SimConfig;
import dev.hedgerow.sim.SimServer;
import dev.hedgerow.state.MemoryStateStore;
import dev.hedgerow.state.RouteSnapshot;
import dev.hedgerow.testsupport.GatewayHarness;
import dev.hedgerow.time.Ticker;
import io.restassured.RestAssured;
import io.restassured.response.Response;
import io.vertx.core.Vertx;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

import java.time.Duration;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;

import static io.restassured.RestAssured.given;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Keln's speed targets over real HTTP, measured "from live probes and live traffic": a route measured below them
 * gets no traffic while a route meeting them can serve, so nothing but the prober measures it again; once the
 * prober's rounds measure it healthy it returns to normal rotation, with no live request spent on it.
 */
class SloRecoveryTest {
    static final String YAML = """
            orgs:
              - id: acme
                keys: [{ name: app, key: "k-acme" }]
                providers:
                  - { id: alpha, base_url: "${SIM_ALPHA_URL}" }
                  - { id: beta, base_url: "${SIM_BETA_URL}" }
                routes:
                  - { id: r-quick, alias: slo, provider: alpha, model: quick }
                  - { id: r-steady, alias: slo, provider: beta, model: steady }
                  - { id: w-alpha, alias: warm, provider: alpha, model: spare }
                  - { id: w-beta, alias: warm, provider: beta, model: spare }
            """;

    static Vertx vertx;
    static Map<String, SimServer> sims;
    static GatewayHarness gw;
    static VertxMetricsSource metrics;

    @BeforeAll
    static void start() {
        vertx = Vertx.vertx();
        Map<String, SimConfig> cfg = new LinkedHashMap<>();
        // the first token at once, but 20 tokens/s: below the 50 tokens/s target
        ModelScript spare = ModelScript.defaults().withLength(4).withLatency(ModelScript.Latency.of(2, 0));
        cfg.put("alpha", SimConfig.of(5).withModel("quick", ModelScript.defaults().withLength(12)
                .withLatency(ModelScript.Latency.of(2, 20))).withModel("spare", spare));
        // the first token late, but decoding well above the target
        cfg.put("beta", SimConfig.of(5).withModel("steady", ModelScript.defaults().withLength(12)
                .withLatency(ModelScript.Latency.of(300, 1000))).withModel("spare", spare));
        sims = GatewayHarness.startSims(vertx, cfg);
        gw = GatewayHarness.start(vertx, YAML, sims, new MemoryStateStore(Ticker.system()));
        metrics = new VertxMetricsSource(vertx);
        RestAssured.baseURI = gw.baseUrl();
        // a fresh JVM's first requests are slow (class loading, JIT, connections): spent on another alias, so the
        // routes under test are measured at their own speed
        for (int i = 0; i < 6; i++) {
            given().auth().oauth2("k-acme").contentType("application/json")
                    .body("{\"model\":\"warm\",\"stream\":true,\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}]}")
                    .post("/v1/chat/completions").then().statusCode(200);
        }
    }

    @AfterAll
    static void stop() {
        gw.close();
        metrics.close();
        sims.values().forEach(SimServer::close);
        vertx.close().toCompletionStage().toCompletableFuture().join();
    }

    static String chat(String extra) {
        Response r = given().auth().oauth2("k-acme").contentType("application/json")
                .body("{\"model\":\"slo\",\"stream\":true,\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}]"
                        + extra + "}")
                .post("/v1/chat/completions");
        assertEquals(200, r.statusCode(), r.asString());
        return r.header("x-hedgerow-route");
    }

    static List<String> routes(int n) {
        List<String> out = new ArrayList<>();
        for (int i = 0; i < n; i++) {
            out.add(chat(""));
        }
        return out;
    }

    static void proberRound() {
        gw.proberRound(metrics, ProberConfig.defaults().withMinInterval(Duration.ZERO));
    }

    /** Whether r-quick's standing against the speed targets is back to MEETS, as the router reads it. */
    static boolean quickMeetsTargets() {
        Hedgerow core = gw.core();
        Org org = core.catalog().current().org("acme").orElseThrow();
        Route quick = org.routes().stream().filter(r -> r.id().equals("r-quick")).findFirst().orElseThrow();
        String key = Router.key(org, quick);
        RouteSnapshot s = core.store().snapshot(List.of(key), Duration.ofMinutes(10)).await()
                .atMost(Duration.ofSeconds(5)).get(key);
        return s != null && core.models().sloStatus(s, org.group("slo").slo()) == SloTracker.Status.MEETS;
    }

    @Test
    void aRouteBelowTheTargetsReturnsOnceTheProberMeasuresItHealthy() {
        for (String p : List.of("alpha", "beta")) {
            for (int i = 0; i < 2; i++) {
                chat(",\"provider\":{\"only\":[\"" + p + "\"]}");
            }
        }
        assertEquals(Set.of("r-steady"), new HashSet<>(routes(4)), "the quicker first token decodes too slowly");

        // the operator fixes the route; no live request reaches it, the prober's rounds measure it
        gw.sim("alpha").script("quick", ModelScript.defaults().withLength(12)
                .withLatency(ModelScript.Latency.of(2, 1000)));
        long live = gw.sim("alpha").stats("quick").received();
        proberRound();
        assertEquals(Set.of("r-steady"), new HashSet<>(routes(2)), "one good probe is not yet a recovery");
        proberRound();
        proberRound();
        // recovery takes a run of good samples (SloTracker's recoverAfter) and one probe a loaded machine stalls
        // below the decode target restarts the run (a fresh-clone CI run failed so once): a few more rounds may go
        int rounds = 3;
        for (; rounds < 7 && !quickMeetsTargets(); rounds++) {
            proberRound();
        }

        List<String> after = routes(6);
        assertTrue(after.stream().filter("r-quick"::equals).count() >= 4, "back in rotation, predicted fastest: "
                + after + " after " + rounds + " prober rounds");
        assertTrue(gw.sim("alpha").stats("quick").received() > live, "the prober measured it");
    }
}
