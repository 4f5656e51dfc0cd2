package dev.hedgerow.function.gateway;

import com.fasterxml.jackson.databind.JsonNode;
import dev.hedgerow.api.Json;
import dev.hedgerow.sim.Fault;
import dev.hedgerow.sim.ModelScript;
import dev.hedgerow.sim.SimConfig;
import dev.hedgerow.testsupport.GatewayHarness;
import dev.hedgerow.testsupport.Sse;
import io.restassured.response.Response;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

import java.io.IOException;
import java.net.ServerSocket;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;

import static io.restassured.RestAssured.given;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Kong's retry and fallback through the HTTP API with scripted simulator faults: {@code failover_criteria}
 * (the criteria alone decide; {@code non_idempotent} is accepted and changes nothing), {@code retries} (once
 * every route was tried, again on a route whose breaker is still closed),
 * {@code read_timeout}, and the priority rules
 * (stay on the top tier while its breaker is closed; wait for a short {@code Retry-After}).
 */
class KongRetryTest {
    static String yaml(int deadPort) {
        return """
                orgs:
                  - id: acme
                    keys: [{ name: app, key: "k-acme" }]
                    providers:
                      - { id: sim, base_url: "${SIM_SIM_URL}", api_key: "sk-sim" }
                      - { id: dead, base_url: "http://127.0.0.1:%d/v1" }
                    routes:
                      - { id: c5-a, alias: c500, provider: sim, model: m-c5-a, weight: 100 }
                      - { id: c5-b, alias: c500, provider: sim, model: m-c5-b, weight: 0 }
                      - { id: c3-a, alias: c503, provider: sim, model: m-c3-a, weight: 100 }
                      - { id: c3-b, alias: c503, provider: sim, model: m-c3-b, weight: 0 }
                      - { id: c4-a, alias: c403, provider: sim, model: m-c4-a, weight: 100 }
                      - { id: c4-b, alias: c403, provider: sim, model: m-c4-b, weight: 0 }
                      - { id: d4-a, alias: d403, provider: sim, model: m-d4-a, weight: 100 }
                      - { id: d4-b, alias: d403, provider: sim, model: m-d4-b, weight: 0 }
                      - { id: ni-dead, alias: kongpost, provider: dead, model: m-none, weight: 100 }
                      - { id: ni-a, alias: kongpost, provider: sim, model: m-ni-a, weight: 0 }
                      - { id: np-a, alias: kongpost2, provider: sim, model: m-np-a, weight: 100 }
                      - { id: np-b, alias: kongpost2, provider: sim, model: m-np-b, weight: 0 }
                      - { id: kr-a, alias: kongreset, provider: sim, model: m-kr-a, weight: 100 }
                      - { id: kr-b, alias: kongreset, provider: sim, model: m-kr-b, weight: 0 }
                      - { id: kb-a, alias: konghtml, provider: sim, model: m-kb-a, weight: 100 }
                      - { id: kb-b, alias: konghtml, provider: sim, model: m-kb-b, weight: 0 }
                      - { id: ki-a, alias: konginvalid, provider: sim, model: m-ki-a, weight: 100 }
                      - { id: ki-b, alias: konginvalid, provider: sim, model: m-ki-b, weight: 0 }
                      - { id: rt-a, alias: twice, provider: sim, model: m-rt-a, weight: 100 }
                      - { id: rt-b, alias: twice, provider: sim, model: m-rt-b, weight: 50 }
                      - { id: rt-c, alias: twice, provider: sim, model: m-rt-c, weight: 10 }
                      - { id: rd-a, alias: readto, provider: sim, model: m-rd-a, weight: 100 }
                      - { id: rd-b, alias: readto, provider: sim, model: m-rd-b, weight: 0 }
                      - { id: rn-a, alias: readnot, provider: sim, model: m-rn-a, weight: 100 }
                      - { id: rn-b, alias: readnot, provider: sim, model: m-rn-b, weight: 0 }
                      - { id: lone, alias: lone, provider: sim, model: m-lone }
                      - { id: lone2, alias: lone2, provider: sim, model: m-lone2 }
                      - { id: top, alias: tiers, provider: sim, model: m-top, priority: 1 }
                      - { id: low, alias: tiers, provider: sim, model: m-low, priority: 2 }
                      - { id: top1, alias: tiers1, provider: sim, model: m-top1, priority: 1 }
                      - { id: low1, alias: tiers1, provider: sim, model: m-low1, priority: 2 }
                      - { id: topw, alias: tiersw, provider: sim, model: m-topw, priority: 1 }
                      - { id: loww, alias: tiersw, provider: sim, model: m-loww, priority: 2 }
                      - { id: topl, alias: tiersl, provider: sim, model: m-topl, priority: 1 }
                      - { id: lowl, alias: tiersl, provider: sim, model: m-lowl, priority: 2 }
                      - { id: topm, alias: tiersm, provider: sim, model: m-topm, priority: 1 }
                      - { id: lowm, alias: tiersm, provider: sim, model: m-lowm, priority: 2 }
                      - { id: pt-a, alias: passed, provider: sim, model: m-pt-a }
                      - { id: cf-a, alias: cf, provider: sim, model: m-cf-a, weight: 100 }
                      - { id: cf-b, alias: cf, provider: sim, model: m-cf-b, weight: 0 }
                      - { id: cg-a, alias: cg, provider: sim, model: m-cg-a, weight: 100 }
                      - { id: cg-b, alias: cg, provider: sim, model: m-cg-b, weight: 0 }
                      - { id: kc-a, alias: kongcf, provider: sim, model: m-kc-a, weight: 100 }
                      - { id: kc-b, alias: kongcf, provider: sim, model: m-kc-b, weight: 0 }
                      - { id: kl-a, alias: kongcflisted, provider: sim, model: m-kl-a, weight: 100 }
                      - { id: kl-b, alias: kongcflisted, provider: sim, model: m-kl-b, weight: 0 }
                    groups:
                      c500: { strategy: weighted, hedging: false, failover_criteria: [error, timeout, http_500] }
                      c503: { strategy: weighted, hedging: false, failover_criteria: [error, timeout, http_500] }
                      c403: { strategy: weighted, hedging: false, failover_criteria: [error, http_403, non_idempotent] }
                      d403: { strategy: weighted, hedging: false }
                      kongpost: { strategy: weighted, hedging: false, failover_criteria: [error, timeout, http_500] }
                      kongpost2: { strategy: weighted, hedging: false, failover_criteria: [error, timeout, http_500] }
                      kongreset: { strategy: weighted, hedging: false, failover_criteria: [error, timeout] }
                      konghtml: { strategy: weighted, hedging: false, failover_criteria: [error, timeout] }
                      konginvalid: { strategy: weighted, hedging: false,
                                     failover_criteria: [error, timeout, invalid_header] }
                      twice: { strategy: weighted, hedging: false, retries: 1 }
                      readto: { strategy: weighted, hedging: false, read_timeout: 150ms }
                      readnot: { strategy: weighted, hedging: false, read_timeout: 150ms,
                                 failover_criteria: [error, http_500] }
                      lone: { strategy: weighted, hedging: false, retries: 2, breaker: { max_fails: 5, fail_timeout: 30s } }
                      lone2: { strategy: weighted, hedging: false, retries: 3, breaker: { max_fails: 2, fail_timeout: 30s } }
                      tiers: { strategy: priority, hedging: false, breaker: { max_fails: 3, fail_timeout: 30s } }
                      tiers1: { strategy: priority, hedging: false, breaker: { max_fails: 1, fail_timeout: 30s } }
                      tiersw: { strategy: priority, hedging: false, breaker: { max_fails: 3, fail_timeout: 30s } }
                      tiersl: { strategy: priority, hedging: false, breaker: { max_fails: 3, fail_timeout: 30s } }
                      tiersm: { strategy: priority, hedging: false, breaker: { max_fails: 3, fail_timeout: 30s } }
                      passed: { strategy: weighted, hedging: false, failover_criteria: [error, timeout] }
                      cf: { strategy: weighted, hedging: false }
                      cg: { strategy: weighted, hedging: false }
                      kongcf: { strategy: weighted, hedging: false,
                                balancer: { failover_criteria: [error, timeout, http_500, http_502, http_503] } }
                      kongcflisted: { strategy: weighted, hedging: false, failover_criteria: [error, http_520] }
                """.formatted(deadPort);
    }

