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
 * A stream's resume goes only to a route the catalog lets the request take when it resumes: one an operator drained
 * (acknowledged) after the stream began is passed over. The resume took it from the list made
 * when the request began (found by hunt28, with suspensions by edit, moves and removals alike).
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
                groups:
                  chat: { strategy: priority, hedging: false, stall_floor: 1s }
            """;

    @Test
    void aResumeAfterADrainWasAcknowledgedPassesOverTheDrainedRoute() {
        ModelScript m = ModelScript.defaults().withLength(30).withLatency(ModelScript.Latency.of(5, 200));
        try (GatewayHarness gw = GatewayHarness.start(YAML, Map.of("alpha", SimConfig.of(1).withModel("m1", m)
                .withModel("m2", m).withModel("m3", m)))) {
            gw.sim("alpha").enqueue("m1", Fault.stall(3, 10_000));   // r1 goes silent after 3 tokens: resumed
            try (SseReader s = SseReader.post(gw.baseUrl() + "/v1/chat/completions", "k-acme",
                    "{\"model\":\"chat\",\"stream\":true,\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}]}",
                    Duration.ofSeconds(30))) {
                assertEquals(200, s.status());
                s.until(e -> !e.path("choices").path(0).path("delta").path("content").asText("").isEmpty());
                // as the admin API's POST /admin/members/drain does (this harness serves the gateway's edge only)
                Org org = gw.core().catalog().current().org("acme").orElseThrow();
                new AdminService(gw.core()).drain(org, "r2", true, "ops").await().atMost(Duration.ofSeconds(5));
                String out = s.rest();
                List<String> resumedOn = new ArrayList<>();
                for (JsonNode a : Sse.trail(out)) {
                    if (a.path("kind").asText().equals("resume")) {
                        resumedOn.add(a.path("route").asText() + ":" + a.path("outcome").asText());
                    }
                }
                assertEquals(List.of("r3:success"), resumedOn, out);
                assertEquals(0, gw.sim("alpha").stats("m2").received(), "nothing reached the drained route");
            }
        }
    }
}
