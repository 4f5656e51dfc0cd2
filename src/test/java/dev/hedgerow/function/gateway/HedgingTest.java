package dev.hedgerow.function.gateway;

import com.fasterxml.jackson.databind.JsonNode;
import dev.hedgerow.api.Json;
import dev.hedgerow.routing.LearnedModels;
import dev.hedgerow.routing.TokenCounter;
import dev.hedgerow.routing.TtftPredictor;
import dev.hedgerow.sim.Fault;
import dev.hedgerow.sim.ModelScript;
import dev.hedgerow.sim.SimConfig;
import dev.hedgerow.sim.SimServer;
import dev.hedgerow.sim.SimText;
import dev.hedgerow.state.LedgerEntry;
import dev.hedgerow.testsupport.GatewayHarness;
import dev.hedgerow.testsupport.Sse;
import io.restassured.RestAssured;
import io.restassured.response.Response;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;

import static io.restassured.RestAssured.given;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static dev.hedgerow.testsupport.Eventually.eventually;

/**
 * Predictive hedging over real HTTP against simulators: the slow route's first-token window passes, the next
 * route races, the first to stream wins, the simulator sees the loser's cancel, and the request is billed once.
 * Also the final retryable error only after every capable route was tried.
 */
class HedgingTest {
    static final long SEED = 11;
    static final int LENGTH = 24;
    static final String YAML = """
            orgs:
              - id: acme
                keys: [{ name: app, key: "k-acme" }]
                providers:
                  - { id: slow, base_url: "${SIM_SLOW_URL}" }
                  - { id: fast, base_url: "${SIM_FAST_URL}" }
                  - { id: spare, base_url: "${SIM_SPARE_URL}" }
                routes:
                  - { alias: tiered, provider: slow, model: m-tiered, priority: 1 }
                  - { alias: tiered, provider: fast, model: m-tiered, priority: 2 }
                  - { alias: auto, provider: slow, model: m-auto }
                  - { alias: auto, provider: fast, model: m-auto }
                  - { alias: billed, provider: slow, model: m-billed, priority: 1 }
                  - { alias: billed, provider: fast, model: m-billed, priority: 2 }
                  - { alias: doomed, provider: slow, model: m-doomed }
                  - { alias: doomed, provider: fast, model: m-doomed }
                  - { alias: doomed, provider: spare, model: m-doomed }
                groups:
                  tiered: { strategy: priority, first_token_floor: 200ms }
                  auto: { first_token_floor: 200ms }
                  billed: { strategy: priority, first_token_floor: 200ms }
              # another org: the hedge budget is per org, and the tests above spend acme's minimum allowance
              - id: beta
                keys: [{ name: app, key: "k-beta" }]
                providers:
                  - { id: slow, base_url: "${SIM_SLOW_URL}" }
                  - { id: fast, base_url: "${SIM_FAST_URL}" }
                routes:
                  - { alias: whole, provider: slow, model: m-whole, priority: 1 }
                  - { alias: whole, provider: fast, model: m-whole, priority: 2 }
                groups:
                  whole: { strategy: priority, first_token_floor: 200ms }
              # an org that allows no hedging at all: its budget refuses every hedge
              - id: frugal
                keys: [{ name: app, key: "k-frugal" }]
                hedge_budget: { ratio: 0, min_per_window: 0 }
                providers:
                  - { id: slow, base_url: "${SIM_SLOW_URL}" }
                  - { id: fast, base_url: "${SIM_FAST_URL}" }
                routes:
                  - { alias: frugal, provider: slow, model: m-frugal, priority: 1 }
                  - { alias: frugal, provider: fast, model: m-frugal, priority: 2 }
                groups:
                  frugal: { strategy: priority, first_token_floor: 200ms }
              # an org whose budget allows one hedge per ten requests: a refused request asks again as it waits
              - id: thrifty
                keys: [{ name: app, key: "k-thrifty" }]
                hedge_budget: { ratio: 0.1, min_per_window: 0 }
                providers:
                  - { id: slow, base_url: "${SIM_SLOW_URL}" }
                  - { id: fast, base_url: "${SIM_FAST_URL}" }
                routes:
                  - { alias: thrifty, provider: slow, model: m-thrifty, priority: 1 }
                  - { alias: thrifty, provider: fast, model: m-thrifty, priority: 2 }
                  - { alias: quick, provider: fast, model: m-thrifty }
                groups:
                  thrifty: { strategy: priority, first_token_floor: 200ms }
            """;

