package dev.hedgerow.function.gateway;

import dev.hedgerow.admin.AdminService;
import dev.hedgerow.api.Json;
import dev.hedgerow.catalog.GroupSettings;
import dev.hedgerow.catalog.Org;
import dev.hedgerow.routing.TokenCounter;
import dev.hedgerow.sim.Fault;
import dev.hedgerow.sim.ModelScript;
import dev.hedgerow.sim.SimConfig;
import dev.hedgerow.sim.SimStats;
import dev.hedgerow.state.RouteSnapshot;
import dev.hedgerow.state.StateStore;
import dev.hedgerow.testsupport.Eventually;
import dev.hedgerow.testsupport.GatewayHarness;
import io.restassured.response.Response;
import io.restassured.specification.RequestSpecification;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import java.util.concurrent.CompletableFuture;

import static io.restassured.RestAssured.given;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Kong's load-balancing algorithms measured through the HTTP API: many requests to instant simulators, the
 * measured split printed and checked against a stated tolerance. Each algorithm has its own alias (and so its own
 * cursor and route state) so the tests do not disturb one another.
 */
class KongBalancingTest {
    static final String YAML = """
            orgs:
              - id: acme
                keys: [{ name: app, key: "k-acme" }, { name: team-0, key: "k-team-0" },
                       { name: team-1, key: "k-team-1" }, { name: team-2, key: "k-team-2" },
                       { name: team-3, key: "k-team-3" }, { name: team-4, key: "k-team-4" },
                       { name: team-5, key: "k-team-5" }]
                providers:
                  - { id: sim, base_url: "${SIM_SIM_URL}", api_key: "sk-sim" }
                routes:
                  - { id: wrr-a, alias: wrr, provider: sim, model: m-wrr-a, weight: 70 }
                  - { id: wrr-b, alias: wrr, provider: sim, model: m-wrr-b, weight: 25 }
                  - { id: wrr-c, alias: wrr, provider: sim, model: m-wrr-c, weight: 5 }
                  - { id: ch-a, alias: sticky, provider: sim, model: m-ch-a }
                  - { id: ch-b, alias: sticky, provider: sim, model: m-ch-b }
                  - { id: ch-c, alias: sticky, provider: sim, model: m-ch-c }
                  - { id: ck-a, alias: bykey, provider: sim, model: m-kh-a }
                  - { id: ck-b, alias: bykey, provider: sim, model: m-kh-b }
                  - { id: ck-c, alias: bykey, provider: sim, model: m-kh-c }
                  - { id: kh-a, alias: kongsticky, provider: sim, model: m-kh-a }
                  - { id: kh-b, alias: kongsticky, provider: sim, model: m-kh-b }
                  - { id: kh-c, alias: kongsticky, provider: sim, model: m-kh-c }
                  - { id: use-short, alias: usage, provider: sim, model: m-short }
                  - { id: use-long, alias: usage, provider: sim, model: m-long }
                  - { id: cost-cheap, alias: cost, provider: sim, model: m-cost-a,
                      price: { prompt_per_mtok: 0, completion_per_mtok: 1 } }
                  - { id: cost-dear, alias: cost, provider: sim, model: m-cost-b,
                      price: { prompt_per_mtok: 0, completion_per_mtok: 3 } }
                  - { id: lat-fast, alias: fastest, provider: sim, model: m-tpot-fast }
                  - { id: lat-slow, alias: fastest, provider: sim, model: m-tpot-slow }
                  - { id: e2e-fast, alias: quickest, provider: sim, model: m-e2e-fast }
                  - { id: e2e-slow, alias: quickest, provider: sim, model: m-e2e-slow }
                  - { id: p1-a, alias: prio, provider: sim, model: m-p1-a, priority: 1, weight: 3 }
                  - { id: p1-b, alias: prio, provider: sim, model: m-p1-b, priority: 1, weight: 1 }
                  - { id: p2-c, alias: prio, provider: sim, model: m-p2-c, priority: 2, weight: 1 }
                  - { id: embedder, alias: embed, provider: sim, model: m-embed, embeddings: true }
                  - { id: sem-coder, alias: sem, provider: sim, model: m-coder,
                      description: "python java code software bug programming" }
                  - { id: sem-poet, alias: sem, provider: sim, model: m-poet,
                      description: "poetry poem verse rhyme sonnet" }
                  - { id: sem-chef-1, alias: sem, provider: sim, model: m-chef-1,
                      description: "cooking recipe food kitchen baking bread" }
                  - { id: sem-chef-2, alias: sem, provider: sim, model: m-chef-2,
                      description: "cooking recipe food kitchen baking bread" }
                  - { id: embedder-2, alias: embed2, provider: sim, model: m-embed-2, embeddings: true }
                  - { id: loose-coder, alias: loose, provider: sim, model: m-loose-coder, weight: 3,
                      description: "python java code software bug programming" }
                  - { id: loose-poet, alias: loose, provider: sim, model: m-loose-poet, weight: 1,
                      description: "poetry poem verse rhyme sonnet" }
                  - { id: twin-h-a, alias: twinh, provider: sim, model: m-twin-h-a, weight: 3 }
                  - { id: twin-h-b, alias: twinh, provider: sim, model: m-twin-h-b, weight: 2 }
                  - { id: twin-h-c, alias: twinh, provider: sim, model: m-twin-h-c, weight: 1 }
                  - { id: twin-k-a, alias: twink, provider: sim, model: m-twin-k-a, weight: 3 }
                  - { id: twin-k-b, alias: twink, provider: sim, model: m-twin-k-b, weight: 2 }
                  - { id: twin-k-c, alias: twink, provider: sim, model: m-twin-k-c, weight: 1 }
                  - { id: embedder-3, alias: embed3, provider: sim, model: m-embed-3, embeddings: true }
                  - { id: near-coder, alias: near, provider: sim, model: m-near-coder, weight: 3,
                      description: "python java code software bug programming" }
                  - { id: near-poet, alias: near, provider: sim, model: m-near-poet, weight: 1,
                      description: "poetry poem verse rhyme sonnet" }
                  - { id: embedder-4, alias: embed4, provider: sim, model: m-embed-4, embeddings: true }
                  - { id: fb-coder, alias: semfall, provider: sim, model: m-fb-coder,
                      description: "python java code software bug programming" }
                  - { id: fb-chef-down, alias: semfall, provider: sim, model: m-fb-chef-down, weight: 3,
                      description: "cooking recipe food kitchen baking bread" }
                  - { id: fb-chef-mid, alias: semfall, provider: sim, model: m-fb-chef-mid, weight: 2,
                      description: "cooking recipe food kitchen baking bread" }
                  - { id: fb-chef-low, alias: semfall, provider: sim, model: m-fb-chef-low, weight: 1,
                      description: "cooking recipe food kitchen baking bread" }
                  - { id: embedder-5, alias: embed5, provider: sim, model: m-embed-5, embeddings: true }
                  - { id: dn-coder, alias: semdown, provider: sim, model: m-dn-coder, weight: 3,
                      description: "python java code software bug programming" }
                  - { id: dn-poet, alias: semdown, provider: sim, model: m-dn-poet, weight: 1,
                      description: "poetry poem verse rhyme sonnet" }
                  - { id: dn-standby, alias: semdown, provider: sim, model: m-dn-standby, weight: 0,
                      description: "cooking recipe food kitchen baking bread" }
                  - { id: ud-short, alias: usagedef, provider: sim, model: m-ud-short }
                  - { id: embedder-6, alias: embed6, provider: sim, model: m-embed-6, embeddings: true }
                  - { id: one-coder, alias: semone, provider: sim, model: m-one-coder,
                      description: "python java code software bug programming" }
                  - { id: one-poet, alias: semone, provider: sim, model: m-one-poet, context_window: 300,
                      description: "poetry poem verse rhyme sonnet" }
                  - { id: embedder-7, alias: embed7, provider: sim, model: m-embed-7, embeddings: true,
                      context_window: 64 }
                  - { id: ho-coder, alias: semhalf, provider: sim, model: m-ho-coder, weight: 1,
                      description: "python java code software bug programming" }
                  - { id: ho-poet, alias: semhalf, provider: sim, model: m-ho-poet, weight: 3,
                      description: "poetry poem verse rhyme sonnet" }
                  - { id: nw-a, alias: narrow, provider: sim, model: m-nw-a }
                  - { id: nw-b, alias: narrow, provider: sim, model: m-nw-b }
                  - { id: nw-small, alias: narrow, provider: sim, model: m-nw-small, context_window: 300 }
                  - { id: ud-long, alias: usagedef, provider: sim, model: m-ud-long }
                  - { id: up-short, alias: usageprompt, provider: sim, model: m-up-short, weight: 3 }
                  - { id: up-long, alias: usageprompt, provider: sim, model: m-up-long, weight: 1 }
                  - { id: mix-a, alias: chmix, provider: sim, model: m-mix-a, weight: 3 }
                  - { id: mix-b, alias: chmix, provider: sim, model: m-mix-b, weight: 1 }
                  - { id: hf-a, alias: stickyfall, provider: sim, model: m-hf-a }
                  - { id: hf-b, alias: stickyfall, provider: sim, model: m-hf-b }
                  - { id: hf-c, alias: stickyfall, provider: sim, model: m-hf-c }
                  - { id: hf-d, alias: stickyfall, provider: sim, model: m-hf-d }
                  - { id: chw-1, alias: chweights, provider: sim, model: m-chw-1, weight: 300 }
                  - { id: chw-2, alias: chweights, provider: sim, model: m-chw-2, weight: 0 }
                  - { id: chw-3, alias: chweights, provider: sim, model: m-chw-3, weight: 100 }
                  - { id: lc-1, alias: leastconn, provider: sim, model: m-lc-1, weight: 100 }
                  - { id: lc-2, alias: leastconn, provider: sim, model: m-lc-2, weight: 100 }
                  - { id: lc-3, alias: leastconn, provider: sim, model: m-lc-3, weight: 0 }
                  - { id: free-1, alias: unpriced, provider: sim, model: m-free-1, weight: 300 }
                  - { id: free-2, alias: unpriced, provider: sim, model: m-free-2, weight: 100 }
                  - { id: free-3, alias: unpriced, provider: sim, model: m-free-3, weight: 100 }
                  - { id: free-4, alias: unpriced, provider: sim, model: m-free-4, weight: 0 }
                groups:
                  wrr: { strategy: weighted, hedging: false }
                  twinh: { strategy: weighted, hedging: false }
                  twink: { algorithm: round-robin, hedging: false }
                  sticky: { strategy: consistent_hashing, hash_on_header: X-Hedgerow-Session, hedging: false }
                  kongsticky: { strategy: consistent_hashing, hedging: false }
                  bykey: { strategy: consistent_hashing, hash_on_header: Authorization, hedging: false }
                  usage: { strategy: lowest_usage, tokens_count_strategy: completion_tokens, hedging: false }
                  cost: { strategy: lowest_usage, tokens_count_strategy: cost, hedging: false }
                  fastest: { strategy: lowest_latency, hedging: false }
                  quickest: { strategy: lowest_latency, latency_strategy: e2e, hedging: false }
                  prio: { strategy: priority, hedging: false, breaker: { max_fails: 1, fail_timeout: 60s } }
                  sem: { strategy: semantic, embeddings_route: embedder, threshold: 0.3, hedging: false }
                  loose: { strategy: semantic, embeddings_route: embedder-2, threshold: 0.3, hedging: false }
                  near: { algorithm: semantic, distance_metric: euclidean, threshold: 1.2,
                          embeddings_route: embedder-3, hedging: false }
                  semfall: { strategy: semantic, embeddings_route: embedder-4, threshold: 0.3, hedging: false,
                             breaker: { max_fails: 0 } }
                  usagedef: { strategy: lowest_usage, hedging: false }
                  usageprompt: { strategy: lowest_usage, tokens_count_strategy: prompt_tokens, hedging: false }
                  chmix: { strategy: consistent_hashing, hash_on_header: X-Session, hedging: false }
                  stickyfall: { strategy: consistent_hashing, hash_on_header: X-User, hedging: false,
                                breaker: { max_fails: 0 } }
                  chweights: { strategy: consistent_hashing, hash_on_header: X-Session, hedging: false }
                  leastconn: { strategy: least_connections, hedging: false }
                  semdown: { strategy: semantic, embeddings_route: embedder-5, threshold: 0.3, hedging: false }
                  unpriced: { strategy: lowest_usage, tokens_count_strategy: cost, hedging: false }
                  narrow: { strategy: weighted, hedging: false }
                  semone: { strategy: semantic, embeddings_route: embedder-6, threshold: 0.3, hedging: false }
                  semhalf: { strategy: semantic, embeddings_route: embedder-7, threshold: 0.3, hedging: false }
                  embed7: { breaker: { max_fails: 2 } }
            """;