    static GatewayHarness gw;

    @BeforeAll
    static void start() throws IOException {
        int deadPort;
        try (ServerSocket s = new ServerSocket(0)) {
            deadPort = s.getLocalPort();   // closed again: connections to it are refused
        }
        ModelScript instant = ModelScript.defaults().withLength(4).withLatency(ModelScript.Latency.INSTANT);
        SimConfig sim = SimConfig.of(13).withApiKey("sk-sim");
        for (String m : List.of("m-c5-a", "m-c5-b", "m-c3-a", "m-c3-b", "m-c4-a", "m-c4-b", "m-d4-a", "m-d4-b", "m-ni-a", "m-np-a",
                "m-np-b", "m-kr-a", "m-kr-b", "m-kb-a", "m-kb-b", "m-ki-a", "m-ki-b", "m-rt-a", "m-rt-b", "m-rt-c",
                "m-rd-a", "m-rd-b", "m-rn-a", "m-rn-b", "m-top", "m-low", "m-top1", "m-low1",
                "m-topw", "m-loww", "m-topl", "m-lowl", "m-topm", "m-lowm", "m-pt-a", "m-lone", "m-lone2", "m-cf-a", "m-cf-b", "m-cg-a", "m-cg-b", "m-kc-a", "m-kc-b", "m-kl-a", "m-kl-b")) {
            sim = sim.withModel(m, instant);
        }
        gw = GatewayHarness.start(yaml(deadPort), Map.of("sim", sim));
    }

