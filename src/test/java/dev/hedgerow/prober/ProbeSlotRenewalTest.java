package dev.hedgerow.prober;

import dev.hedgerow.function.prober.VertxMetricsSource;
import dev.hedgerow.runtime.Hedgerow;
import dev.hedgerow.sim.Fault;
import dev.hedgerow.sim.ModelScript;
import dev.hedgerow.sim.SimConfig;
import dev.hedgerow.sim.SimServer;
import dev.hedgerow.state.MemoryStateStore;
import dev.hedgerow.testsupport.GatewayHarness;
import dev.hedgerow.time.FakeScheduler;
import dev.hedgerow.time.FakeTicker;
import io.vertx.core.Vertx;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

import java.time.Duration;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;

import static dev.hedgerow.testsupport.Eventually.eventually;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * The prober's half-open probe keeps the route's one probe slot while it runs, however long: the slot is taken for
 * the probe timeout plus 5 s and renewed every half of that, as a live probe's is. A probe adapting its body to
 * refused parameters is several calls of up to one timeout each, and outlived its slot, so a live request or another
 * instance probed the same half-open route beside it (hunt19). The state store and the prober's timers run on one
 * fake clock, so the slot's TTL passes while the simulator holds the probe at a gate.
 */
class ProbeSlotRenewalTest {
    static final String YAML = """
            orgs:
              - id: acme
                keys: [{ name: app, key: "k-acme" }]
                providers:
                  - { id: alpha, base_url: "${SIM_ALPHA_URL}", api_key: "sk-alpha" }
                routes:
                  - { alias: chat, provider: alpha, model: m }
                groups:
                  chat: { strategy: rr_health, breaker: { max_fails: 1, fail_timeout: 30s } }
            """;
    static final String ROUTE = "acme/chat-alpha";
    static final Duration TIMEOUT = Duration.ofSeconds(60);
    /** The slot's TTL: the probe timeout plus 5 s. */
    static final Duration TTL = TIMEOUT.plusSeconds(5);

    Vertx vertx;
    Map<String, SimServer> sims;
    FakeTicker ticker;
    FakeScheduler scheduler;
    GatewayHarness gw;
    VertxMetricsSource metrics;

    @BeforeEach
    void start() {
        vertx = Vertx.vertx();
        sims = GatewayHarness.startSims(vertx, Map.of("alpha", SimConfig.of(3).withApiKey("sk-alpha")
                .withModel("m", ModelScript.defaults().withLength(8).withLatency(ModelScript.Latency.of(5, 400)))));
        ticker = new FakeTicker();
        scheduler = new FakeScheduler(ticker);
        gw = GatewayHarness.start(vertx, YAML, sims, new MemoryStateStore(ticker));
        metrics = new VertxMetricsSource(vertx);
    }

    @AfterEach
    void stop() {
        sims.get("alpha").openGate("held");
        gw.close();
        metrics.close();
        sims.values().forEach(SimServer::close);
        vertx.close().toCompletionStage().toCompletableFuture().join();
    }

    private boolean anotherProbeGetsTheSlot() {
        return gw.core().store().tryAcquireProbe(ROUTE, 1, Duration.ofSeconds(30), "another")
                .await().atMost(Duration.ofSeconds(5));
    }

    @Test
    void aHalfOpenProbeStillRunningPastItsSlotsTtlKeepsTheSlot() throws Exception {
        Hedgerow core = gw.core();
        core.store().recordFailure(ROUTE, 1, Duration.ofSeconds(30)).await().indefinitely();
        ticker.advance(Duration.ofSeconds(31)); // the cooldown is over: half-open
        sims.get("alpha").enqueue("m", new Fault.Gate(0, "held", -1));
        Prober prober = new Prober(new Prober.Deps(core.store(), () -> core.catalog().current(), core.models(),
                core.upstream(), metrics, scheduler, ticker, core.clock(), core.tokens()::countInput, "test"),
                ProberConfig.defaults().withProbeTimeout(TIMEOUT).withMinInterval(Duration.ZERO));
        CompletableFuture<RoundReport> round = prober.runRound().subscribeAsCompletionStage();
        eventually(() -> sims.get("alpha").gate("held").waiting() == 1, "the half-open probe is upstream");

        // half the TTL: the renewal runs (not the probe's timeout); then past the slot's first TTL
        scheduler.advance(TTL.dividedBy(2).plusSeconds(1));
        ticker.advance(TTL.dividedBy(2));
        assertFalse(round.isDone(), "precondition: the probe still runs");
        assertFalse(anotherProbeGetsTheSlot(), "the running probe keeps the route's one slot past its first TTL");

        sims.get("alpha").openGate("held");
        RoundReport r = round.get(20, TimeUnit.SECONDS);
        assertEquals("half_open_probe", r.routes().get(0).action(), r.toString());
        assertTrue(core.store().snapshot(java.util.List.of(ROUTE), Duration.ofMinutes(1)).await().indefinitely()
                .get(ROUTE).fails() == 0, "its verdict closed the breaker: " + r);
        assertEquals(0, scheduler.pending(), "no renewal (nor timeout) is left scheduled once the probe ended");
    }
}