    static GatewayHarness gw;

    @BeforeAll
    static void start() {
        ModelScript slow = ModelScript.defaults().withLength(LENGTH).withLatency(ModelScript.Latency.of(4000, 0));
        ModelScript fast = ModelScript.defaults().withLength(LENGTH).withLatency(ModelScript.Latency.of(5, 0));
        SimConfig slowSim = SimConfig.of(SEED);
        SimConfig fastSim = SimConfig.of(SEED);
        for (String m : List.of("m-tiered", "m-auto", "m-billed", "m-whole", "m-thrifty")) {
            slowSim = slowSim.withModel(m, slow);
            fastSim = fastSim.withModel(m, fast);
        }
        // slow enough to pass the 200 ms window, quick enough to wait for when no hedge may fire
        ModelScript late = ModelScript.defaults().withLength(LENGTH).withLatency(ModelScript.Latency.of(600, 0));
        // so slow that only the hedge can answer, however long the refilling requests take on a loaded machine
        ModelScript stuck = ModelScript.defaults().withLength(LENGTH).withLatency(ModelScript.Latency.of(20_000, 0));
        gw = GatewayHarness.start(YAML, Map.of("slow", slowSim.withModel("m-doomed", fast).withModel("m-frugal", late)
                        .withModel("m-thrifty", stuck),
                "fast", fastSim.withModel("m-doomed", fast).withModel("m-frugal", fast),
                "spare", SimConfig.of(SEED).withModel("m-doomed", fast)));
        RestAssured.baseURI = gw.baseUrl();
        // the slow routes have answered in ~100 ms so far: they rank first and their window is short
        TtftPredictor p = TtftPredictor.fresh(TtftPredictor.Prior.defaults());
        for (int i = 0; i < 40; i++) {
            p = p.update(5 + i, 100);
        }
        for (String route : List.of("acme/tiered-slow", "acme/auto-slow", "acme/billed-slow", "beta/whole-slow",
                "frugal/frugal-slow", "thrifty/thrifty-slow")) {
            gw.core().store().putRouteBlob(route, LearnedModels.TTFT, p.encode(), null).await()
                    .atMost(Duration.ofSeconds(5));
        }
    }

    @AfterAll
    static void stop() {
        gw.close();
    }

    static Response post(String body) {
        return given().auth().oauth2("k-acme").contentType("application/json").body(body)
                .post("/v1/chat/completions");
    }

    static String chat(String alias, String prompt, boolean stream, String extra) {
        return "{\"model\":\"" + alias + "\",\"stream\":" + stream + extra
                + ",\"messages\":[{\"role\":\"user\",\"content\":\"" + prompt + "\"}]}";
    }
    static JsonNode attempt(JsonNode trail, String route) {
        for (JsonNode a : trail) {
            if (a.path("route").asText().equals(route)) {
                return a;
            }
        }
        throw new AssertionError("no attempt on " + route + " in " + trail);
    }