    static final ModelScript INSTANT = ModelScript.defaults().withLength(8).withLatency(ModelScript.Latency.INSTANT);
    static GatewayHarness gw;

    @BeforeAll
    static void start() {
        ModelScript instant = INSTANT;
        SimConfig sim = SimConfig.of(11).withApiKey("sk-sim");
        for (String m : List.of("m-wrr-a", "m-wrr-b", "m-wrr-c", "m-ch-a", "m-ch-b", "m-ch-c",
                "m-kh-a", "m-kh-b", "m-kh-c", "m-p1-a", "m-p1-b", "m-p2-c", "m-embed", "m-coder", "m-poet",
                "m-chef-1", "m-chef-2", "m-cost-a", "m-cost-b", "m-embed-2", "m-loose-coder", "m-loose-poet",
                "m-twin-h-a", "m-twin-h-b", "m-twin-h-c", "m-twin-k-a", "m-twin-k-b", "m-twin-k-c",
                "m-embed-3", "m-near-coder", "m-near-poet", "m-embed-4", "m-fb-coder", "m-fb-chef-mid",
                "m-fb-chef-low", "m-hf-a", "m-hf-b", "m-hf-c", "m-hf-d", "m-chw-1", "m-chw-2", "m-chw-3",
                "m-lc-1", "m-lc-2", "m-lc-3", "m-free-1", "m-free-2", "m-free-3", "m-free-4", "m-dn-coder",
                "m-dn-poet", "m-dn-standby", "m-nw-a", "m-nw-b", "m-nw-small", "m-embed-6", "m-one-coder",
                "m-one-poet", "m-embed-7", "m-ho-coder", "m-ho-poet", "m-mix-a", "m-mix-b")) {
            sim = sim.withModel(m, instant);
        }
        // an embeddings model that answers every request with a 500: the semantic group has no prompt embedding
        sim = sim.withModel("m-embed-5", instant.withFaults(List.of(new ModelScript.FaultChance(1.0,
                Fault.status(500)))));
        // a cooking specialist that answers every request with a 500
        sim = sim.withModel("m-fb-chef-down", instant.withFaults(
                List.of(new ModelScript.FaultChance(1.0, Fault.status(500)))));
        sim = sim.withModel("m-short", instant.withLength(10)).withModel("m-long", instant.withLength(30))
                .withModel("m-ud-short", instant.withLength(10)).withModel("m-ud-long", instant.withLength(50))
                .withModel("m-up-short", instant.withLength(10)).withModel("m-up-long", instant.withLength(50))
                // time per output token 2.5 ms against 200 ms; end to end 5 ms against 2 s to the first token, the
                // same decode. The peak EWMA takes any sample above its cost at once, so one answer of the fast route
                // that a loaded host delays past the slow one's cost hands the slow one the traffic until it decays
                // (seconds): the slow routes are far enough behind (1.6 s and 2 s an answer) that no such delay
                // crosses them. At 20 ms a token and 200 ms, one fast answer ~150 ms late would have.
                .withModel("m-tpot-fast", instant.withLatency(ModelScript.Latency.of(0, 400)))
                .withModel("m-tpot-slow", instant.withLatency(ModelScript.Latency.of(0, 5)))
                .withModel("m-e2e-fast", instant.withLatency(ModelScript.Latency.of(5, 0)))
                .withModel("m-e2e-slow", instant.withLatency(ModelScript.Latency.of(2000, 0)));
        gw = GatewayHarness.start(YAML, Map.of("sim", sim));
    }

