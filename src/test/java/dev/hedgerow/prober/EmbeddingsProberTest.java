package dev.hedgerow.prober;

import com.fasterxml.jackson.databind.JsonNode;
import dev.hedgerow.api.Json;
import dev.hedgerow.function.prober.VertxMetricsSource;
import dev.hedgerow.routing.CapacityReport;
import dev.hedgerow.routing.LearnedModels;
import dev.hedgerow.routing.Router;
import dev.hedgerow.sim.Fault;
import dev.hedgerow.sim.ModelScript;
import dev.hedgerow.sim.SimConfig;
import dev.hedgerow.sim.SimServer;
import dev.hedgerow.state.MemoryStateStore;
import dev.hedgerow.state.RouteSnapshot;
import dev.hedgerow.testsupport.GatewayHarness;
import dev.hedgerow.time.FakeTicker;
import dev.hedgerow.time.Ticker;
import io.vertx.core.Vertx;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

import java.time.Duration;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Probe rounds over embeddings routes against a real simulator, through the production core: the speed probe is an
 * embeddings request whose latency is learnt as a live embeddings answer's, its failures and holds go to the breaker
 * by the chat probe's rules (half-open recovery included), its answer is the route's known-answer check, and a
 * provider's metrics scrape feeds the route's capacity. The state store runs on a fake ticker so cooldowns end when
 * the test says so. (The same end to end through the real application's HTTP API: {@code EmbeddingsProbeTest}.)
 */
class EmbeddingsProberTest {
    static final String YAML = """
            orgs:
              - id: acme
                keys: [{ name: app, key: "k-acme" }]
                providers:
                  - { id: alpha, base_url: "${SIM_ALPHA_URL}", api_key: "sk-alpha", dialect: vllm,
                      metrics_url: "METRICS_URL" }
                routes:
                  - { alias: vec, provider: alpha, model: embed-a, embeddings: true }
                  - { alias: chat, provider: alpha, model: chat-a }
                groups:
                  vec: { strategy: rr_health, breaker: { max_fails: 1, fail_timeout: 30s } }
            """;

    Vertx vertx;
    Map<String, SimServer> sims;
    FakeTicker ticker;
    GatewayHarness gw;
    VertxMetricsSource metrics;

    @BeforeEach
    void start() {
        vertx = Vertx.vertx();
        ModelScript fast = ModelScript.defaults().withLength(24).withLatency(ModelScript.Latency.of(5, 400));
        Map<String, SimConfig> cfg = new LinkedHashMap<>();
        cfg.put("alpha", SimConfig.of(3).withApiKey("sk-alpha").withModel("embed-a", fast).withModel("chat-a", fast));
        sims = GatewayHarness.startSims(vertx, cfg);
        ticker = new FakeTicker();
        gw = GatewayHarness.start(vertx, YAML.replace("METRICS_URL", sims.get("alpha").rootUrl() + "/metrics"), sims,
                new MemoryStateStore(ticker));
        metrics = new VertxMetricsSource(vertx);
    }

    @AfterEach
    void stop() {
        gw.close();
        metrics.close();
        sims.values().forEach(SimServer::close);
        vertx.close().toCompletionStage().toCompletableFuture().join();
    }

    SimServer alpha() {
        return sims.get("alpha");
    }

    RoundReport round() {
        return round(Duration.ofSeconds(5));
    }

    RoundReport round(Duration timeout) {
        return gw.proberRound(metrics, ProberConfig.defaults().withProbeTimeout(timeout)
                .withMinInterval(Duration.ZERO).withVerifyEvery(Duration.ZERO));
    }

    RouteSnapshot snapshot() {
        String key = "acme/vec-alpha";
        return gw.core().store().snapshot(List.of(key), Duration.ofMinutes(1)).await().atMost(Duration.ofSeconds(5))
                .get(key);
    }

    static RoundReport.RouteResult vec(RoundReport r) {
        return r.routes().stream().filter(x -> x.route().equals("vec-alpha")).findFirst().orElseThrow();
    }

    List<dev.hedgerow.sim.SimStats.RecordedRequest> received() {
        return alpha().stats("embed-a").recent();
    }

    @Test
    void theSpeedProbeIsAnEmbeddingsRequestOfTheStandardSizeWhoseLatencyIsLearntAsLiveTrafficsIs() throws Exception {
        alpha().enqueue("embed-a", Fault.stall(0, 150)); // the whole answer after 150 ms

        RoundReport r = round();

        RoundReport.RouteResult vec = vec(r);
        assertEquals("probe", vec.action());
        assertEquals("ok", vec.outcome());
        assertNull(vec.ttftMs(), "an embeddings answer has no first token");
        assertNull(vec.tokensPerSecond());
        assertTrue(vec.latencyMs() != null && vec.latencyMs() >= 150, vec.toString());
        assertEquals(1, received().size(), "one request: the probe is the known-answer check too");
        dev.hedgerow.sim.SimStats.RecordedRequest sent = received().get(0);
        assertEquals("/v1/embeddings", sent.path());
        JsonNode body = Json.parse(sent.body());
        assertEquals("embed-a", body.path("model").asText());
        assertEquals("float", body.path("encoding_format").asText());
        assertFalse(body.has("messages") || body.has("max_tokens") || body.has("stream"), body.toString());
        var chatSent = alpha().stats("chat-a").recent();
        JsonNode chatProbe = Json.parse(chatSent.get(chatSent.size() - 2).body());   // the speed probe, then the check
        assertTrue(chatProbe.path("stream").asBoolean(), "the chat route's speed probe: " + chatProbe);
        assertEquals(chatProbe.path("messages").path(0).path("content").asText(), body.path("input").asText(),
                "one text of the standard probe size: the chat speed probe's prompt");
        assertTrue(gw.core().tokens().countText(body.path("input").asText()) > 200);
        RouteSnapshot s = snapshot();
        // learnt as a live embeddings answer is: its latency for the size of its input, by every strategy's measure
        double ema = gw.core().models().emaLatency(s);
        assertTrue(ema >= 150, "Trifrost's EMA (least_latency): " + ema);
        double e2e = gw.core().models().peakEwma(s, true);
        assertTrue(e2e >= 150, "Kong's end-to-end peak EWMA (lowest_latency): " + e2e);
        int input = gw.core().tokens().countText(body.path("input").asText());
        dev.hedgerow.routing.TtftEstimate predicted = gw.core().models().ttft(s, new dev.hedgerow.routing.RequestFacts(
                input, null, false, false, java.util.Set.of(), java.util.Set.of(), null, java.util.List.of(),
                java.util.Map.of(), "", input));
        assertTrue(predicted.measured() && predicted.meanMs() >= 150,
                "the auto strategy's prediction for an input of that size: " + predicted);
        assertTrue(s.blob(LearnedModels.DECODE).isEmpty(), "no decode with no tokens out");
        RoundReport.RouteResult chat = r.routes().stream().filter(x -> x.route().equals("chat-alpha")).findFirst()
                .orElseThrow();
        assertEquals("ok", chat.outcome(), "chat routes as before");
        assertTrue(chat.ttftMs() != null && chat.latencyMs() != null, chat.toString());
    }

    @Test
    void aFailingProbeCoolsTheRouteAndItsHalfOpenProbeRecoversIt() {
        alpha().enqueue("embed-a", Fault.status(503));

        RoundReport failed = round();
        assertEquals("failed: http 503", vec(failed).outcome());
        assertNull(vec(failed).verification(), "unreachable is the breaker's business, not verification's");
        assertTrue(snapshot().coolingDown());
        assertFalse(snapshot().probeTaken(), "the probe slot is free");

        alpha().resetStats();
        RoundReport cooling = round();
        assertEquals("skipped", vec(cooling).action());
        assertEquals("cooling down", vec(cooling).outcome());
        assertEquals(0, alpha().stats("embed-a").received());

        ticker.advance(Duration.ofSeconds(31));
        assertEquals(1, snapshot().fails(), "half-open: out of cooldown, still at max_fails");
        RoundReport r = round();
        assertEquals("half_open_probe", vec(r).action());
        assertEquals("ok", vec(r).outcome());
        assertEquals(0, snapshot().fails());
        assertFalse(snapshot().coolingDown());
    }

    @Test
    void aProbeWithNoAnswerWithinItsTimeFailsAndCoolsTheRoute() {
        alpha().enqueue("embed-a", Fault.noResponse());

        RoundReport r = round(Duration.ofMillis(500));

        assertEquals("failed: no answer within 500 ms", vec(r).outcome());
        assertTrue(snapshot().coolingDown(), "a whole answer that has not come is unreachable, not slow");
    }

    @Test
    void aProbeRefusedWithAWaitHoldsTheRouteForIt() {
        alpha().enqueue("embed-a", Fault.rateLimited(3));

        RoundReport r = round();

        assertEquals("failed: http 429, held 3000 ms by its retry headers", vec(r).outcome());
        RouteSnapshot s = snapshot();
        assertEquals(1, s.fails());
        assertEquals(3000, s.retryAfterMillis());
        ticker.advance(Duration.ofSeconds(1));
        alpha().resetStats();
        assertEquals("skipped", vec(round()).action(), "held (and cooling): left alone");
        assertEquals(0, alpha().stats("embed-a").received());
    }

    @Test
    void anHonestAnswerPassesVerificationAndAnotherServedModelFailsIt() {
        RoundReport honest = round();
        assertEquals("pass", vec(honest).verification());
        assertEquals("pass", snapshot().blob(Router.VERIFICATION).orElseThrow());

        alpha().script("embed-a", ModelScript.defaults().withServedAs("embed-cheap"));
        RoundReport lying = round();
        assertEquals("ok", vec(lying).outcome(), "it answered: no breaker failure");
        assertEquals("fail:served model 'embed-cheap' is not 'embed-a'", vec(lying).verification());
        assertEquals("fail:served model 'embed-cheap' is not 'embed-a'",
                snapshot().blob(Router.VERIFICATION).orElseThrow());
        assertEquals(0, snapshot().fails());
    }

    @Test
    void aNotFoundProbeFailsVerificationWithNoSecondRequest() {
        alpha().enqueue("embed-a", Fault.status(404));

        RoundReport r = round();

        assertTrue(vec(r).outcome().startsWith("refused: http 404"), vec(r).outcome());
        assertEquals("fail:http 404", vec(r).verification());
        assertEquals("fail:http 404", snapshot().blob(Router.VERIFICATION).orElseThrow());
        assertEquals(1, alpha().stats("embed-a").received());
    }

    /**
     * A 200 that is no embeddings answer (malformed, or larger than a probe's answer may be) fails the probe, as the
     * gateway fails such an attempt over; one that is an answer is judged by verification only: here a base64 vector
     * (taken, though floats were asked for) from a response that names no model.
     */
    @Test
    void aTwoHundredThatIsNoAnswerFailsTheProbeAndAnAnswerIsJudgedByVerification() {
        alpha().enqueue("embed-a", new Fault.MalformedFrame(0));
        assertEquals("failed: malformed JSON answer", vec(round()).outcome());
        assertEquals(1, snapshot().fails());
        ticker.advance(Duration.ofSeconds(31));   // out of cooldown: the next probe is the half-open one

        alpha().enqueue("embed-a", new Fault.GiantLine(0, 2 * 1024 * 1024));
        assertEquals("failed: response larger than 1048576 bytes", vec(round()).outcome());
        ticker.advance(Duration.ofSeconds(31));   // out of cooldown: the next probe is the half-open one

        alpha().enqueue("embed-a", new Fault.GiantLine(0, 4000));   // 3000 bytes of zeros: 750 float32 values
        RoundReport r = round();
        assertEquals("ok", vec(r).outcome());
        assertEquals("fail:response names no model", vec(r).verification());
        assertEquals(0, snapshot().fails(), "an answer: the half-open probe closed the breaker");
    }

    /** The chat probe's body variants (max_tokens, temperature, stream_options) are no embeddings body's business. */
    @Test
    void aRefusedProbeIsNotAdaptedAsAChatProbesBodyIs() throws Exception {
        alpha().enqueue("embed-a", new Fault.HttpError(400, "invalid_request_error", null,
                "Unsupported parameter: 'max_tokens' is not supported with this model.", null, 0));

        RoundReport r = round();

        assertEquals("refused: http 400 naming max_tokens: the probe's request was refused, not counted against the "
                + "route", vec(r).outcome());
        assertNull(vec(r).verification(), "the probe's own request refused: no verdict");
        assertEquals(1, received().size(), "sent once, not again as another variant");
        assertEquals(0, snapshot().fails());

        RoundReport next = round();
        assertEquals("ok", vec(next).outcome());
        assertEquals(2, received().size());
        JsonNode body = Json.parse(received().get(1).body());
        assertEquals(List.of("model", "input", "encoding_format"), iterable(body.fieldNames()),
                "the plain embeddings body: no variant remembered");
    }

    static List<String> iterable(java.util.Iterator<String> it) {
        List<String> out = new java.util.ArrayList<>();
        it.forEachRemaining(out::add);
        return out;
    }

    @Test
    void theProvidersMetricsScrapeFeedsTheEmbeddingsRoutesCapacity() {
        alpha().memoryPressure(0.97);

        RoundReport r = round();

        assertEquals("ok", r.scrapes().get(0).outcome());
        assertTrue(r.scrapes().get(0).routes().contains("vec-alpha"), r.scrapes().toString());
        CapacityReport c = CapacityReport.decode(snapshot().blob(LearnedModels.CAPACITY).orElse(null)).orElseThrow();
        assertEquals(0.97, c.memoryPressure(), 1e-9);
        assertFalse(c.hasHeadroom());
    }
}
