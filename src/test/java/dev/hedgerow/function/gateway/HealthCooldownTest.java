package dev.hedgerow.function.gateway;

import dev.hedgerow.sim.Fault;
import dev.hedgerow.sim.ModelScript;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.hedgerow.state.ForwardingStateStore;
import dev.hedgerow.state.LedgerEntry;
import dev.hedgerow.state.MemoryStateStore;
import dev.hedgerow.state.StateStore;
import dev.hedgerow.testsupport.GatewayHarness;
import dev.hedgerow.time.FakeTicker;
import io.restassured.response.Response;
import io.smallrye.mutiny.Uni;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

import java.io.InputStream;
import java.net.Socket;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.TimeUnit;

import static dev.hedgerow.function.gateway.GroupKit.PROVIDERS;
import static dev.hedgerow.function.gateway.GroupKit.await;
import static dev.hedgerow.function.gateway.GroupKit.chat;
import static dev.hedgerow.testsupport.Eventually.eventually;
import static dev.hedgerow.function.gateway.GroupKit.health;
import static dev.hedgerow.function.gateway.GroupKit.key;
import static dev.hedgerow.function.gateway.GroupKit.received;
import static dev.hedgerow.function.gateway.GroupKit.route;
import static dev.hedgerow.function.gateway.GroupKit.trailRoutes;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Route health end to end, with the store's clock in the test's hand (a {@link FakeTicker} behind the memory
 * store's TTLs): the 30 s cooldown, the single half-open probe, a failed probe's new cooldown, the 503
 * no_healthy_provider with the exact Retry-After, and a client hang-up that is logged as 499 and cools nothing.
 */
class HealthCooldownTest {
    static final String DO_FIRST = "{\"order\":[\"digitalocean\"]}";
    static final ObjectMapper M = new ObjectMapper();
    static final String YAML = GroupKit.yaml("""
                  - { alias: kimi3, provider: openrouter, model: kimi-k2 }
                  - { alias: kimi3, provider: digitalocean, model: kimi-k2 }
                  - { alias: kimi3, provider: fireworks, model: kimi-k2 }
                  - { alias: kimi3, provider: together, model: kimi-k2 }
                  - { alias: pair, provider: openrouter, model: kimi-k2 }
                  - { alias: pair, provider: fireworks, model: kimi-k2 }
                  - { alias: hang, provider: digitalocean, model: kimi-k2, context_window: 1000000 }
                  - { alias: hang, provider: openrouter, model: kimi-k2, context_window: 1000000 }
                  - { alias: lone, provider: digitalocean, model: kimi-k2 }
            """, """
                  kimi3: { strategy: rr_health, hedging: false }
                  pair: { strategy: rr_health, hedging: false }
                  hang: { strategy: rr_health, hedging: false, read_timeout: 2s }
                  lone: { strategy: rr_health, hedging: false }
            """);

    FakeTicker time;
    SlotGate gate;
    StateStore store;
    GatewayHarness gw;

    @BeforeEach
    void start() {
        time = new FakeTicker();
        gate = new SlotGate(new MemoryStateStore(time));
        store = gate;
        gw = GatewayHarness.start(YAML, GroupKit.sims(GroupKit.quick(6), "kimi-k2"), store);
        chat(gw, "pair", "warm up");
        PROVIDERS.forEach(p -> gw.sim(p).resetStats());
    }

    @AfterEach
    void stop() {
        gw.close();
    }

    /** Fails kimi3-digitalocean once (a 500 on a request restricted to it). */
    void failDigitalocean() {
        GroupKit.failOnce(gw, "kimi3", "digitalocean", "kimi-k2");
    }

    @Test
    void aFailedMemberSitsOutTheDefault30SecondCooldown() {
        failDigitalocean();
        assertEquals(30_000, await(store.cooldownRemainingMillis(key("kimi3-digitalocean"))));
        time.advance(Duration.ofMillis(29_999));
        gw.sim("digitalocean").resetStats();
        for (int i = 0; i < 4; i++) {
            Response r = chat(gw, "kimi3", "still cooling " + i, false, DO_FIRST);
            assertEquals(200, r.statusCode());
            assertFalse(trailRoutes(GroupKit.trail(r)).contains("kimi3-digitalocean"));
        }
        assertEquals(0, received(gw, "digitalocean", "kimi-k2"));
        time.advance(Duration.ofMillis(1));
        assertEquals("kimi3-digitalocean", route(chat(gw, "kimi3", "cooled", false, DO_FIRST)));
    }

    @Test
    void afterTheCooldownExactlyOneRequestIsTheHalfOpenProbeAndItsSuccessRestoresTheRoute() throws Exception {
        failDigitalocean();
        time.advance(Duration.ofSeconds(30));
        gw.sim("digitalocean").resetStats();
        // the probe's answer waits at a gate the test opens once the next requests were served, so they arrive
        // while it is in flight however slow the machine (the 20 s limit only frees it should the test fail first)
        gw.sim("digitalocean").enqueue("kimi-k2", Fault.gate(0, "half-open probe", 20_000));
        CompletableFuture<HttpResponse<String>> probe = send("probe");
        eventually(() -> received(gw, "digitalocean", "kimi-k2") == 1, "the probe reached the route");
        assertTrue(health(store, "kimi3-digitalocean").probeTaken());
        for (int i = 0; i < 2; i++) {
            Response r = chat(gw, "kimi3", "during the probe " + i, false, DO_FIRST);
            assertEquals(200, r.statusCode());
            assertFalse(trailRoutes(GroupKit.trail(r)).contains("kimi3-digitalocean"), "only one probe");
        }
        assertFalse(probe.isDone(), "precondition: the probe was still in flight");
        gw.sim("digitalocean").openGate("half-open probe");
        HttpResponse<String> p = probe.get(10, TimeUnit.SECONDS);
        assertEquals(200, p.statusCode());
        assertEquals("kimi3-digitalocean", p.headers().firstValue("x-hedgerow-route").orElseThrow());
        assertEquals(1, received(gw, "digitalocean", "kimi-k2"));
        assertEquals(0, health(store, "kimi3-digitalocean").fails(), "back in rotation");
        assertFalse(health(store, "kimi3-digitalocean").probeTaken());
        assertEquals("kimi3-digitalocean", route(chat(gw, "kimi3", "rejoined", false, DO_FIRST)));
    }

    @Test
    void aFailedProbeStartsANewCooldown() {
        failDigitalocean();
        time.advance(Duration.ofSeconds(30));
        assertFalse(health(store, "kimi3-digitalocean").coolingDown());
        gw.sim("digitalocean").enqueue("kimi-k2", Fault.status(503));
        Response r = chat(gw, "kimi3", "probe fails", false, DO_FIRST);
        assertEquals(200, r.statusCode(), "the probe's request fails over");
        assertEquals("kimi3-digitalocean", trailRoutes(GroupKit.trail(r)).get(0));
        assertEquals(30_000, await(store.cooldownRemainingMillis(key("kimi3-digitalocean"))));
        assertFalse(health(store, "kimi3-digitalocean").probeTaken());
    }

    @Test
    void allMembersUnhealthyIs503NoHealthyProviderWithRetryAfterOfTheEarliestCooldown() {
        GroupKit.failOnce(gw, "pair", "openrouter", "kimi-k2");
        time.advance(Duration.ofSeconds(10));
        GroupKit.failOnce(gw, "pair", "fireworks", "kimi-k2");
        long before = GroupKit.blocked(store, "no_healthy_provider");
        Response r = chat(gw, "pair", "anyone?");
        assertEquals(503, r.statusCode());
        assertEquals("no_healthy_provider", r.jsonPath().getString("error.code"));
        assertEquals("20", r.header("retry-after"), "openrouter's cooldown ends first, 20 s from now");
        assertEquals(before + 1, GroupKit.blocked(store, "no_healthy_provider"));
        Map<String, String> e = GroupKit.audit(store, "blocked").get(0);
        assertEquals("no_healthy_provider", e.get("reason"));
        assertEquals("acme", e.get("org"));
        assertEquals("pair", e.get("alias"));
        assertNotNull(e.get("time"));
        time.advance(Duration.ofSeconds(7));
        assertEquals("13", chat(gw, "pair", "still nobody").header("retry-after"));
    }

    @Test
    void aClientHangUpIsLogged499StopsTheChainAndCoolsNothing() throws Exception {
        gw.sim("digitalocean").enqueue("kimi-k2", Fault.noResponse());
        String body = GroupKit.body("hang", "hang up", true, DO_FIRST);
        try (Socket client = GroupKit.sendAndHold(gw, body)) {
            eventually(() -> received(gw, "digitalocean", "kimi-k2") == 1, "the attempt is upstream");
        }
        eventually(() -> GroupKit.audit(store, "request").stream().anyMatch(e -> "499".equals(e.get("status"))),
                "a 499 request event");
        eventually(() -> gw.sim("digitalocean").stats("kimi-k2").cancelled() == 1, "the upstream call is closed");
        Map<String, String> e = GroupKit.audit(store, "request").get(0);
        assertTrue(e.get("attempt_trail").contains("client_cancelled"), e.toString());
        // past the group's 2 s read limit, which would have failed the attempt over had the chain gone on
        Thread.sleep(2500);
        assertEquals(0, received(gw, "openrouter", "kimi-k2"), "no failover after the hang-up");
        assertEquals(0, health(store, "hang-digitalocean").fails());
        assertFalse(health(store, "hang-digitalocean").coolingDown());
        assertEquals(1, GroupKit.audit(store, "request").size());
    }

    @Test
    void aClientHangingUpMidStreamIsLogged499EndsTheUpstreamCallAndCoolsNothing() throws Exception {
        // a long, slow answer: the client hangs up while it streams
        gw.sim("digitalocean").script("kimi-k2", ModelScript.defaults().withLength(400)
                .withLatency(ModelScript.Latency.of(5, 40)));
        String body = GroupKit.body("hang", "hang up mid-stream", true, DO_FIRST);
        try (Socket client = GroupKit.sendAndHold(gw, body)) {
            InputStream in = client.getInputStream();
            StringBuilder seen = new StringBuilder();
            byte[] buf = new byte[8192];
            while (seen.toString().split("\"content\":\"[^\"]", -1).length < 3) {
                int n = in.read(buf);
                assertTrue(n > 0, "the stream ended before the client hung up: " + seen);
                seen.append(new String(buf, 0, n, StandardCharsets.UTF_8));
            }
        }
        eventually(() -> GroupKit.audit(store, "request").stream().anyMatch(e -> "499".equals(e.get("status"))),
                "a 499 request event");
        eventually(() -> gw.sim("digitalocean").stats("kimi-k2").cancelled() == 1, "the upstream call is closed");
        Map<String, String> e = GroupKit.audit(store, "request").get(0);
        assertEquals("hang-digitalocean", e.get("route").replace("acme/", ""), e.toString());
        assertTrue(e.get("attempt_trail").contains("\"outcome\":\"client_cancelled\""), e.toString());
        assertEquals(0, received(gw, "openrouter", "kimi-k2"), "nothing resumed or failed over after the hang-up");
        assertEquals(0, health(store, "hang-digitalocean").fails());
        assertFalse(health(store, "hang-digitalocean").coolingDown());
        assertEquals(1, GroupKit.audit(store, "request").size());
        // the tokens the client received were generated (and charged for): billed once, the prompt with them
        eventually(() -> gw.ledger("acme").containsKey("hang"), "the cut stream is in the ledger");
        LedgerEntry billed = gw.ledger("acme").get("hang");
        assertEquals(1, billed.requests());
        assertTrue(billed.usage().promptTokens() > 0, billed.toString());
        assertTrue(billed.usage().completionTokens() >= 2 && billed.usage().completionTokens() < 400,
                billed.toString());
    }

    /**
     * A prompt over 32 KiB is counted on a worker thread, which for one this long takes a noticeable while: a client
     * that hangs up meanwhile is gone before anything is dispatched, and its request is still logged as 499.
     */
    @Test
    void aClientHangingUpBeforeItsRequestIsDispatchedIsStillLogged499() throws Exception {
        StringBuilder prompt = new StringBuilder();
        for (int i = 0; prompt.length() < 900_000; i++) {
            prompt.append("hedgerow ").append(Integer.toString(i * 7919, 36)).append(' ');
        }
        String body = GroupKit.body("hang", prompt.toString(), true, DO_FIRST);
        GroupKit.sendAndHold(gw, body).close();
        eventually(() -> GroupKit.audit(store, "request").stream().anyMatch(e -> "499".equals(e.get("status"))),
                "a 499 request event");
        Map<String, String> e = GroupKit.audit(store, "request").get(0);
        assertEquals("hang", e.get("alias"));
        assertEquals(0, health(store, "hang-digitalocean").fails());
        assertEquals(1, GroupKit.audit(store, "request").size());
    }

    /**
     * A request may plan with a half-open member whose probe slot another request takes before it asks for it (two
     * instances, or the snapshot cache, make that window real). When that member was all it had, nothing was
     * tried: it is refused as the router refuses an all-unhealthy pool, 503 no_healthy_provider with a Retry-After
     * and exactly one blocked event, not a 502 claiming an upstream failed.
     */
    @Test
    void aRequestWhoseOnlyHalfOpenMemberIsProbedByAnotherIs503NoHealthyProviderWithOneBlockedEvent() throws Exception {
        GroupKit.failOnce(gw, "lone", "digitalocean", "kimi-k2");
        time.advance(Duration.ofSeconds(30));
        gw.sim("digitalocean").resetStats();
        gate.hold = true;
        CompletableFuture<HttpResponse<String>> probe = send("lone", "the probe", null);
        eventually(() -> gate.held() == 1, "the probe asks for the slot");
        CompletableFuture<HttpResponse<String>> late = send("lone", "planned before the slot was taken", null);
        eventually(() -> gate.held() == 2, "the second request asks for the slot too");
        long blocked = GroupKit.blocked(store, "no_healthy_provider");
        long all = GroupKit.audit(store, "blocked").size();
        gate.answer(0);
        gate.answer(1);
        HttpResponse<String> r = late.get(10, TimeUnit.SECONDS);
        assertEquals(503, r.statusCode(), r.body());
        assertEquals("no_healthy_provider", M.readTree(r.body()).path("error").path("code").asText(), r.body());
        assertEquals("1", r.headers().firstValue("retry-after").orElse(null), "the probe is in flight");
        assertEquals(200, probe.get(10, TimeUnit.SECONDS).statusCode());
        assertEquals(1, received(gw, "digitalocean", "kimi-k2"), "one probe, nothing else sent");
        eventually(() -> GroupKit.audit(store, "blocked").size() == all + 1, "the blocked event");
        assertEquals(blocked + 1, GroupKit.blocked(store, "no_healthy_provider"));
        Map<String, String> e = GroupKit.audit(store, "blocked").get(0);
        assertEquals("lone", e.get("alias"));
        assertEquals(r.headers().firstValue("x-hedgerow-request-id").orElseThrow(), e.get("request_id"));
    }

    /**
     * The memory store, with a gate on probe slots: while {@link #hold} is set each acquisition waits until the test
     * answers it ({@link #answer}, in the order the test chooses), the only way to order two requests' acquisitions
     * exactly. Everything else goes straight to the store.
     */
    static final class SlotGate extends ForwardingStateStore {
        volatile boolean hold;
        private final List<Runnable> held = new CopyOnWriteArrayList<>();

        SlotGate(StateStore inner) {
            super(inner);
        }

        @Override
        public Uni<Boolean> tryAcquireProbe(String routeId, int maxFails, Duration ttl, String owner) {
            if (!hold) {
                return inner.tryAcquireProbe(routeId, maxFails, ttl, owner);
            }
            CompletableFuture<Boolean> reply = new CompletableFuture<>();
            held.add(() -> inner.tryAcquireProbe(routeId, maxFails, ttl, owner).subscribe()
                    .with(reply::complete, reply::completeExceptionally));
            return Uni.createFrom().completionStage(reply);
        }

        int held() {
            return held.size();
        }

        void answer(int i) {
            held.get(i).run();
        }
    }

    CompletableFuture<HttpResponse<String>> send(String prompt) {
        return send("kimi3", prompt, DO_FIRST);
    }

    CompletableFuture<HttpResponse<String>> send(String alias, String prompt, String prefs) {
        HttpRequest req = HttpRequest.newBuilder(URI.create(gw.baseUrl() + "/v1/chat/completions"))
                .header("authorization", "Bearer k-acme").header("content-type", "application/json")
                .POST(HttpRequest.BodyPublishers.ofString(GroupKit.body(alias, prompt, false, prefs))).build();
        return HttpClient.newHttpClient().sendAsync(req, HttpResponse.BodyHandlers.ofString());
    }
}