    @AfterAll
    static void stop() {
        gw.close();
    }

    static String body(String alias, String prompt, boolean stream) {
        return "{\"model\":\"" + alias + "\",\"stream\":" + stream
                + ",\"messages\":[{\"role\":\"user\",\"content\":\"" + prompt + "\"}]}";
    }

    /** Sends one request and returns the route that served it. */
    static String served(String alias, String prompt, boolean stream, Map<String, String> headers) {
        RequestSpecification spec = given().baseUri(gw.baseUrl()).auth().oauth2("k-acme")
                .contentType("application/json").body(body(alias, prompt, stream));
        headers.forEach(spec::header);
        Response r = spec.post("/v1/chat/completions");
        assertEquals(200, r.statusCode(), r.asString());
        return r.header("x-hedgerow-route");
    }

    static String served(String alias, String prompt) {
        return served(alias, prompt, false, Map.of());
    }

    /** Sends one request and returns its attempt trail as "route:outcome" strings (the last one served). */
    static List<String> trail(String alias, String prompt, Map<String, String> headers) {
        RequestSpecification spec = given().baseUri(gw.baseUrl()).auth().oauth2("k-acme")
                .contentType("application/json").body(body(alias, prompt, false));
        headers.forEach(spec::header);
        Response r = spec.post("/v1/chat/completions");
        assertEquals(200, r.statusCode(), r.asString());
        List<String> out = new ArrayList<>();
        try {
            Json.parse(r.header("x-hedgerow-attempts").getBytes()).forEach(a ->
                    out.add(a.path("route").asText() + ":" + a.path("outcome").asText()));
        } catch (java.io.IOException e) {
            throw new AssertionError(e);
        }
        return out;
    }

    static Map<String, Integer> tally(List<String> routes) {
        Map<String, Integer> out = new TreeMap<>();
        routes.forEach(r -> out.merge(r, 1, Integer::sum));
        return out;
    }

    static void print(String what, Map<String, Integer> counts, int total) {
        StringBuilder sb = new StringBuilder("[kong] " + what + " over " + total + " requests:");
        counts.forEach((k, v) -> sb.append(String.format(" %s=%d (%.1f%%)", k, v, 100.0 * v / total)));
        System.out.println(sb);
    }

    @Test
    void theEmbeddingsAliasServesNoChatAndIsListedAsAnEmbeddingsModel() {
        for (boolean stream : new boolean[]{false, true}) {
            given().baseUri(gw.baseUrl()).auth().oauth2("k-acme").contentType("application/json")
                    .body(body("embed", "hello", stream)).post("/v1/chat/completions").then().statusCode(404)
                    .body("error.code", org.hamcrest.Matchers.equalTo("not_a_chat_model"))
                    .body("error.param", org.hamcrest.Matchers.equalTo("model"));
        }
        assertEquals(0, gw.sim("sim").stats("m-embed").received(), "nothing reached the embeddings model");
        // listed as OpenAI lists its embeddings models, beside the chat ones, each with the endpoint that serves it
        io.restassured.path.json.JsonPath models = given().baseUri(gw.baseUrl()).auth().oauth2("k-acme")
                .get("/v1/models").then().statusCode(200).extract().jsonPath();
        assertEquals("chat", models.getString("data.find { it.id == 'prio' }.type"), models.prettify());
        assertEquals("embeddings", models.getString("data.find { it.id == 'embed' }.type"), models.prettify());
        given().baseUri(gw.baseUrl()).auth().oauth2("k-acme").get("/v1/models/embed").then().statusCode(200)
                .body("id", org.hamcrest.Matchers.equalTo("embed"))
                .body("type", org.hamcrest.Matchers.equalTo("embeddings"));
    }

