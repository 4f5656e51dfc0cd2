package dev.hedgerow.function.gateway;

import dev.hedgerow.routing.Router;
import dev.hedgerow.sim.Fault;
import dev.hedgerow.sim.SimServer;
import dev.hedgerow.state.BreakerState;
import dev.hedgerow.state.ForwardingStateStore;
import dev.hedgerow.state.MemoryStateStore;
import dev.hedgerow.state.StateStore;
import dev.hedgerow.testsupport.GatewayHarness;
import dev.hedgerow.time.FakeTicker;
import io.restassured.response.Response;
import io.smallrye.mutiny.Uni;
import io.vertx.core.Vertx;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

import java.time.Duration;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.atomic.AtomicInteger;

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
                  - { alias: held, provider: openrouter, model: kimi-k2 }
                  - { alias: held, provider: digitalocean, model: kimi-k2 }
                  - { alias: long, provider: openrouter, model: kimi-k2 }
                  - { alias: long, provider: digitalocean, model: kimi-k2 }
                  - { alias: mixed, provider: openrouter, model: kimi-k2 }
                  - { alias: mixed, provider: digitalocean, model: kimi-k2 }
                  - { alias: ops, provider: openrouter, model: kimi-k2, tags: ["hedgerow:drained"] }
                  - { alias: ops, provider: digitalocean, model: kimi-k2 }
                  - { alias: pin, provider: openrouter, model: kimi-k2, tags: ["hedgerow:pinned"] }
                  - { alias: pin, provider: digitalocean, model: kimi-k2 }
                  - { alias: stand, provider: openrouter, model: kimi-k2 }
                  - { alias: stand, provider: digitalocean, model: kimi-k2 }
            """, """
                  lone: { strategy: rr_health, hedging: false }
                  held: { strategy: rr_health, hedging: false, breaker: { max_fails: 3, fail_timeout: 10s } }
                  long: { strategy: rr_health, hedging: false, breaker: { max_fails: 1, fail_timeout: 10s } }
                  mixed: { strategy: rr_health, hedging: false }
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

    /** Both members of the alias answer its next request 429 with their own Retry-After of {@code seconds}. */
    private Response bothRateLimited(String alias, int seconds) {
        gw.sim("openrouter").enqueue("kimi-k2", Fault.rateLimited(seconds));
        gw.sim("digitalocean").enqueue("kimi-k2", Fault.rateLimited(seconds));
        Response r = chat(gw, alias, "rate limited");
        GroupKit.PROVIDERS.forEach(p -> gw.sim(p).clearFaults());
        return r;
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

    /**
     * The known bug: each member answered 429 with Retry-After 20, which opened no breaker (max_fails 3), and the
     * request was told to retry after 1 s, only to meet the router's 503 naming the 20 s hold. It is told 20 s.
     */
    @Test
    void anExhaustionAfter429sWaitsForTheEarliestHoldItLearnt() {
        Response r = bothRateLimited("held", 20);
        assertEquals(503, r.statusCode(), r.asString());
        assertWait(r, "20", "20000");
        assertTrue(r.jsonPath().getString("error.message").endsWith("Retry after 20 s."), r.asString());

        time.advance(Duration.ofSeconds(1));
        Response router = chat(gw, "held", "held still");
        assertEquals(503, router.statusCode(), router.asString());
        assertWait(router, "19", "19000");

        time.advance(Duration.ofSeconds(19));
        assertEquals(200, chat(gw, "held", "back").statusCode(), "the wait it named was enough");
    }

    /**
     * The store applies the request's first failure write only 200 ms after the failure, when its second failure comes
     * (a slow or queued Redis write), so that route's hold runs 200 ms longer than the request reckoned from the 429.
     * The exhausted request is told the hold as the store reported it (3000 ms from the answer), the wait the router
     * then names: it was told 2800 ms, reckoned from the failure, and a client retrying when told met the router's 503
     * for the rest.
     */
    @Test
    void anExhaustionWaitsForTheHoldAsTheStoreAppliedIt() {
        FakeTicker late = new FakeTicker();
        StateStore lateFirst = new ForwardingStateStore(new MemoryStateStore(late)) {
            private final AtomicInteger calls = new AtomicInteger();
            private final CompletableFuture<Void> secondCame = new CompletableFuture<>();

            @Override
            public Uni<BreakerState> recordFailure(String routeId, int maxFails, Duration failTimeout, Duration hold) {
                return Uni.createFrom().deferred(() -> {
                    int n = calls.incrementAndGet();
                    if (n == 1) {
                        return Uni.createFrom().completionStage(secondCame)
                                .chain(() -> inner.recordFailure(routeId, maxFails, failTimeout, hold));
                    }
                    if (n == 2) {
                        late.advance(Duration.ofMillis(200));
                        secondCame.complete(null); // the first write is applied now, 200 ms after its failure
                    }
                    return inner.recordFailure(routeId, maxFails, failTimeout, hold);
                });
            }
        };
        try (GatewayHarness g = GatewayHarness.start(vertx, YAML, sims, lateFirst, late)) {
            g.sim("openrouter").enqueue("kimi-k2", Fault.rateLimited(3));
            g.sim("digitalocean").enqueue("kimi-k2", Fault.rateLimited(3));
            Response out = chat(g, "held", "rate limited, stored late");
            assertEquals(503, out.statusCode(), out.asString());
            assertWait(out, "3", "3000");

            Response router = chat(g, "held", "asked again at once");
            assertEquals(503, router.statusCode(), router.asString());
            assertWait(router, "3", "3000");

            late.advance(Duration.ofMillis(3000));
            assertEquals(200, chat(g, "held", "back").statusCode(), "the wait it named was enough");
        } finally {
            GroupKit.PROVIDERS.forEach(p -> gw.sim(p).clearFaults());
        }
    }

    /**
     * Providers that say retry-after-ms (1500) beside a rounded Retry-After (2): the exhausted request is told the
     * exact wait they asked for, which serves it (it said 2000, having read the whole seconds only).
     */
    @Test
    void anExhaustionAfter429sWithRetryAfterMsWaitsTheirMilliseconds() {
        gw.sim("openrouter").enqueue("kimi-k2", Fault.rateLimitedMillis(1500, 2));
        gw.sim("digitalocean").enqueue("kimi-k2", Fault.rateLimitedMillis(1500, 2));
        Response r = chat(gw, "held", "rate limited in ms");
        assertEquals(503, r.statusCode(), r.asString());
        assertWait(r, "2", "1500");

        time.advance(Duration.ofMillis(1500));
        assertEquals(200, chat(gw, "held", "back").statusCode(), "the wait it named was enough");
    }

    /**
     * A wait past a minute (a provider's 429 hold of 10 minutes) is named, and the SDKs are told not to retry by
     * themselves: the Python SDK would retry on its own short backoff into the same refusal, the Node SDK would sleep
     * the ten minutes with the caller's request hanging. At a minute or less they keep their own rule.
     */
    @Test
    void aWaitPastAMinuteIsNamedAndNotRetriedByTheSdks() {
        Response r = bothRateLimited("held", 600);
        assertEquals(503, r.statusCode(), r.asString());
        assertEquals("600", r.header("retry-after"), r.headers().toString());
        assertEquals("600000", r.header("retry-after-ms"), r.headers().toString());
        assertEquals("false", r.header("x-should-retry"), r.headers().toString());

        time.advance(Duration.ofSeconds(540));
        Response router = chat(gw, "held", "a minute left");
        assertEquals(503, router.statusCode(), router.asString());
        assertWait(router, "60", "60000");
    }

    /**
     * A hold longer than the cooldown the same failure opened (Retry-After 20 s, fail_timeout 10 s): the route serves
     * again when both have ended, and the exhaustion and the router both say so (they said 10 s and then 9 s).
     */
    @Test
    void aRouteBothCoolingAndHeldIsBackWhenTheLaterEnds() {
        Response r = bothRateLimited("long", 20);
        assertEquals(503, r.statusCode(), r.asString());
        assertWait(r, "20", "20000");

        time.advance(Duration.ofSeconds(1));
        Response router = chat(gw, "long", "cooling and held");
        assertEquals(503, router.statusCode(), router.asString());
        assertWait(router, "19", "19000");
    }

    /**
     * A member the plan left out while cooling comes back before the hold the request then learnt on the other: the
     * wait is until the first of them (5 s), and that member serves the retry.
     */
    @Test
    void anExhaustionWaitsForAMemberThePlanHeldOutWhenItReturnsFirst() {
        GroupKit.failOnce(gw, "mixed", "openrouter", "kimi-k2");
        time.advance(Duration.ofSeconds(25));
        gw.sim("digitalocean").enqueue("kimi-k2", Fault.rateLimited(20));
        Response r = chat(gw, "mixed", "who is back first?");
        gw.sim("digitalocean").clearFaults();
        assertEquals(503, r.statusCode(), r.asString());
        assertWait(r, "5", "5000");

        time.advance(Duration.ofSeconds(5));
        Response retried = chat(gw, "mixed", "back");
        assertEquals(200, retried.statusCode(), retried.asString());
        assertEquals("mixed-openrouter", GroupKit.route(retried));
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