    @AfterAll
    static void stop() {
        gw.close();
    }

    @BeforeEach
    void reset() {
        gw.sim("sim").clearFaults();
    }

    static Response send(String alias) {
        return given().baseUri(gw.baseUrl()).auth().oauth2("k-acme").contentType("application/json")
                .body("{\"model\":\"" + alias + "\",\"messages\":[{\"role\":\"user\",\"content\":\"retry\"}]}")
                .post("/v1/chat/completions");
    }

    /**
     * A streamed request: read_timeout bounds a stream's response head (a non-streamed answer's head, which most
     * providers send only with the whole answer, is waited for as long as that answer).
     */
    static Response stream(String alias) {
        return given().baseUri(gw.baseUrl()).auth().oauth2("k-acme").contentType("application/json")
                .body("{\"model\":\"" + alias + "\",\"stream\":true,"
                        + "\"messages\":[{\"role\":\"user\",\"content\":\"retry\"}]}")
                .post("/v1/chat/completions");
    }

    /** The attempt trail as "route:outcome:error" strings. */
    static List<String> trail(Response r) {
        try {
            return trail(Json.parse(r.header("x-hedgerow-attempts").getBytes()));
        } catch (IOException e) {
            throw new AssertionError(e);
        }
    }

    /** The attempt trail a stream ended with, as "route:outcome:error" strings. */
    static List<String> streamTrail(Response r) {
        return trail(Sse.trail(r.asString()));
    }

    static List<String> trail(JsonNode attempts) {
        List<String> out = new ArrayList<>();
        for (JsonNode a : attempts) {
            out.add(a.path("route").asText() + ":" + a.path("outcome").asText()
                    + (a.path("error").isNull() || a.path("error").isMissingNode() ? ""
                    : ":" + a.path("error").asText()));
        }
        return out;
    }

    static long received(String model) {
        return gw.sim("sim").stats(model).received();
    }

    @Test
    void aStatusInTheFailoverCriteriaFailsOver() {
        gw.sim("sim").enqueue("m-c5-a", Fault.status(500));
        Response r = send("c500");
        assertEquals(200, r.statusCode());
        assertEquals("c5-b", r.header("x-hedgerow-route"));
        assertEquals(List.of("c5-a:failed:http_500", "c5-b:success"), trail(r));
    }