    @Test
    void weightedRoundRobinSplits70_25_5InAnInterleavedCircularSequence() {
        List<String> seq = new ArrayList<>();
        for (int i = 0; i < 200; i++) {
            seq.add(served("wrr", "weighted " + i));
        }
        Map<String, Integer> counts = tally(seq);
        print("weighted 70/25/5", counts, seq.size());
        // tolerance: none. The shared cursor walks the smooth sequence (period 20 for 14/5/1): exact per cycle.
        assertEquals(Map.of("wrr-a", 140, "wrr-b", 50, "wrr-c", 10), counts);
        for (int start = 0; start + 20 <= seq.size(); start++) {
            assertEquals(Map.of("wrr-a", 14, "wrr-b", 5, "wrr-c", 1), tally(seq.subList(start, start + 20)),
                    "every 20 consecutive requests hold one full cycle, from " + start);
        }
        int longestRun = 0;
        int run = 0;
        for (int i = 0; i < seq.size(); i++) {
            run = i > 0 && seq.get(i).equals(seq.get(i - 1)) ? run + 1 : 1;
            longestRun = Math.max(longestRun, run);
        }
        // smooth weighted round-robin interleaves: never 14 a's in a row
        assertTrue(longestRun <= 4, "longest run " + longestRun);
    }

    @Test
    void kongsRoundRobinAlgorithmRoutesAsItsWeightedTwin() {
        List<String> hedgerow = new ArrayList<>();
        List<String> kong = new ArrayList<>();
        for (int i = 0; i < 18; i++) {
            hedgerow.add(served("twinh", "twin " + i).substring("twin-h-".length()));
            kong.add(served("twink", "twin " + i).substring("twin-k-".length()));
        }
        print("algorithm: round-robin, weights 3/2/1", tally(kong), kong.size());
        // tolerance: none. Both groups walk the same smooth weighted sequence from a fresh cursor
        assertEquals(hedgerow, kong);
        assertEquals(Map.of("a", 9, "b", 6, "c", 3), tally(kong));
    }

    @Test
    void consistentHashingKeepsEachSessionOnOneRouteAndMovesOnlyTheLostMembersKeys() {
        Map<String, String> before = new LinkedHashMap<>();
        List<String> all = new ArrayList<>();
        for (int k = 0; k < 30; k++) {
            String session = "user-" + k;
            for (int rep = 0; rep < 4; rep++) {
                String r = served("sticky", "hash me " + rep, false, Map.of("X-Hedgerow-Session", session));
                all.add(r);
                String first = before.putIfAbsent(session, r);
                assertEquals(first == null ? r : first, r, "session " + session + " stays on one route");
            }
        }
        Map<String, Integer> keysPerRoute = tally(new ArrayList<>(before.values()));
        print("consistent_hashing, sessions per route (30 sessions x 4)", keysPerRoute, 30);
        // tolerance: 30 equally weighted keys on 3 members, every member wins at least 4 (expected 10)
        assertEquals(3, keysPerRoute.size());
        keysPerRoute.values().forEach(n -> assertTrue(n >= 4, keysPerRoute.toString()));

        // ch-b leaves: its next request fails with a 500, which opens its breaker (max_fails 1 by default)
        gw.sim("sim").enqueue("m-ch-b", Fault.status(500));
        String victim = before.entrySet().stream().filter(e -> e.getValue().equals("ch-b")).findFirst()
                .orElseThrow().getKey();
        assertNotEquals("ch-b", served("sticky", "fail over", false, Map.of("X-Hedgerow-Session", victim)));

        int moved = 0;
        for (Map.Entry<String, String> e : before.entrySet()) {
            String now = served("sticky", "after", false, Map.of("X-Hedgerow-Session", e.getKey()));
            if (e.getValue().equals("ch-b")) {
                assertNotEquals("ch-b", now);
                moved++;
            } else {
                assertEquals(e.getValue(), now, "a session of a healthy member does not move: " + e.getKey());
            }
        }
        System.out.println("[kong] consistent_hashing: ch-b left, " + moved + " of 30 sessions moved (exactly its own)");
        assertEquals(keysPerRoute.get("ch-b"), moved);
    }

    @Test
    void consistentHashingHashesOnKongsRequestIdHeaderByDefault() {
        Map<String, String> routeOf = new LinkedHashMap<>();
        for (int k = 0; k < 12; k++) {
            String id = "conversation-" + k;
            for (int rep = 0; rep < 3; rep++) {
                String r = served("kongsticky", "hash me " + rep, false,
                        Map.of("X-Kong-LLM-Request-ID", id));
                String first = routeOf.putIfAbsent(id, r);
                assertEquals(first == null ? r : first, r, "X-Kong-LLM-Request-ID " + id + " stays on one route");
            }
        }
        print("consistent_hashing on the default header, ids per route (12 ids x 3)",
                tally(new ArrayList<>(routeOf.values())), 12);
        assertTrue(new java.util.HashSet<>(routeOf.values()).size() >= 2, routeOf.toString());
    }

    /**
     * {@code hash_on_header: Authorization} sticks by client key (Kong's consumer): each key's requests stay on one
     * route, and keys spread over the members. The header was dropped
     * before routing, so the group accepted the setting and shared every request by weight (found by hunt9).
     */
    @Test
    void consistentHashingOnAuthorizationSticksByClientKey() {
        Map<String, String> routeOf = new LinkedHashMap<>();
        for (int k = 0; k < 6; k++) {
            String key = "k-team-" + k;
            for (int rep = 0; rep < 4; rep++) {
                Response r = given().baseUri(gw.baseUrl()).auth().oauth2(key).contentType("application/json")
                        .body(body("bykey", "by key " + rep, false)).post("/v1/chat/completions");
                assertEquals(200, r.statusCode(), r.asString());
                String first = routeOf.putIfAbsent(key, r.header("x-hedgerow-route"));
                assertEquals(first == null ? r.header("x-hedgerow-route") : first, r.header("x-hedgerow-route"),
                        key + " stays on one route");
            }
        }
        print("consistent_hashing on Authorization, client keys per route (6 keys x 4)",
                tally(new ArrayList<>(routeOf.values())), 6);
        assertTrue(new java.util.HashSet<>(routeOf.values()).size() >= 2, routeOf.toString());
    }

