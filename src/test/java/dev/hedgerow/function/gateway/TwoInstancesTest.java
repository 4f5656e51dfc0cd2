package dev.hedgerow.function.gateway;

import dev.hedgerow.sim.Fault;
import dev.hedgerow.sim.ModelScript;
import dev.hedgerow.state.RouteSnapshot;
import dev.hedgerow.state.StateStore;
import dev.hedgerow.testsupport.GatewayHarness;
import dev.hedgerow.testsupport.GatewayPair;
import io.restassured.response.Response;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;

import static dev.hedgerow.function.gateway.GroupKit.PROVIDERS;
import static dev.hedgerow.function.gateway.GroupKit.chat;
import static dev.hedgerow.testsupport.Eventually.eventually;
import static dev.hedgerow.function.gateway.GroupKit.health;
import static dev.hedgerow.function.gateway.GroupKit.received;
import static dev.hedgerow.function.gateway.GroupKit.route;
import static dev.hedgerow.function.gateway.GroupKit.trailRoutes;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Two gateway instances over one private Redis behave as one router: a failure seen by one cools the route down
 * for the other, a provider's Retry-After hold met by one holds the route for the other, only one half-open probe is
 * sent fleet-wide, and a refusal on one is in the shared audit stream.
 */
class TwoInstancesTest {
    static final String DO_FIRST = "{\"order\":[\"digitalocean\"]}";
    static final String YAML = GroupKit.yaml("""
                  - { alias: kimi3, provider: openrouter, model: kimi-k2 }
                  - { alias: kimi3, provider: digitalocean, model: kimi-k2 }
                  - { alias: kimi3, provider: fireworks, model: kimi-k2 }
                  - { alias: kimi3, provider: together, model: kimi-k2 }
                  - { alias: brief, provider: openrouter, model: kimi-k2 }
                  - { alias: brief, provider: digitalocean, model: kimi-k2 }
                  - { alias: held, provider: openrouter, model: kimi-k2 }
                  - { alias: held, provider: digitalocean, model: kimi-k2 }
            """, """
                  kimi3: { strategy: rr_health, hedging: false, breaker: { max_fails: 1, fail_timeout: 4s } }
                  brief: { strategy: rr_health, hedging: false, breaker: { max_fails: 1, fail_timeout: 1s } }
                  held: { strategy: rr_health, hedging: false, breaker: { max_fails: 5, fail_timeout: 30s } }
            """);
    static final ModelScript QUICK = GroupKit.quick(6);

    static GatewayPair pair;
    static StateStore store1;
    static StateStore store2;
    static GatewayHarness gw1;
    static GatewayHarness gw2;

    @BeforeAll
    static void start() {
        pair = GatewayPair.onPrivateRedis(YAML, GroupKit.sims(QUICK, "kimi-k2"));
        store1 = pair.store1();
        store2 = pair.store2();
        gw1 = pair.gw1();
        gw2 = pair.gw2();
        chat(gw1, "kimi3", "warm up");
        chat(gw2, "kimi3", "warm up");
    }

    @AfterAll
    static void stop() {
        pair.close();
    }

    @BeforeEach
    void reset() {
        GroupKit.reset(gw1);
    }

    @Test
    void aFailureSeenByOneInstanceCoolsTheRouteForTheOther() {
        gw1.sim("digitalocean").enqueue("kimi-k2", Fault.status(503));
        assertEquals(503, chat(gw1, "kimi3", "seen by one", false, "{\"only\":[\"digitalocean\"]}").statusCode());
        eventually(() -> health(store2, "kimi3-digitalocean").coolingDown(), "the other instance sees the cooldown");
        for (int i = 0; i < 3; i++) {
            Response r = chat(gw2, "kimi3", "the other " + i, false, DO_FIRST);
            assertEquals(200, r.statusCode());
            assertFalse(trailRoutes(GroupKit.trail(r)).contains("kimi3-digitalocean"), "cooled on instance 2");
        }
        assertEquals(1, received(gw2, "digitalocean", "kimi-k2"));
        assertTrue(health(store2, "kimi3-digitalocean").coolingDown(), "precondition: still inside the cooldown");
    }