    @Test
    void aStatusOutsideTheFailoverCriteriaReachesTheClientAfterOneAttempt() {
        gw.sim("sim").enqueue("m-c3-a", Fault.status(503));
        long spare = received("m-c3-b");
        Response r = send("c503");
        assertEquals(503, r.statusCode());
        assertEquals(spare, received("m-c3-b"));
    }

    /**
     * Any 5xx fails over under the default criteria ({@code http_5xx}, Trifrost's "5xx sits out"): Cloudflare's 520
     * in front of a provider, a 501 from its server, as a 500 does.
     */
    @Test
    void anyServerErrorFailsOverUnderTheDefaultCriteria() {
        // one group each: the first route's breaker is open after its failure
        for (String[] c : new String[][] {{"cf", "520"}, {"cg", "501"}}) {
            gw.sim("sim").enqueue("m-" + c[0] + "-a", Fault.status(Integer.parseInt(c[1])));
            Response r = send(c[0]);
            assertEquals(200, r.statusCode(), r.asString());
            assertEquals(List.of(c[0] + "-a:failed:http_" + c[1], c[0] + "-b:success"), trail(r));
        }
    }

    /**
     * A Kong group's list decides: a 520 it does not list reaches the client after one attempt, as Kong passes an
     * unlisted status on; one listing {@code http_520} fails over.
     */
    @Test
    void a520FailsOverInAKongGroupOnlyWhenListed() {
        gw.sim("sim").enqueue("m-kc-a", Fault.status(520));
        long spare = received("m-kc-b");
        Response unlisted = send("kongcf");
        assertEquals(520, unlisted.statusCode(), unlisted.asString());
        assertEquals(spare, received("m-kc-b"));

        gw.sim("sim").enqueue("m-kl-a", Fault.status(520));
        Response listed = send("kongcflisted");
        assertEquals(200, listed.statusCode(), listed.asString());
        assertEquals(List.of("kl-a:failed:http_520", "kl-b:success"), trail(listed));
    }

    @Test
    void http403FailsOverOnlyWhenListed() {
        gw.sim("sim").enqueue("m-c4-a", Fault.status(403));
        Response listed = send("c403");
        assertEquals(200, listed.statusCode());
        assertEquals("c4-b", listed.header("x-hedgerow-route"));

        gw.sim("sim").enqueue("m-d4-a", Fault.status(403));
        Response unlisted = send("d403");
        assertEquals(403, unlisted.statusCode());
    }

    @Test
    void withoutNonIdempotentAFailureBeforeTheRequestWasSentIsRetried() {
        // ni-dead refuses the connection: nothing was sent, so the POST may go to the next target
        Response r = send("kongpost");
        assertEquals(200, r.statusCode());
        assertEquals("ni-a", r.header("x-hedgerow-route"));
        assertEquals("ni-dead:failed:transport_connect", trail(r).get(0));
    }

    /**
     * Kong's own example lists statuses without {@code non_idempotent}: a listed status fails over although the
     * request was sent (nginx would not retry that POST; a chat completion is safe to retry before any content).
     */
    @Test
    void aKongStyleListWithoutNonIdempotentFailsOverOnAListedStatus() {
        gw.sim("sim").enqueue("m-np-a", Fault.status(500));
        Response r = send("kongpost2");
        assertEquals(200, r.statusCode());
        assertEquals(List.of("np-a:failed:http_500", "np-b:success"), trail(r));
    }

    /** Kong's default list: an error while the answer's head is read is an {@code error}, and fails over. */
    @Test
    void aConnectionResetAfterTheRequestWasSentFailsOverUnderErrorAndTimeout() {
        gw.sim("sim").enqueue("m-kr-a", Fault.reset());
        Response r = send("kongreset");
        assertEquals(200, r.statusCode());
        assertEquals(List.of("kr-a:failed:transport_reset", "kr-b:success"), trail(r));
    }