    @Test
    void lowestUsageByCompletionTokensSendsThreeTimesAsManyRequestsToTheShorterAnswers() {
        List<String> seq = new ArrayList<>();
        for (int i = 0; i < 120; i++) {
            seq.add(served("usage", "usage " + i));
        }
        Map<String, Integer> counts = tally(seq);
        print("lowest_usage completion_tokens (10 vs 30 tokens per answer)", counts, seq.size());
        // expected 75% / 25% (equal usage = 3 short answers per long one); tolerance +-8 points
        double shortShare = counts.getOrDefault("use-short", 0) / 120.0;
        assertTrue(Math.abs(shortShare - 0.75) <= 0.08, counts.toString());
    }

    @Test
    void lowestUsageCountsTotalTokensByDefault() {
        String prompt = "count my usage please";
        long p = given().baseUri(gw.baseUrl()).auth().oauth2("k-acme").contentType("application/json")
                .body(body("usagedef", prompt, false)).post("/v1/chat/completions").then().statusCode(200)
                .extract().jsonPath().getLong("usage.prompt_tokens");
        List<String> seq = new ArrayList<>();
        for (int i = 0; i < 119; i++) {
            seq.add(served("usagedef", prompt));
        }
        Map<String, Integer> counts = tally(seq);
        print("lowest_usage default (answers of 10 vs 50 tokens, prompts of " + p + ")", counts, seq.size());
        // equal total usage: short share s with s (p + 10) = (1 - s)(p + 50). Completion tokens alone would give
        // 5/6, prompt tokens alone 1/2; tolerance +-6 points
        double expected = (p + 50.0) / (2 * p + 60.0);
        double shortShare = counts.getOrDefault("ud-short", 0) / 119.0;
        assertTrue(Math.abs(shortShare - expected) <= 0.06, counts + ", expected short share " + expected);
    }

    @Test
    void lowestUsageByPromptTokensSplitsByWeightWhateverTheAnswersCost() {
        List<String> seq = new ArrayList<>();
        for (int i = 0; i < 120; i++) {
            seq.add(served("usageprompt", "count my usage please"));
        }
        Map<String, Integer> counts = tally(seq);
        print("lowest_usage prompt_tokens, weights 3:1 (answers of 10 vs 50 tokens)", counts, seq.size());
        // every request has the same prompt: equal prompt usage per weight is a 3:1 split; tolerance +-6 points
        double shortShare = counts.getOrDefault("up-short", 0) / 120.0;
        assertTrue(Math.abs(shortShare - 0.75) <= 0.06, counts.toString());
    }

    @Test
    void lowestUsageByCostSendsThreeTimesAsManyRequestsToTheCheaperRoute() {
        List<String> seq = new ArrayList<>();
        for (int i = 0; i < 120; i++) {
            seq.add(served("cost", "cost " + i));
        }
        Map<String, Integer> counts = tally(seq);
        print("lowest_usage cost (price 1 vs 3 per token)", counts, seq.size());
        // expected 75% / 25%; tolerance +-8 points
        double cheapShare = counts.getOrDefault("cost-cheap", 0) / 120.0;
        assertTrue(Math.abs(cheapShare - 0.75) <= 0.08, counts.toString());
    }

    @Test
    void lowestLatencyByTimePerOutputTokenSendsAlmostEverythingToTheFasterDecoder() {
        List<String> seq = new ArrayList<>();
        for (int i = 0; i < 60; i++) {
            seq.add(served("fastest", "tpot " + i, true, Map.of()));
        }
        Map<String, Integer> counts = tally(seq);
        print("lowest_latency tpot (2.5 ms vs 200 ms per token)", counts, seq.size());
        // each member is measured once first; after that the slow one's peak EWMA (200 ms) decays with tau 10 s
        // and falls under 2.5 ms only after ~44 s. Tolerance: at least 90% on the fast route.
        assertTrue(counts.getOrDefault("lat-fast", 0) >= 54, counts.toString());
        assertTrue(counts.getOrDefault("lat-slow", 0) >= 1, "the slow route was measured: " + counts);
    }

    @Test
    void lowestLatencyEndToEndSendsAlmostEverythingToTheQuickerRoute() {
        List<String> seq = new ArrayList<>();
        for (int i = 0; i < 60; i++) {
            seq.add(served("quickest", "e2e " + i, true, Map.of()));
        }
        Map<String, Integer> counts = tally(seq);
        print("lowest_latency e2e (5 ms vs 2 s first token)", counts, seq.size());
        // tolerance: at least 90% on the quick route
        assertTrue(counts.getOrDefault("e2e-fast", 0) >= 54, counts.toString());
    }

    @Test
    void priorityGivesTheTopTierEverythingByWeightUntilItIsUnavailable() {
        List<String> seq = new ArrayList<>();
        for (int i = 0; i < 100; i++) {
            seq.add(served("prio", "tiered " + i));
        }
        Map<String, Integer> counts = tally(seq);
        print("priority, tier 1 = a:3 b:1, tier 2 = c", counts, seq.size());
        // tolerance: none (smooth weighted round-robin within the tier on the shared cursor)
        assertEquals(Map.of("p1-a", 75, "p1-b", 25), counts);

        // the top tier becomes unavailable: each member fails once with max_fails 1
        gw.sim("sim").enqueue("m-p1-a", Fault.status(500));
        gw.sim("sim").enqueue("m-p1-b", Fault.status(500));
        List<String> after = new ArrayList<>();
        for (int i = 0; i < 40; i++) {
            after.add(served("prio", "fallback " + i));
        }
        Map<String, Integer> later = tally(after.subList(4, after.size()));
        print("priority after both tier-1 members failed (last 36)", later, 36);
        assertEquals(Map.of("p2-c", 36), later);
    }

