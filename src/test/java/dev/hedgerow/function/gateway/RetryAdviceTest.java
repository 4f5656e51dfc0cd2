package dev.hedgerow.function.gateway;

import dev.hedgerow.routing.Router;
import dev.hedgerow.sim.Fault;
import dev.hedgerow.sim.SimServer;
import dev.hedgerow.state.MemoryStateStore;
import dev.hedgerow.testsupport.GatewayHarness;
import dev.hedgerow.time.FakeTicker;
import io.restassured.response.Response;
import io.vertx.core.Vertx;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

import java.time.Duration;
import java.util.Map;

import static dev.hedgerow.function.gateway.GroupKit.chat;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * What the gateway's own refusals tell a client about retrying, in the headers the official OpenAI SDKs read:
 * {@code retry-after-ms} beside {@code Retry-After} (whole seconds, rounded up) with the wait the gateway knows, and
 * {@code x-should-retry: false} where only an operator can bring a route back. The store and the core share one fake
 * ticker that stands still while a request runs, so every wait is exact.
 */
class RetryAdviceTest {
    static final String DO_ONLY = "{\"only\":[\"digitalocean\"]}";
    static final String YAML = GroupKit.yaml("""
                  - { alias: lone, provider: openrouter, model: kimi-k2 }
                  - { alias: ops, provider: openrouter, model: kimi-k2, tags: ["hedgerow:drained"] }
                  - { alias: ops, provider: digitalocean, model: kimi-k2 }
                  - { alias: pin, provider: openrouter, model: kimi-k2, tags: ["hedgerow:pinned"] }
                  - { alias: pin, provider: digitalocean, model: kimi-k2 }
                  - { alias: stand, provider: openrouter, model: kimi-k2 }
                  - { alias: stand, provider: digitalocean, model: kimi-k2 }
            """, """
                  lone: { strategy: rr_health, hedging: false }
                  ops: { strategy: rr_health, hedging: false }
                  pin: { strategy: rr_health, hedging: false }
                  stand: { strategy: rr_health, hedging: false }
            """);

    Vertx vertx;
    Map<String, SimServer> sims;
    FakeTicker time;
    MemoryStateStore store;
    GatewayHarness gw;

    @BeforeEach
    void start() {
        vertx = Vertx.vertx();
        sims = GatewayHarness.startSims(vertx, GroupKit.sims(GroupKit.quick(4), "kimi-k2"));
        time = new FakeTicker();
        store = new MemoryStateStore(time);
        gw = GatewayHarness.start(vertx, YAML, sims, store, time);
    }

    @AfterEach
    void stop() {
        gw.close();
        sims.values().forEach(SimServer::close);
        vertx.close().toCompletionStage().toCompletableFuture().join();
    }

    private static void assertWait(Response r, String seconds, String millis) {
        assertEquals(seconds, r.header("retry-after"), r.headers().toString());
        assertEquals(millis, r.header("retry-after-ms"), r.headers().toString());
        assertNull(r.header("x-should-retry"), "the SDKs' own rule retries it: " + r.headers());
    }

    private static void assertNoRetry(Response r) {
        assertEquals(503, r.statusCode(), r.asString());
        assertEquals("no_healthy_provider", r.jsonPath().getString("error.code"));
        assertEquals("false", r.header("x-should-retry"), r.headers().toString());
        assertNull(r.header("retry-after"), r.headers().toString());
        assertNull(r.header("retry-after-ms"), r.headers().toString());
    }

    @Test
    void aCooldownWith400MillisecondsLeftSaysRetryAfterMs400AndRetryAfter1() {
        gw.sim("openrouter").enqueue("kimi-k2", Fault.status(500));
        Response exhausted = chat(gw, "lone", "fails");
        assertEquals(502, exhausted.statusCode(), exhausted.asString());
        // its one failure opened the breaker: the route is back after fail_timeout (30 s), not a millisecond sooner
        assertWait(exhausted, "30", "30000");

        time.advance(Duration.ofMillis(29_600));
        Response r = chat(gw, "lone", "still cooling");
        assertEquals(503, r.statusCode(), r.asString());
        assertEquals("no_healthy_provider", r.jsonPath().getString("error.code"));
        assertWait(r, "1", "400");
        assertTrue(r.jsonPath().getString("error.message").endsWith("retry after 1 s."), r.asString());
    }

    @Test
    void aRequestOnlyADrainedMemberCouldServeIsToldNotToRetry() {
        Response r = chat(gw, "ops", "drained", false, "{\"only\":[\"openrouter\"]}");
        assertNoRetry(r);
        assertEquals(200, chat(gw, "ops", "the other serves").statusCode());
    }

    @Test
    void aRequestOnlyAMemberPinnedOutCouldServeIsToldNotToRetry() {
        assertNoRetry(chat(gw, "pin", "pinned out", false, DO_ONLY));
    }

    @Test
    void aRequestOnlyMembersOutOfStandingCouldServeIsToldNotToRetry() {
        blob("stand-openrouter", Router.STANDING, "suspended");
        blob("stand-digitalocean", Router.VERIFICATION, "fail:wrong answer");
        assertNoRetry(chat(gw, "stand", "nobody in standing"));
    }

    /** One member out of standing and one cooling: the cooling one's time is known, so the SDKs' retry is right. */
    @Test
    void aMemberOutOfStandingBesideACoolingOneLeavesTheRetryToTheCooldown() {
        blob("stand-openrouter", Router.STANDING, "suspended");
        GroupKit.failOnce(gw, "stand", "digitalocean", "kimi-k2");
        time.advance(Duration.ofMillis(12_345));
        Response r = chat(gw, "stand", "one suspended, one cooling");
        assertEquals(503, r.statusCode(), r.asString());
        assertWait(r, "18", "17655");
    }

    private void blob(String route, String name, String value) {
        store.putRouteBlob("acme/" + route, name, value, null).await().atMost(Duration.ofSeconds(5));
    }
}
