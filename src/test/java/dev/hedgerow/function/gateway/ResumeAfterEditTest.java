package dev.hedgerow.function.gateway;

import com.fasterxml.jackson.databind.JsonNode;
import dev.hedgerow.admin.AdminService;
import dev.hedgerow.catalog.Org;
import dev.hedgerow.sim.Fault;
import dev.hedgerow.sim.ModelScript;
import dev.hedgerow.sim.SimConfig;
import dev.hedgerow.testsupport.GatewayHarness;
import dev.hedgerow.testsupport.Sse;
import dev.hedgerow.testsupport.SseReader;
import org.junit.jupiter.api.Test;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;

import static org.junit.jupiter.api.Assertions.assertEquals;

/**
 * A stream's resume, and a priority tier's retry, go only to a route the catalog lets the request take then: one an
 * operator drained, or held out by pinning another, after the request began is passed over. Each took it from the list
 * made when the request began (found by hunt28 and review27, with moves and removals alike).
 */
class ResumeAfterEditTest {
    static final String YAML = """
            orgs:
              - id: acme
                keys: [{ name: app, key: "k-acme" }]
                admin_keys: [{ name: ops, key: "a-acme" }]
                providers:
                  - { id: alpha, base_url: "${SIM_ALPHA_URL}" }
                routes:
                  - { id: r1, alias: chat, provider: alpha, model: m1, priority: 1 }
                  - { id: r2, alias: chat, provider: alpha, model: m2, priority: 2 }
                  - { id: r3, alias: chat, provider: alpha, model: m3, priority: 3 }
                  - { id: t1, alias: tiers, provider: alpha, model: m1, priority: 1 }
                  - { id: t2, alias: tiers, provider: alpha, model: m2, priority: 1 }
                  - { id: t3, alias: tiers, provider: alpha, model: m3, priority: 2 }
                groups:
                  chat: { strategy: priority, hedging: false, stall_floor: 1s }
                  tiers: { strategy: priority, hedging: false, breaker: { max_fails: 5 } }
            """;

    @Test
    void aResumeAfterADrainWasAcknowledgedPassesOverTheDrainedRoute() {
        assertResumedOnR3(gw -> {
            // as the admin API's POST /admin/members/drain does (this harness serves the gateway's edge only)
            Org org = gw.core().catalog().current().org("acme").orElseThrow();
            new AdminService(gw.core()).drain(org, "r2", true, "ops").await().atMost(Duration.ofSeconds(5));
        });
    }

    /**
     * State changed since the request began is read again at a resume: a route an operator suspended, or whose
     * breaker other requests opened, is passed over as a drained one is. The resume went to it from the state read
     * when the request began (the gap review27 left: resumes asked the catalog, not the shared state).
     */
    @Test
    void aResumeAfterASuspensionPassesOverTheSuspendedRoute() {
        assertResumedOnR3(gw -> {
            Org org = gw.core().catalog().current().org("acme").orElseThrow();
            new AdminService(gw.core()).standing(org, "r2", "suspended", "ops").await().atMost(Duration.ofSeconds(5));
        });
    }

    @Test
    void aResumeAfterOtherRequestsOpenedARoutesBreakerPassesOverIt() {
        assertResumedOnR3(gw -> gw.core().store().recordFailure("acme/r2", 1, Duration.ofSeconds(30))
                .await().atMost(Duration.ofSeconds(5)));
    }

    /** r1 goes silent after 3 tokens; {@code meanwhile} runs once its content flows; the resume must go to r3. */
    static void assertResumedOnR3(java.util.function.Consumer<GatewayHarness> meanwhile) {
        ModelScript m = ModelScript.defaults().withLength(30).withLatency(ModelScript.Latency.of(5, 200));
        try (GatewayHarness gw = start(m)) {
            gw.sim("alpha").enqueue("m1", Fault.stall(3, 10_000));
            try (SseReader s = SseReader.post(gw.baseUrl() + "/v1/chat/completions", "k-acme",
                    "{\"model\":\"chat\",\"stream\":true,\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}]}",
                    Duration.ofSeconds(30))) {
                assertEquals(200, s.status());
                s.until(e -> !e.path("choices").path(0).path("delta").path("content").asText("").isEmpty());
                meanwhile.accept(gw);
                String out = s.rest();
                List<String> resumedOn = new ArrayList<>();
                for (JsonNode a : Sse.trail(out)) {
                    if (a.path("kind").asText().equals("resume")) {
                        resumedOn.add(a.path("route").asText() + ":" + a.path("outcome").asText());
                    }
                }
                assertEquals(List.of("r3:success"), resumedOn, out);
                assertEquals(0, gw.sim("alpha").stats("m2").received(), "nothing reached r2");
            }
        }
    }

    static GatewayHarness start(ModelScript m) {
        return GatewayHarness.start(YAML, Map.of("alpha", SimConfig.of(1).withModel("m1", m).withModel("m2", m)
                .withModel("m3", m)));
    }

    /**
     * Under {@code priority}, a failed top-tier attempt is retried on its tier (Kong) while its breaker allows: both
     * top-tier routes answer 503 after 1.5 s, and meanwhile an operator pins the second tier's t3. The tier's retry
     * went to t1 all the same, twice, and the answer came from a route pinned away (review27); now the request goes to
     * t3.
     */
    @Test
    void aTierRetryAfterAnotherRouteWasPinnedGoesToThePinnedRoute() throws Exception {
        try (GatewayHarness gw = start(ModelScript.defaults().withLength(5))) {
            Fault slow503 = new Fault.HttpError(503, "server_error", "overloaded", "busy", null, 1500);
            gw.sim("alpha").enqueue("m1", slow503);
            gw.sim("alpha").enqueue("m2", slow503);
            java.util.concurrent.CompletableFuture<io.restassured.response.Response> answer =
                    java.util.concurrent.CompletableFuture.supplyAsync(() -> io.restassured.RestAssured.given()
                            .baseUri(gw.baseUrl()).auth().oauth2("k-acme").contentType("application/json")
                            .body("{\"model\":\"tiers\",\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}]}")
                            .post("/v1/chat/completions"));
            dev.hedgerow.testsupport.Eventually.eventually(() -> gw.sim("alpha").stats("m1").received()
                    + gw.sim("alpha").stats("m2").received() > 0, "the first attempt was sent");
            Org org = gw.core().catalog().current().org("acme").orElseThrow();
            new AdminService(gw.core()).pin(org, "t3", "ops").await().atMost(Duration.ofSeconds(5));
            io.restassured.response.Response r = answer.get(20, java.util.concurrent.TimeUnit.SECONDS);
            assertEquals(200, r.statusCode(), r.asString());
            assertEquals(1, gw.sim("alpha").stats("m1").received() + gw.sim("alpha").stats("m2").received(),
                    "only the first attempt went to the top tier: " + r.header("x-hedgerow-attempts"));
            assertEquals(1, gw.sim("alpha").stats("m3").received(), r.header("x-hedgerow-attempts"));
        }
    }
}