    @Test
    void semanticRoutesEachPromptToTheClosestDescriptionAndRotatesIdenticalOnes() {
        Map<String, Integer> code = new HashMap<>();
        Map<String, Integer> poems = new HashMap<>();
        Map<String, Integer> food = new HashMap<>();
        for (int i = 0; i < 20; i++) {
            code.merge(served("sem", "please fix this python code bug"), 1, Integer::sum);
            poems.merge(served("sem", "write a sonnet poem with rhyme"), 1, Integer::sum);
            food.merge(served("sem", "a recipe for baking bread in my kitchen"), 1, Integer::sum);
        }
        print("semantic, code prompts", new TreeMap<>(code), 20);
        print("semantic, poetry prompts", new TreeMap<>(poems), 20);
        print("semantic, cooking prompts", new TreeMap<>(food), 20);
        assertEquals(Map.of("sem-coder", 20), code);
        assertEquals(Map.of("sem-poet", 20), poems);
        // two members share the cooking description: they round-robin (tolerance +-3 of 10 each)
        assertEquals(20, food.getOrDefault("sem-chef-1", 0) + food.getOrDefault("sem-chef-2", 0), food.toString());
        assertTrue(Math.abs(food.getOrDefault("sem-chef-1", 0) - 10) <= 3, food.toString());
        // one embeddings call per request; the descriptions were embedded on the first only, then read from the
        // state store's cache, so the latest calls carry the prompt alone
        assertEquals(60, gw.sim("sim").stats("m-embed").received());
        gw.sim("sim").stats("m-embed").recent().forEach(r -> assertTrue(!r.body().contains("sonnet\",")
                && !r.body().contains("bread\","), r.body()));
    }

    /**
     * Each kind of request rotates on its own (hunt27): cooking prompts alternating with code prompts still share the
     * two cooks evenly, and requests without the hash key alternating with keyed ones still share a 3:1 pair by
     * weight. On the group's one cursor, moved by every request, the cooking prompts saw only every other position
     * (all to one cook) and the keyless requests went 4/4.
     */
    @Test
    void requestsOfOneKindRotateOnTheirOwnWhateverComesBetween() {
        Map<String, Integer> food = new HashMap<>();
        for (int i = 0; i < 8; i++) {
            assertEquals("sem-coder", served("sem", "please fix this python code bug"));
            food.merge(served("sem", "a recipe for baking bread in my kitchen"), 1, Integer::sum);
        }
        assertEquals(Map.of("sem-chef-1", 4, "sem-chef-2", 4), food);

        Map<String, Integer> keyless = new HashMap<>();
        for (int i = 0; i < 8; i++) {
            served("chmix", "hello", false, Map.of("X-Session", "user-" + i));
            keyless.merge(served("chmix", "hello"), 1, Integer::sum);
        }
        assertEquals(Map.of("mix-a", 6, "mix-b", 2), keyless);
    }

    @Test
    void semanticFallsBackAmongIdenticalDescriptionsByWeightBeforeAnyOtherSpecialist() {
        // three cooks share a description (weights 3:2:1); the weight-3 one fails every request (max_fails 0: it
        // stays in the rotation). Two full cycles of the smooth weighted sequence: it comes first 6 times in 12
        List<List<String>> trails = new ArrayList<>();
        for (int i = 0; i < 12; i++) {
            trails.add(trail("semfall", "a recipe for baking bread in my kitchen", Map.of()));
        }
        Map<String, Integer> firsts = tally(trails.stream().map(t -> t.get(0).split(":")[0]).toList());
        Map<String, Integer> servers = tally(trails.stream().map(t -> t.get(t.size() - 1).split(":")[0]).toList());
        print("semantic, identical descriptions 3:2:1, first tried", firsts, 12);
        print("semantic, identical descriptions 3:2:1, served by", servers, 12);
        assertEquals(Map.of("fb-chef-down", 6, "fb-chef-mid", 4, "fb-chef-low", 2), firsts);
        for (List<String> t : trails) {
            // the failed primary falls back to the next cook by weight, never to the coder
            assertEquals(t.get(0).startsWith("fb-chef-down") ? List.of("fb-chef-down:failed", "fb-chef-mid:success")
                    : List.of(t.get(0).split(":")[0] + ":success"), t);
        }
        assertEquals(Map.of("fb-chef-mid", 10, "fb-chef-low", 2), servers);
        assertEquals(0, gw.sim("sim").stats("m-fb-coder").received());
    }

    @Test
    void consistentHashingFallsBackToTheSameRouteEveryTimeForTheSameUser() {
        Set<String> fallbacks = new java.util.HashSet<>();
        for (int u = 0; u < 8; u++) {
            Map<String, String> user = Map.of("X-User", "user-" + u);
            String primary = served("stickyfall", "hello", false, user);
            String fallback = null;
            for (int rep = 0; rep < 3; rep++) {
                // the user's own route fails this request (max_fails 0: it is not cooled down, stays first)
                gw.sim("sim").enqueue("m-" + primary, Fault.status(500));
                List<String> t = trail("stickyfall", "hello again", user);
                assertEquals(2, t.size(), t.toString());
                assertEquals(primary + ":failed", t.get(0));
                String now = t.get(1).split(":")[0];
                assertEquals(fallback == null ? now : fallback, now, "user-" + u + " falls back to one route");
                fallback = now;
            }
            assertEquals(primary, served("stickyfall", "recovered", false, user), "back on its own route");
            fallbacks.add(primary + ">" + fallback);
        }
        System.out.println("[kong] consistent_hashing fallbacks (primary>fallback) for 8 users: " + fallbacks);
    }

    @Test
    void semanticSharesAPromptThatMatchesNoDescriptionByWeight() {
        // a programming prompt is above the threshold: the coder only
        for (int i = 0; i < 4; i++) {
            assertEquals("loose-coder", served("loose", "please fix this python code bug"));
        }
        // a prompt sharing no word with any description is under it: no specialist's, so weights 3:1 decide
        List<String> routes = new ArrayList<>();
        for (int i = 0; i < 8; i++) {
            routes.add(served("loose", "what is the weather like on mars tomorrow"));
        }
        Map<String, Integer> split = tally(routes);
        print("semantic under the threshold", split, 8);
        assertEquals(Map.of("loose-coder", 6, "loose-poet", 2), split);
    }

    /**
     * A semantic group whose embeddings route fails has no prompt embedding to match: the whole group shares the
     * prompt by weight, as one that matches no description, and a weight-0 member is a standby. It rotated over every
     * member regardless of weight, the standby taking a third of the traffic (found by hunt9).
     */
    @Test
    void semanticWithoutEmbeddingsSharesThePromptByWeight() {
        long asked = gw.sim("sim").stats("m-embed-5").received();
        List<String> routes = new ArrayList<>();
        for (int i = 0; i < 8; i++) {
            routes.add(served("semdown", "please fix this python code bug"));
        }
        Map<String, Integer> split = tally(routes);
        print("semantic with its embeddings route failing (weights 3:1:0)", split, 8);
        assertEquals(Map.of("dn-coder", 6, "dn-poet", 2), split);
        // its failure opened the embeddings route's breaker (max_fails 1): the requests after it did not wait for a
        // route out of traffic (a hung one added its whole timeout to each; found by hunt20)
        assertTrue(gw.sim("sim").stats("m-embed-5").received() - asked <= 1,
                "embeddings calls: " + (gw.sim("sim").stats("m-embed-5").received() - asked));
    }