    @Test
    void hedgeToTheNextTierFiresAtTheWindowAndTheSimulatorSeesTheLoserCancelled() throws Exception {
        SimServer slow = gw.sim("slow");
        double hedges = gw.metric("hedgerow_hedges", "result", "fired");
        String out = post(chat("tiered", "race me", true, "")).then().statusCode(200).extract().asString();
        assertEquals(SimText.expected(SEED, "race me", LENGTH), Sse.content(out));
        JsonNode trail = Sse.trail(out);
        assertEquals("lost_race", attempt(trail, "tiered-slow").path("outcome").asText());
        JsonNode hedge = attempt(trail, "tiered-fast");
        assertEquals("hedge", hedge.path("kind").asText());
        assertEquals("success", hedge.path("outcome").asText());
        assertTrue(hedge.path("start_ms").asLong() >= 200, "not before the window's floor: " + hedge);
        eventually(() -> slow.stats("m-tiered").cancelled() == 1, "the slow simulator sees the cancel");
        assertEquals(0, slow.stats("m-tiered").completed());
        assertEquals(hedges + 1, gw.metric("hedgerow_hedges", "result", "fired"));
        assertTrue(gw.metric("hedgerow_hedge_wasted_tokens") > 0);
    }

    @Test
    void anOrgWhoseHedgeBudgetIsZeroWaitsForItsPrimary() {
        double refused = gw.metric("hedgerow_hedges", "result", "budget_refused");
        String out = given().auth().oauth2("k-frugal").contentType("application/json")
                .body(chat("frugal", "no race", true, "")).post("/v1/chat/completions")
                .then().statusCode(200).header("x-hedgerow-route", "frugal-slow").extract().asString();
        assertEquals(SimText.expected(SEED, "no race", LENGTH), Sse.content(out));
        JsonNode trail = Sse.trail(out);
        assertEquals(1, trail.size(), "one attempt, no hedge: " + trail);
        assertEquals(0, gw.sim("fast").stats("m-frugal").received(), "the next tier never saw the request");
        // refused at the 200 ms window (and again at 400 ms, unless the 600 ms answer came first on a slow machine;
        // the re-ask itself is checked with fake time in DispatchTimingTest and through HTTP below)
        assertTrue(gw.metric("hedgerow_hedges", "result", "budget_refused") >= refused + 1);
    }

    @Test
    void aRefusedHedgeAsksAgainAndFiresOnceOtherRequestsHaveRefilledTheBudget() throws Exception {
        // the first request spends the one hedge that 10 % of one request allows
        String first = given().auth().oauth2("k-thrifty").contentType("application/json")
                .body(chat("thrifty", "first", true, "")).post("/v1/chat/completions")
                .then().statusCode(200).extract().asString();
        assertEquals("hedge", attempt(Sse.trail(first), "thrifty-fast").path("kind").asText());
        // the second finds 1 hedge for 2 requests at its window: refused, it waits on its 20 s primary
        double refused = gw.metric("hedgerow_hedges", "org", "thrifty", "result", "budget_refused");
        CompletableFuture<String> second = CompletableFuture.supplyAsync(
                () -> given().auth().oauth2("k-thrifty").contentType("application/json")
                        .body(chat("thrifty", "second", true, "")).post("/v1/chat/completions")
                        .then().statusCode(200).extract().asString());
        eventually(() -> gw.metric("hedgerow_hedges", "org", "thrifty", "result", "budget_refused") > refused,
                "the second request's hedge is refused");
        // fifteen more requests of the org: a request asking again may use 80 % of 10 % of 17 requests (1.36),
        // more than the 1 hedge spent
        for (int i = 0; i < 15; i++) {
            given().auth().oauth2("k-thrifty").contentType("application/json").body(chat("quick", "q" + i, true, ""))
                    .post("/v1/chat/completions").then().statusCode(200);
        }
        String out = second.get(30, TimeUnit.SECONDS);
        assertEquals(SimText.expected(SEED, "second", LENGTH), Sse.content(out));
        JsonNode trail = Sse.trail(out);
        JsonNode hedge = attempt(trail, "thrifty-fast");
        assertEquals("hedge", hedge.path("kind").asText());
        assertEquals("success", hedge.path("outcome").asText());
        assertTrue(hedge.path("start_ms").asLong() >= 400, "asked again when the wait doubled, not before: " + hedge);
        assertEquals("lost_race", attempt(trail, "thrifty-slow").path("outcome").asText());
    }