    /** A 200 that is not a chat completion fails over only under {@code invalid_header}, as nginx's criterion. */
    @Test
    void aNonCompletion200FailsOverOnlyUnderInvalidHeader() {
        gw.sim("sim").enqueue("m-kb-a", new Fault.Html200(0));
        long spare = received("m-kb-b");
        Response unlisted = send("konghtml");
        assertEquals(502, unlisted.statusCode(), unlisted.asString());
        assertEquals(List.of("kb-a:failed:malformed_body"), trail(unlisted));
        // one route tried of two: the message says what happened, not that every provider was tried
        assertTrue(unlisted.jsonPath().getString("error.message").startsWith(
                "No provider of 'konghtml' could serve this request (1 attempt failed;"), unlisted.asString());
        assertEquals(spare, received("m-kb-b"));

        gw.sim("sim").enqueue("m-ki-a", new Fault.Html200(0));
        Response listed = send("konginvalid");
        assertEquals(200, listed.statusCode());
        assertEquals(List.of("ki-a:failed:malformed_body", "ki-b:success"), trail(listed));
    }

    @Test
    void retriesBoundTheAttempts() {
        gw.sim("sim").enqueue("m-rt-a", Fault.status(500));
        gw.sim("sim").enqueue("m-rt-b", Fault.status(500));
        long third = received("m-rt-c");
        Response r = send("twice");
        assertEquals(502, r.statusCode());
        assertEquals(2, trail(r).size(), trail(r).toString());
        assertEquals(third, received("m-rt-c"), "retries: 1 allows two attempts, never a third");
    }

    @Test
    void retriesRetryTheOnlyRouteWhileItsBreakerIsClosed() {
        gw.sim("sim").enqueue("m-lone", Fault.status(500));
        gw.sim("sim").enqueue("m-lone", Fault.status(500));
        Response r = send("lone");
        assertEquals(200, r.statusCode(), r.asString());
        assertEquals(List.of("lone:failed:http_500", "lone:failed:http_500", "lone:success"), trail(r));
    }

    @Test
    void retriesOnTheSameRouteStopWhereItsBreakerOpens() {
        for (int i = 0; i < 4; i++) {
            gw.sim("sim").enqueue("m-lone2", Fault.status(500));
        }
        Response r = send("lone2");
        assertEquals(502, r.statusCode(), r.asString());
        // retries: 3 would allow four attempts, but the second failure reaches max_fails 2
        assertEquals(List.of("lone2:failed:http_500", "lone2:failed:http_500"), trail(r));
    }

    @Test
    void readTimeoutFailsOverWhenNoResponseHeadArrives() {
        gw.sim("sim").enqueue("m-rd-a", Fault.noResponse());
        Response r = stream("readto");
        assertEquals(200, r.statusCode());
        assertEquals(List.of("rd-a:failed:timeout_read", "rd-b:success"), streamTrail(r));
    }

    @Test
    void aTimeoutTheCriteriaDoNotNameIsA504WithoutFailover() {
        gw.sim("sim").enqueue("m-rn-a", Fault.noResponse());
        long other = received("m-rn-b");
        Response r = stream("readnot");
        assertEquals(504, r.statusCode(), r.asString());
        assertEquals("upstream_timeout", r.jsonPath().getString("error.code"));
        assertEquals("server_error", r.jsonPath().getString("error.type"));
        assertTrue(r.jsonPath().getString("error.message").contains("failover_criteria do not include timeout"),
                r.asString());
        assertEquals(List.of("rn-a:failed:timeout_read"), trail(r));
        assertEquals(other, received("m-rn-b"), "no failover on a timeout the criteria leave out");
    }

    @Test
    void priorityRetriesTheOnlyTopTierTargetWhileItsBreakerIsClosed() {
        gw.sim("sim").enqueue("m-top", Fault.status(500));
        long low = received("m-low");
        Response r = send("tiers");
        assertEquals(200, r.statusCode());
        assertEquals(List.of("top:failed:http_500", "top:success"), trail(r));
        assertEquals(low, received("m-low"), "the lower tier is no fallback while the top tier is available");
    }