    /**
     * Requests that narrow a group to a subset of its members (here a prompt too large for one member's context
     * window) share the subset by weight even when they alternate with requests that use the whole group: both took
     * positions of one rotation cursor, every other one, and the narrowed requests all landed on one member (found by
     * hunt20).
     */
    @Test
    void requestsThatNarrowTheGroupStillShareItsRestByWeight() {
        String large = "please read this long text ".repeat(60);
        List<String> narrowed = new ArrayList<>();
        List<String> whole = new ArrayList<>();
        for (int i = 0; i < 24; i++) {
            narrowed.add(served("narrow", large + i));
            whole.add(served("narrow", "short " + i));
        }
        Map<String, Integer> split = tally(narrowed);
        print("weighted, narrowed to two of three, alternating with whole-group requests", split, 24);
        assertEquals(Map.of("nw-a", 12, "nw-b", 12), split);
        assertEquals(Map.of("nw-a", 8, "nw-b", 8, "nw-small", 8), tally(whole));
    }

    /**
     * A request whose needs leave one member of a semantic group (here a prompt too large for the poet's context
     * window) has nothing to choose: the embeddings route is not called, where it added its latency and its cost to
     * every such request. A short prompt, which both members could serve, is still matched.
     */
    @Test
    void semanticDoesNotAskForEmbeddingsWhenOneCandidateIsLeft() {
        String large = "please write a poem in verse that rhymes ".repeat(40);
        for (int i = 0; i < 3; i++) {
            assertEquals("one-coder", served("semone", large + i));
        }
        assertEquals(0, gw.sim("sim").stats("m-embed-6").received(), "the one candidate needed no embeddings");
        assertEquals("one-poet", served("semone", "write a sonnet poem with rhyme"));
        assertEquals(1, gw.sim("sim").stats("m-embed-6").received());
    }

    /**
     * An embeddings answer counts for its route's breaker as a live attempt's does: a success resets a failure count
     * whose last failure is past `fail_timeout`, as Kong's does. Its successes were never recorded, so failures
     * months apart added up to a cooldown (a session 38 leftover).
     */
    @Test
    void anEmbeddingsSuccessCountsForItsRoutesBreaker() throws InterruptedException {
        StateStore store = gw.core().store();
        String key = "acme/embedder-7";
        store.resetHealth(key).await().indefinitely();
        // one failure of the two its breaker allows (embed7's group: max_fails 2), its fail_timeout past at once
        store.recordFailure(key, 2, Duration.ofMillis(1)).await().indefinitely();
        Thread.sleep(20);
        assertEquals("ho-poet", served("semhalf", "write a sonnet poem with rhyme"), "matched by its embedding");
        Eventually.eventually(() -> snapshot(store, key).fails() == 0, "the success reset the failure count");
    }

    /**
     * A half-open embeddings route is called only under its probe slot, as its probe: while another probe holds the
     * slot it is not called (the group shares the prompt by weight), and a call under the slot holds it, and closes
     * the breaker when it succeeds or cools the route down again when it fails. It was called beside the other probe
     * and its success never recorded, so the route stayed half-open (a session 38 leftover).
     */
    @Test
    void aHalfOpenEmbeddingsRouteIsCalledAsItsProbeAndItsVerdictCounts() throws InterruptedException {
        StateStore store = gw.core().store();
        String key = "acme/embedder-7";
        store.resetHealth(key).await().indefinitely();
        halfOpen(store, key);
        assertTrue(store.tryAcquireProbe(key, 2, Duration.ofSeconds(30), "another-instance").await().indefinitely());
        long asked = gw.sim("sim").stats("m-embed-7").received();
        List<String> routes = new ArrayList<>();
        for (int i = 0; i < 4; i++) {
            routes.add(served("semhalf", "please fix this python code bug"));
        }
        assertEquals(Map.of("ho-coder", 1, "ho-poet", 3), tally(routes), "no embeddings: shared by weight");
        assertEquals(asked, gw.sim("sim").stats("m-embed-7").received(), "not called beside the other probe");

        store.releaseProbe(key, "another-instance").await().indefinitely();
        // the embeddings model answers in 1 s this time: while it answers, the fleet sees the probe slot taken
        gw.sim("sim").script("m-embed-7", INSTANT.withLatency(ModelScript.Latency.of(1000, 0)));
        CompletableFuture<String> probing = CompletableFuture.supplyAsync(
                () -> served("semhalf", "please fix this python code bug"));
        Eventually.eventually(() -> gw.sim("sim").stats("m-embed-7").received() == asked + 1,
                "the embeddings call began");
        assertTrue(snapshot(store, key).probeTaken(), "the call holds the route's probe slot");
        assertEquals("ho-coder", probing.join(), "matched by its embedding");
        gw.sim("sim").script("m-embed-7", INSTANT);
        RouteSnapshot health = snapshot(store, key);
        assertEquals(0, health.fails(), "the probe's success closed the breaker");
        assertFalse(health.probeTaken(), "its slot was freed");

        // half-open again, and this time the probe fails: the route cools down again
        halfOpen(store, key);
        gw.sim("sim").enqueue("m-embed-7", Fault.status(500));
        assertEquals(200, given().baseUri(gw.baseUrl()).auth().oauth2("k-acme").contentType("application/json")
                .body(body("semhalf", "write a sonnet poem with rhyme", false)).post("/v1/chat/completions")
                .statusCode());
        health = snapshot(store, key);
        assertEquals(3, health.fails(), "the failed probe counted");
        assertTrue(health.coolingDown(), "and cooled the route down again");
        assertFalse(health.probeTaken(), "its slot was freed");
    }