    @Test
    void theDefaultStrategyHedgesToo() throws Exception {
        String out = post(chat("auto", "auto race", true, "")).then().statusCode(200).extract().asString();
        assertEquals(SimText.expected(SEED, "auto race", LENGTH), Sse.content(out));
        JsonNode trail = Sse.trail(out);
        assertEquals("lost_race", attempt(trail, "auto-slow").path("outcome").asText());
        assertEquals("hedge", attempt(trail, "auto-fast").path("kind").asText());
        eventually(() -> gw.sim("slow").stats("m-auto").cancelled() == 1, "the slow simulator sees the cancel");
    }

    @Test
    void aHedgedRequestIsBilledOnceWithTheWinnersUsage() throws Exception {
        // a message name, which the gateway's tokenizer counts and the simulator does not: the two counts differ
        String body = "{\"model\":\"billed\",\"stream\":true,\"stream_options\":{\"include_usage\":true},"
                + "\"messages\":[{\"role\":\"user\",\"name\":\"alice\",\"content\":\"bill me once\"}]}";
        int prompt = SimText.estimateTokens(List.of("bill me once"));
        assertNotEquals(TokenCounter.shared().countRequest(Json.parse(body)), prompt, "the gateway's own count");
        String out = post(body).then().statusCode(200).extract().asString();
        List<JsonNode> ev = Sse.events(out);
        JsonNode usage = ev.get(ev.size() - 1).path("usage");
        assertEquals(prompt, usage.path("prompt_tokens").asInt(), usage.toString());
        assertEquals(LENGTH, usage.path("completion_tokens").asInt());
        eventually(() -> gw.ledger("acme").containsKey("billed"), "the ledger entry");
        LedgerEntry ledger = gw.ledger("acme").get("billed");
        assertEquals(1, ledger.requests());
        assertEquals(prompt, ledger.usage().promptTokens());
        assertEquals(LENGTH, ledger.usage().completionTokens());
    }

    @Test
    void aNonStreamingRequestIsHedgedAndTheLoserCancelled() throws Exception {
        Response r = given().auth().oauth2("k-beta").contentType("application/json")
                .body(chat("whole", "whole answer", false, ",\"max_tokens\":24")).post("/v1/chat/completions");
        r.then().statusCode(200);
        assertEquals(SimText.expected(SEED, "whole answer", LENGTH),
                r.jsonPath().getString("choices[0].message.content"));
        assertEquals("fast", r.jsonPath().getString("provider"));
        JsonNode trail = Json.parse(r.header("x-hedgerow-attempts"));
        assertEquals("hedge", attempt(trail, "whole-fast").path("kind").asText());
        assertEquals("lost_race", attempt(trail, "whole-slow").path("outcome").asText());
        eventually(() -> gw.sim("slow").stats("m-whole").cancelled() == 1, "the slow simulator sees the cancel");
    }

    @Test
    void aRetryable503ComesOnlyAfterEveryCapableRouteWasTried() {
        gw.sim("slow").enqueue("m-doomed", Fault.status(503));
        gw.sim("fast").enqueue("m-doomed", Fault.reset());
        gw.sim("spare").enqueue("m-doomed", Fault.status(502));
        Response r = post(chat("doomed", "nobody home", true, ""));
        r.then().statusCode(503);
        assertNotNull(r.header("retry-after"));
        assertTrue(Long.parseLong(r.header("retry-after")) >= 1);
        assertEquals("server_error", r.jsonPath().getString("error.type"), r.asString());
        for (String p : List.of("slow", "fast", "spare")) {
            assertEquals(1, gw.sim(p).stats("m-doomed").received(), p);
        }
    }
}