    @Test
    void priorityFallsBackATierOnceTheTopTiersBreakerOpens() {
        gw.sim("sim").enqueue("m-top1", Fault.status(500));
        Response r = send("tiers1");
        assertEquals(200, r.statusCode());
        assertEquals(List.of("top1:failed:http_500", "low1:success"), trail(r));
    }

    @Test
    void priorityWaitsForAShortRetryAfterOnTheTopTier() {
        gw.sim("sim").enqueue("m-topw", Fault.rateLimited(1));
        long low = received("m-loww");
        Response r = send("tiersw");
        assertEquals(200, r.statusCode());
        assertEquals(List.of("topw:failed:http_429", "topw:success"), trail(r));
        assertEquals(low, received("m-loww"));
        // the retry was scheduled after the Retry-After (a lower bound the scheduler guarantees, not a speed check)
        try {
            JsonNode second = Json.parse(r.header("x-hedgerow-attempts").getBytes()).get(1);
            assertTrue(second.path("start_ms").asLong() >= 1000, second.toString());
        } catch (IOException e) {
            throw new AssertionError(e);
        }
    }

    @Test
    void priorityFailsOverOnALongRetryAfter() {
        // 5 s is above max_retry_after_wait (3 s): the top tier is unavailable for now
        gw.sim("sim").enqueue("m-topl", Fault.rateLimited(5));
        Response r = send("tiersl");
        assertEquals(200, r.statusCode());
        assertEquals(List.of("topl:failed:http_429", "lowl:success"), trail(r));
    }

    /**
     * retry-after-ms (300) beside a Retry-After over max_retry_after_wait (5 s): the exact wait is the provider's, so
     * the top tier is waited for, 300 ms and not a whole second (it failed over to the low tier on the 5 s).
     */
    @Test
    void priorityWaitsForAShortRetryAfterMsEvenBesideALongRetryAfter() {
        gw.sim("sim").enqueue("m-topm", Fault.rateLimitedMillis(300, 5));
        Response r = send("tiersm");
        assertEquals(200, r.statusCode());
        assertEquals(List.of("topm:failed:http_429", "topm:success"), trail(r));
        assertEquals(0, received("m-lowm"));
        // scheduled after the 300 ms (a lower bound the scheduler guarantees, not a speed check)
        try {
            JsonNode second = Json.parse(r.header("x-hedgerow-attempts").getBytes()).get(1);
            assertTrue(second.path("start_ms").asLong() >= 300, second.toString());
        } catch (IOException e) {
            throw new AssertionError(e);
        }
    }

    /**
     * A 429 outside the failover criteria reaches the client as the provider sent it, with every retry header the
     * OpenAI SDKs read: Retry-After, retry-after-ms (which they prefer) and x-should-retry.
     */
    @Test
    void aPassedThrough429CarriesTheProvidersRetryHeaders() {
        gw.sim("sim").enqueue("m-pt-a", Fault.rateLimitedWith(Map.of("Retry-After", "7", "retry-after-ms", "6500",
                "x-should-retry", "true")));
        Response r = send("passed");
        assertEquals(429, r.statusCode(), r.asString());
        assertEquals("rate_limit_exceeded", r.jsonPath().getString("error.code"));
        assertEquals("7", r.header("retry-after"), r.headers().toString());
        assertEquals("6500", r.header("retry-after-ms"), r.headers().toString());
        assertEquals("true", r.header("x-should-retry"), r.headers().toString());
        // passed through, yet counted against the route, with the provider's hold (README: a 429 counts whatever the
        // failover criteria list; untested, found by hunt25's mutation testing)
        dev.hedgerow.state.RouteSnapshot s = gw.core().store().snapshot(java.util.List.of("acme/pt-a"),
                java.time.Duration.ofMinutes(1)).await().indefinitely().get("acme/pt-a");
        assertTrue(s.fails() >= 1, s.toString());
        assertTrue(s.retryAfterMillis() > 5000, "the provider's 7 s hold: " + s);
    }
}
