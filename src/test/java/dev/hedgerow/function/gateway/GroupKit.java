package dev.hedgerow.function.gateway;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.hedgerow.catalog.Org;
import dev.hedgerow.catalog.Route;
import dev.hedgerow.routing.LearnedModels;
import dev.hedgerow.routing.TtftPredictor;
import dev.hedgerow.sim.Fault;
import dev.hedgerow.sim.ModelScript;
import dev.hedgerow.sim.SimConfig;
import dev.hedgerow.state.AuditRecord;
import dev.hedgerow.state.RouteSnapshot;
import dev.hedgerow.state.StateStore;
import dev.hedgerow.testsupport.GatewayHarness;
import dev.hedgerow.testsupport.Sse;
import io.restassured.response.Response;
import io.smallrye.mutiny.Uni;

import java.io.IOException;
import java.io.OutputStream;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

import static io.restassured.RestAssured.given;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static dev.hedgerow.testsupport.Eventually.eventually;

/**
 * Shared pieces of the alias-group end-to-end tests: the four providers of the Trifrost demo, each a simulator
 * serving the same models, and small helpers to send chat requests and read trails, health and audit events.
 */
final class GroupKit {
    static final long SEED = 11;
    static final String ORG = "acme";
    static final String KEY = "k-acme";
    static final List<String> PROVIDERS = List.of("openrouter", "digitalocean", "fireworks", "together");
    private static final ObjectMapper M = new ObjectMapper();

    private GroupKit() {
    }

    /** The org header of a catalog: the four providers, then the given routes and groups (indented YAML). */
    static String yaml(String routes, String groups) {
        return yaml("", routes, groups);
    }

    /** As {@link #yaml(String, String)} with more providers (indented YAML list items). */
    static String yaml(String extraProviders, String routes, String groups) {
        StringBuilder sb = new StringBuilder("""
                orgs:
                  - id: acme
                    keys: [{ name: app, key: "k-acme" }]
                    providers:
                """);
        for (String p : PROVIDERS) {
            sb.append("      - { id: ").append(p).append(", base_url: \"${SIM_")
                    .append(p.toUpperCase()).append("_URL}\" }\n");
        }
        if (!extraProviders.isBlank()) {
            sb.append(extraProviders.stripTrailing()).append('\n');
        }
        sb.append("    routes:\n").append(routes.stripTrailing()).append('\n');
        sb.append("    groups:\n").append(groups.stripTrailing()).append('\n');
        return sb.toString();
    }

    /** One simulator per provider, each serving every given model with the same script. */
    static Map<String, SimConfig> sims(ModelScript script, String... models) {
        Map<String, SimConfig> out = new LinkedHashMap<>();
        for (String p : PROVIDERS) {
            SimConfig c = SimConfig.of(SEED);
            for (String m : models) {
                c = c.withModel(m, script);
            }
            out.put(p, c);
        }
        return out;
    }

    static ModelScript quick(int tokens) {
        return ModelScript.defaults().withLength(tokens).withLatency(ModelScript.Latency.of(5, 0));
    }

    static String body(String alias, String prompt, boolean stream, String providerJson) {
        return "{\"model\":\"" + alias + "\",\"stream\":" + stream
                + ",\"messages\":[{\"role\":\"user\",\"content\":\"" + prompt + "\"}]"
                + (providerJson == null ? "" : ",\"provider\":" + providerJson) + "}";
    }

    static Response chat(GatewayHarness gw, String alias, String prompt, boolean stream, String providerJson) {
        return given().baseUri(gw.baseUrl()).auth().oauth2(KEY).contentType("application/json")
                .body(body(alias, prompt, stream, providerJson)).post("/v1/chat/completions");
    }

    static Response chat(GatewayHarness gw, String alias, String prompt) {
        return chat(gw, alias, prompt, false, null);
    }

    /**
     * Fails the provider's route of the alias once, as a real outage would: its simulator answers the next request
     * for the model with a 500, on a request restricted to that provider, which therefore ends in a 502. Under the
     * default breaker ({@code max_fails: 1}) the route is cooling down afterwards.
     */
    static void failOnce(GatewayHarness gw, String alias, String provider, String model) {
        gw.sim(provider).enqueue(model, Fault.status(500));
        Response r = chat(gw, alias, "fail " + provider, false, "{\"only\":[\"" + provider + "\"]}");
        assertEquals(502, r.statusCode(), "precondition: the only allowed route failed: " + r.asString());
    }