    /**
     * What the semantic strategy sends its embeddings model is the prompt's, and a refusal of it is not the route's
     * fault (hunt27): a 400 (a prompt past the model's context, say) counts nothing against the embeddings route, as a
     * live 400 passed through does, where it cooled the route down and took `/v1/embeddings` of its alias with it; a
     * prompt with no user text is not embedded (OpenAI refuses an empty input); a prompt longer than the embeddings
     * route's `context_window` (embedder-7: 64) is embedded by its head within it.
     */
    @Test
    void aRefusalOfThePromptsTextIsNotTheEmbeddingsRoutesFault() throws Exception {
        StateStore store = gw.core().store();
        String key = "acme/embedder-7";
        store.resetHealth(key).await().indefinitely();
        gw.sim("sim").enqueue("m-embed-7", Fault.status(400));
        served("semhalf", "please fix this python code bug");
        assertEquals(0, snapshot(store, key).fails(), "the 400 counted nothing");
        assertEquals("ho-coder", served("semhalf", "please fix this python code bug"), "matched by its embedding");

        long asked = gw.sim("sim").stats("m-embed-7").received();
        assertEquals(200, given().baseUri(gw.baseUrl()).auth().oauth2("k-acme").contentType("application/json")
                .body("{\"model\":\"semhalf\",\"messages\":[{\"role\":\"system\",\"content\":\"be brief\"}]}")
                .post("/v1/chat/completions").statusCode());
        assertEquals(asked, gw.sim("sim").stats("m-embed-7").received(), "no user text: nothing to embed");

        String longPrompt = "please fix this python code bug ".repeat(100);
        assertEquals("ho-coder", served("semhalf", longPrompt), "matched by the head of its text");
        List<SimStats.RecordedRequest> recent = gw.sim("sim").stats("m-embed-7").recent();
        String sent = Json.parse(recent.get(recent.size() - 1).body()).path("input").path(0).asText();
        assertTrue(longPrompt.startsWith(sent), sent);
        int tokens = TokenCounter.shared().countText(sent);
        assertTrue(tokens <= 64 && tokens >= 60, tokens + " tokens: " + sent);

        gw.sim("sim").enqueue("m-embed-7", Fault.status(500));
        served("semhalf", "please fix this python code bug");
        assertEquals(1, snapshot(store, key).fails(), "a 500 is the route's fault");
        store.resetHealth(key).await().indefinitely();
    }

    /** Two failures (embed7's max_fails) with a 1 ms cooldown, waited out: the route is half-open. */
    static void halfOpen(StateStore store, String key) throws InterruptedException {
        for (int i = 0; i < 2; i++) {
            store.recordFailure(key, 2, Duration.ofMillis(1)).await().indefinitely();
        }
        Thread.sleep(20);
    }

    static RouteSnapshot snapshot(StateStore store, String key) {
        return store.snapshot(List.of(key), Duration.ofMinutes(1)).await().indefinitely().get(key);
    }

    @Test
    void euclideanSemanticPicksTheNearestDescriptionWithinTheThresholdAndKeepsItThroughAnAdminEdit()
            throws java.io.IOException {
        // the simulator's embeddings are unit length: the coder's description is 0.82 from the code prompt, the
        // poet's 0.95 from the poem, and the weather prompt is 1.41 from both (no shared word). Threshold 1.2 is a
        // distance: as a cosine similarity it would match nothing
        for (int i = 0; i < 4; i++) {
            assertEquals("near-coder", served("near", "please fix this python code bug"));
            assertEquals("near-poet", served("near", "write a sonnet poem with rhyme"));
        }
        List<String> unmatched = new ArrayList<>();
        for (int i = 0; i < 8; i++) {
            unmatched.add(served("near", "what is the weather like on mars tomorrow"));
        }
        print("semantic euclidean, beyond the threshold (weights 3:1)", tally(unmatched), 8);
        assertEquals(Map.of("near-coder", 6, "near-poet", 2), tally(unmatched));

        // an admin edit (validated, stored, read back) keeps the metric and its threshold above 1
        Org acme = gw.core().catalog().current().org("acme").orElseThrow();
        new AdminService(gw.core()).editGroup(acme, "near", Json.parse("{\"members\":["
                        + "{\"route\":\"near-coder\",\"weight\":1},{\"route\":\"near-poet\",\"weight\":3}]}"), null, "ops")
                .await().atMost(Duration.ofSeconds(10));
        GroupSettings.Balancer stored = gw.core().catalog().current().org("acme").orElseThrow().group("near")
                .balancer();
        assertEquals(GroupSettings.DistanceMetric.EUCLIDEAN, stored.distanceMetric());
        assertEquals(1.2, stored.threshold());
        for (int i = 0; i < 4; i++) {
            assertEquals("near-coder", served("near", "please fix this python code bug"));
        }
        unmatched.clear();
        for (int i = 0; i < 8; i++) {
            unmatched.add(served("near", "what is the weather like on mars tomorrow"));
        }
        assertEquals(Map.of("near-coder", 2, "near-poet", 6), tally(unmatched));
    }

    @Test
    void weightZeroStandbysTakeNoShareAndWeightsSplitTiesUnderHashingLeastConnectionsAndUnpricedCost() {
        // consistent_hashing, weights 300/0/100, requests without the hash header: no key to stick to, so they
        // are shared by weight (a plain rotation split them 4/4/4, the standby serving a third)
        List<String> unkeyed = new ArrayList<>();
        for (int i = 0; i < 12; i++) {
            unkeyed.add(served("chweights", "no session " + i));
        }
        print("consistent_hashing without the header, weights 300/0/100", tally(unkeyed), 12);
        // tolerance: none. 12 consecutive positions of the smooth weighted sequence (period 4) are 3 cycles
        assertEquals(Map.of("chw-1", 9, "chw-3", 3), tally(unkeyed));
        for (int k = 0; k < 6; k++) {
            Map<String, String> session = Map.of("X-Session", "user-" + k);
            String home = served("chweights", "keyed", false, session);
            assertNotEquals("chw-2", home, "a weight-0 member wins no key");
            assertEquals(home, served("chweights", "keyed again", false, session), "a keyed request still sticks");
        }

        // least_connections, weights 100/100/0, one request at a time: nothing is in flight, every member ties
        // (a rotation over the three positions gave the standby's turn to lc-1: 20/10)
        List<String> sequential = new ArrayList<>();
        for (int i = 0; i < 30; i++) {
            sequential.add(served("leastconn", "one at a time " + i));
        }
        print("least_connections one at a time, weights 100/100/0", tally(sequential), 30);
        assertEquals(Map.of("lc-1", 15, "lc-2", 15), tally(sequential));

        // lowest_usage by cost with no prices: every cost is 0 for ever, so the tie is the whole ranking
        // (it split 300/100/100 evenly and gave the standby's turns to the member after it)
        List<String> unpriced = new ArrayList<>();
        for (int i = 0; i < 30; i++) {
            unpriced.add(served("unpriced", "free " + i));
        }
        print("lowest_usage cost without prices, weights 300/100/100/0", tally(unpriced), 30);
        assertEquals(Map.of("free-1", 18, "free-2", 6, "free-3", 6), tally(unpriced));
    }
}
