package dev.hedgerow.function.gateway;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.hedgerow.sim.Fault;
import dev.hedgerow.sim.ModelScript;
import dev.hedgerow.sim.SimConfig;
import dev.hedgerow.state.AuditRecord;
import dev.hedgerow.testsupport.GatewayHarness;

import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.time.Duration;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.stream.Stream;

/**
 * The Trifrost outage demo ({@code scripts/demo-outage}): four simulated providers under the alias kimi3 on a real
 * gateway instance. Healthy rotation; DigitalOcean answers HTTP 200 and ends the stream with zero content, the
 * client's stream continues from the next provider with no visible error and DigitalOcean cools down; after the
 * cooldown one half-open probe brings it back. Prints what a client sees, the attempt trails and the audit events.
 * Not thread-safe; run once from {@code main}.
 */
public final class OutageDemo {
    private static final ObjectMapper M = new ObjectMapper();
    private static final Duration COOLDOWN = Duration.ofSeconds(3);

    private OutageDemo() {
    }

    public static void main(String[] args) throws Exception {
        String yaml = GroupKit.yaml("""
                      - { alias: kimi3, provider: openrouter, model: moonshotai/kimi-k2 }
                      - { alias: kimi3, provider: digitalocean, model: kimi-k2-instruct }
                      - { alias: kimi3, provider: fireworks, model: accounts/fireworks/models/kimi-k2-instruct }
                      - { alias: kimi3, provider: together, model: moonshotai/Kimi-K2-Instruct }
                """, """
                      kimi3: { strategy: rr_health, hedging: false, resume_mid_stream: false, breaker: { max_fails: 1, fail_timeout: %ds } }
                """.formatted(COOLDOWN.toSeconds()));
        Map<String, SimConfig> sims = new LinkedHashMap<>();
        String[] models = {"moonshotai/kimi-k2", "kimi-k2-instruct", "accounts/fireworks/models/kimi-k2-instruct",
                "moonshotai/Kimi-K2-Instruct"};
        for (int i = 0; i < 4; i++) {
            sims.put(GroupKit.PROVIDERS.get(i), SimConfig.of(GroupKit.SEED).withModel(models[i], ModelScript.defaults()
                    .withLength(16).withLatency(ModelScript.Latency.of(60 + 20L * i, 60))));
        }
        int failures = 0;
        try (GatewayHarness gw = GatewayHarness.start(yaml, sims)) {
            System.out.println("Gateway on " + gw.baseUrl() + ": alias kimi3 = openrouter, digitalocean, fireworks,"
                    + " together (rr_health; cooldown " + COOLDOWN.toSeconds() + " s for the demo, 30 s by default)\n");

            System.out.println("1 · Healthy rotation");
            // start the shared rotation at openrouter so the demo reads the same every run
            long c;
            do {
                c = GroupKit.await(gw.core().store().nextCursor(GroupKit.ORG, "kimi3"));
            } while (Math.floorMod(c + 1, 4L) != 0);
            for (int i = 0; i < 4; i++) {
                failures += stream(gw, "request " + (i + 1), "Tell me about hedgerows " + i);
            }

            System.out.println("\n2 · DigitalOcean answers 200 and ends the stream with zero content");
            gw.sim("digitalocean").enqueue("kimi-k2-instruct", new Fault.EmptyStream(true));
            do {
                c = GroupKit.await(gw.core().store().nextCursor(GroupKit.ORG, "kimi3"));
            } while (Math.floorMod(c + 1, 4L) != 1);
            failures += stream(gw, "request 5", "Tell me about hedgerows in an outage");
            long left = GroupKit.await(gw.core().store().cooldownRemainingMillis(GroupKit.key("kimi3-digitalocean")));
            System.out.println("   digitalocean is cooling down: " + left + " ms left (unhealthy despite its 200)");
            for (int i = 0; i < 3; i++) {
                failures += stream(gw, "request " + (6 + i), "While it cools " + i);
            }

            System.out.println("\n3 · Half-open recovery");
            Thread.sleep(COOLDOWN.toMillis() + 100);
            System.out.println("   cooldown over: the next request that picks digitalocean is the fleet's one probe");
            for (int i = 0; i < 4; i++) {
                failures += stream(gw, "request " + (9 + i), "After the outage " + i);
            }
            System.out.println("   digitalocean failures now: "
                    + GroupKit.health(gw.core().store(), "kimi3-digitalocean").fails() + " (back in rotation)");

            System.out.println("\nAudit stream (newest first):");
            for (AuditRecord r : GroupKit.await(gw.core().store().readAudit(GroupKit.ORG, 10))) {
                System.out.println("   " + r.fields().get("type") + " status=" + r.fields().get("status")
                        + " trail=" + r.fields().get("attempt_trail"));
            }
        }
        System.out.println(failures == 0 ? "\nThe client never saw an error." : "\n" + failures + " client errors!");
        System.exit(failures == 0 ? 0 : 1);
    }

    /** Streams one request, printing the token counter as chunks arrive; returns 1 when the client saw an error. */
    private static int stream(GatewayHarness gw, String label, String prompt) throws Exception {
        HttpRequest req = HttpRequest.newBuilder(URI.create(gw.baseUrl() + "/v1/chat/completions"))
                .header("authorization", "Bearer " + GroupKit.KEY).header("content-type", "application/json")
                .POST(HttpRequest.BodyPublishers.ofString(GroupKit.body("kimi3", prompt, true, null))).build();
        HttpResponse<Stream<String>> resp = HttpClient.newHttpClient().send(req, HttpResponse.BodyHandlers.ofLines());
        int tokens = 0;
        boolean error = resp.statusCode() != 200;
        JsonNode trail = null;
        StringBuilder text = new StringBuilder();
        System.out.print("   " + label + ": HTTP " + resp.statusCode() + " tokens ");
        for (String line : (Iterable<String>) resp.body()::iterator) {
            if (!line.startsWith("data:") || line.contains("[DONE]")) {
                continue;
            }
            JsonNode e = M.readTree(line.substring(5).trim());
            error |= e.has("error");
            String content = e.path("choices").path(0).path("delta").path("content").asText("");
            if (!content.isEmpty()) {
                tokens++;
                text.append(content);
                System.out.print(tokens % 4 == 0 ? tokens + " " : ".");
            }
            if (e.has("attempt_trail")) {
                trail = e.get("attempt_trail");
            }
        }
        System.out.println(" -> served by " + resp.headers().firstValue("x-hedgerow-route").orElse("-")
                + (error ? "  CLIENT SAW AN ERROR" : ""));
        if (trail != null && trail.size() > 1) {
            System.out.println("     attempt_trail:");
            for (JsonNode a : trail) {
                System.out.println("       #" + a.path("attempt").asInt() + " " + a.path("provider").asText() + " "
                        + a.path("outcome").asText() + " status=" + a.path("status").asInt() + " error="
                        + a.path("error").asText() + " " + a.path("duration_ms").asLong() + " ms");
            }
            System.out.println("     text: " + text);
        }
        return error ? 1 : 0;
    }
}