    /**
     * Sends a chat request over a raw socket and leaves the connection open: closing the returned socket is the
     * client hanging up, which no HTTP client library lets a test time exactly.
     */
    static Socket sendAndHold(GatewayHarness gw, String body) throws IOException {
        return sendAndHold(gw, "/v1/chat/completions", body);
    }

    /** As {@link #sendAndHold(GatewayHarness, String)}, to another path of the gateway. */
    static Socket sendAndHold(GatewayHarness gw, String path, String body) throws IOException {
        Socket s = new Socket("127.0.0.1", gw.port());
        try {
            OutputStream out = s.getOutputStream();
            out.write(("POST " + path + " HTTP/1.1\r\nhost: 127.0.0.1\r\nauthorization: Bearer " + KEY
                    + "\r\ncontent-type: application/json\r\ncontent-length: "
                    + body.getBytes(StandardCharsets.UTF_8).length + "\r\n\r\n" + body)
                    .getBytes(StandardCharsets.UTF_8));
            out.flush();
            return s;
        } catch (IOException e) {
            s.close();
            throw e;
        }
    }

    /** The route that served a response (the {@code x-hedgerow-route} header). */
    static String route(Response r) {
        return r.header("x-hedgerow-route");
    }

    /** The attempt trail: the header of a non-streaming response, the final chunk's field of a stream. */
    static JsonNode trail(Response r) {
        String h = r.header("x-hedgerow-attempts");
        if (h != null) {
            try {
                return M.readTree(h);
            } catch (Exception e) {
                throw new AssertionError("bad trail header: " + h, e);
            }
        }
        return Sse.trail(r.asString());
    }

    /** The route ids of a trail, in attempt order. */
    /** The route an attempt trail's request went to first (its primary attempt). */
    static String primary(JsonNode trail) {
        for (JsonNode a : trail) {
            if ("primary".equals(a.path("kind").asText())) {
                return a.path("route").asText();
            }
        }
        throw new AssertionError("no primary attempt in " + trail);
    }

    /** The outcome of the trail's attempt on {@code route} ({@code none} when it had none). */
    static String outcome(JsonNode trail, String route) {
        for (JsonNode a : trail) {
            if (a.path("route").asText().equals(route)) {
                return a.path("outcome").asText();
            }
        }
        return "none";
    }

    static List<String> trailRoutes(JsonNode trail) {
        List<String> out = new ArrayList<>();
        trail.forEach(a -> out.add(a.path("route").asText()));
        return out;
    }

    static <T> T await(Uni<T> u) {
        return u.await().atMost(Duration.ofSeconds(10));
    }

    /** The store key of a route of the test org. */
    static String key(String routeId) {
        return ORG + "/" + routeId;
    }

    static RouteSnapshot health(StateStore store, String routeId) {
        return await(store.snapshot(List.of(key(routeId)), Duration.ofMinutes(1))).get(key(routeId));
    }

    /** Forgets every route's health and every queued fault, zeroes the simulators' counters. */
    static void reset(GatewayHarness gw) {
        Org org = gw.core().catalog().current().org(ORG).orElseThrow();
        for (Route r : org.routes()) {
            await(gw.core().store().resetHealth(key(r.id())));
        }
        for (String p : PROVIDERS) {
            gw.sim(p).clearFaults();
            gw.sim(p).resetStats();
        }
    }

    static long received(GatewayHarness gw, String provider, String model) {
        return gw.sim(provider).stats(model).received();
    }

    static List<Map<String, String>> audit(StateStore store, String type) {
        List<Map<String, String>> out = new ArrayList<>();
        for (AuditRecord r : await(store.readAudit(ORG, 1000))) {
            if (type.equals(r.fields().get("type"))) {
                out.add(r.fields());
            }
        }
        return out;
    }

    /** Stores the TTFT line 40 first tokens of about {@code ttftMs} at 10 prompt tokens teach (as live traffic would). */
    static void learntTtft(StateStore store, String route, double ttftMs) {
        TtftPredictor p = TtftPredictor.fresh(TtftPredictor.Prior.defaults());
        for (int i = 0; i < 40; i++) {
            p = p.update(10, ttftMs + (i % 3));
        }
        store.putRouteBlob(route, LearnedModels.TTFT, p.encode(), null).await().atMost(Duration.ofSeconds(5));
    }

    /** How many blocked events with this reason the org's audit stream holds. */
    static long blocked(StateStore store, String reason) {
        return audit(store, "blocked").stream().filter(e -> reason.equals(e.get("reason"))).count();
    }

}