    /**
     * A 429 met by one instance with retry-after-ms 20500 beside Retry-After 30: the hold in Redis is the 20.5 s to the
     * millisecond (a PX TTL, as it always was, so an older instance reads it alike), and the other instance passes the
     * route over. Real Redis time runs, so only an upper bound of what is left is exact.
     */
    @Test
    void aRetryAfterMsHoldMetByOneInstanceHoldsTheRouteForTheOther() {
        String orFirst = "{\"order\":[\"openrouter\"]}";
        gw1.sim("openrouter").enqueue("kimi-k2", Fault.rateLimitedMillis(20_500, 30));
        Response limited = chat(gw1, "held", "limited", false, orFirst);
        assertEquals(200, limited.statusCode(), limited.asString());
        assertEquals(List.of("held-openrouter", "held-digitalocean"), trailRoutes(GroupKit.trail(limited)));
        eventually(() -> health(store2, "held-openrouter").retryAfterMillis() > 0, "the hold is shared");
        long left = health(store2, "held-openrouter").retryAfterMillis();
        assertTrue(left <= 20_500, "retry-after-ms, not Retry-After's 30 s: " + left + " ms left");
        Response other = chat(gw2, "held", "the other", false, orFirst);
        assertEquals("held-digitalocean", route(other));
        assertEquals(1, received(gw2, "openrouter", "kimi-k2"), "held on instance 2");
    }

    @Test
    void onlyOneHalfOpenProbeIsSentAcrossBothInstances() throws Exception {
        GroupKit.failOnce(gw1, "brief", "digitalocean", "kimi-k2");
        eventually(() -> health(store2, "brief-digitalocean").coolingDown(), "the failure is recorded");
        eventually(() -> {
            RouteSnapshot s = health(store2, "brief-digitalocean");
            return !s.coolingDown() && s.fails() == 1;
        }, "the 1 s cooldown ends");
        gw1.sim("digitalocean").resetStats();
        // the probe's answer waits at a gate opened once every other request was served, so they all arrive while it
        // is in flight however slow the machine (the 20 s limit only frees it should the test fail first)
        gw1.sim("digitalocean").enqueue("kimi-k2", Fault.gate(0, "fleet probe", 20_000));
        List<CompletableFuture<HttpResponse<String>>> all = new ArrayList<>();
        for (int i = 0; i < 4; i++) {
            all.add(send(gw1, "probe race a" + i));
            all.add(send(gw2, "probe race b" + i));
        }
        eventually(() -> all.stream().filter(CompletableFuture::isDone).count() == all.size() - 1,
                "every request but the probe is served while the probe waits");
        eventually(() -> gw1.sim("digitalocean").gate("fleet probe").waiting() == 1, "the probe waits at the gate");
        gw1.sim("digitalocean").openGate("fleet probe");
        int servedByProbe = 0;
        for (CompletableFuture<HttpResponse<String>> f : all) {
            HttpResponse<String> r = f.get(20, TimeUnit.SECONDS);
            assertEquals(200, r.statusCode(), r.body());
            if ("brief-digitalocean".equals(r.headers().firstValue("x-hedgerow-route").orElse(""))) {
                servedByProbe++;
            }
        }
        assertEquals(1, received(gw1, "digitalocean", "kimi-k2"), "one probe for the whole fleet");
        assertEquals(1, servedByProbe);
        eventually(() -> health(store1, "brief-digitalocean").fails() == 0, "the probe's success closes the breaker");
        assertEquals("brief-digitalocean", route(chat(gw2, "brief", "back", false, DO_FIRST)));
    }

    @Test
    void aRefusalOnOneInstanceIsOneBlockedEventInTheSharedAuditStream() {
        long before = GroupKit.blocked(store1, "provider_not_in_group");
        assertEquals(400, chat(gw2, "kimi3", "typo", false, "{\"only\":[\"fireworkz\"]}").statusCode());
        eventually(() -> GroupKit.blocked(store1, "provider_not_in_group") == before + 1,
                "the refusal on instance 2 is in the stream instance 1 reads");
    }

    static CompletableFuture<HttpResponse<String>> send(GatewayHarness gw, String prompt) {
        HttpRequest req = HttpRequest.newBuilder(URI.create(gw.baseUrl() + "/v1/chat/completions"))
                .header("authorization", "Bearer k-acme").header("content-type", "application/json")
                .POST(HttpRequest.BodyPublishers.ofString(GroupKit.body("brief", prompt, false, DO_FIRST))).build();
        return HttpClient.newHttpClient().sendAsync(req, HttpResponse.BodyHandlers.ofString());
    }
}
