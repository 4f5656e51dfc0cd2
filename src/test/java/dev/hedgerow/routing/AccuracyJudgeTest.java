package dev.hedgerow.routing;

import com.fasterxml.jackson.databind.JsonNode;
import dev.hedgerow.api.Json;
import dev.hedgerow.catalog.CatalogLoader;
import dev.hedgerow.catalog.GroupSettings;
import dev.hedgerow.catalog.Org;
import dev.hedgerow.catalog.ProviderUrls;
import dev.hedgerow.sim.Fault;
import dev.hedgerow.sim.ModelScript;
import dev.hedgerow.sim.SimConfig;
import dev.hedgerow.sim.SimServer;
import dev.hedgerow.state.MemoryStateStore;
import dev.hedgerow.state.RouteSnapshot;
import dev.hedgerow.state.UsageSample;
import dev.hedgerow.time.FakeScheduler;
import dev.hedgerow.time.FakeTicker;
import dev.hedgerow.upstream.VertxUpstreamClient;
import io.vertx.core.Vertx;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

import java.io.IOException;
import java.time.Duration;
import java.time.Instant;
import java.time.InstantSource;
import java.util.List;
import java.util.Map;
import java.util.OptionalInt;
import java.util.SplittableRandom;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicInteger;

import static dev.hedgerow.testsupport.Eventually.eventually;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * The judge of {@code llm_accuracy}: how a judge's answer is read, what the judge is shown, and the judge's calls to a
 * real simulator over HTTP (sampling with a seeded random source, the in-flight bound, the timeout on a fake
 * scheduler, failures that record nothing).
 */
class AccuracyJudgeTest {
    static final String ROUTE = "acme/good";

    Vertx vertx;
    SimServer sim;
    VertxUpstreamClient upstream;
    MemoryStateStore store;
    LearnedModels models;
    FakeScheduler scheduler;
    final Map<AccuracyJudge.Outcome, AtomicInteger> outcomes = new ConcurrentHashMap<>();

    @BeforeEach
    void start() {
        vertx = Vertx.vertx();
        sim = SimServer.startBlocking(vertx, SimConfig.of(1)
                .withModel("grader", ModelScript.defaults().withScores(Map.of("GOOD", 87, "BAD", 12))));
        upstream = new VertxUpstreamClient(vertx, 16, ProviderUrls::metadataReason);
        FakeTicker ticker = new FakeTicker();
        store = new MemoryStateStore(ticker);
        models = new LearnedModels(store, InstantSource.fixed(Instant.parse("2026-12-01T00:00:00Z")),
                TtftPredictor.Prior.defaults());
        scheduler = new FakeScheduler(ticker);
    }

    @AfterEach
    void stop() {
        upstream.close();
        sim.close();
        vertx.close().toCompletionStage().toCompletableFuture().join();
    }

    Org org() {
        return new CatalogLoader(Map.of("SIM", sim.baseUrl())::get).parse("""
                orgs:
                  - id: acme
                    keys: [{ name: app, key: k }]
                    providers: [{ id: sim, base_url: "${SIM}" }]
                    routes:
                      - { id: good, alias: chat, provider: sim, model: m }
                      - { id: grader, alias: grader, provider: sim, model: grader }
                """).orgs().get(0);
    }

    AccuracyJudge judge(long seed, int maxInFlight) {
        return new AccuracyJudge(upstream, store, models, scheduler, TokenCounter.shared(),
                new SplittableRandom(seed), maxInFlight, new AccuracyJudge.Listener() {
                    @Override
                    public void judged(String org, AccuracyJudge.Outcome outcome) {
                        outcomes.computeIfAbsent(outcome, o -> new AtomicInteger()).incrementAndGet();
                    }

                    @Override
                    public void billed(Org org, dev.hedgerow.catalog.Route judge, UsageSample usage) {
                        bills.add(judge.id() + " " + usage);
                    }
                });
    }

    /** Each judge call answered, as "route usage". */
    final java.util.List<String> bills = new java.util.concurrent.CopyOnWriteArrayList<>();

    int count(AccuracyJudge.Outcome o) {
        AtomicInteger n = outcomes.get(o);
        return n == null ? 0 : n.get();
    }

    static GroupSettings.Judge settings(double rate) {
        GroupSettings.Judge d = GroupSettings.Judge.defaults("grader");
        return new GroupSettings.Judge("grader", d.prompt(), rate, d.messageCountback(), true, true, true,
                d.maxTokens(), Duration.ofSeconds(5));
    }

    static JsonNode messages(String json) {
        try {
            return Json.parse(json.getBytes(java.nio.charset.StandardCharsets.UTF_8));
        } catch (IOException e) {
            throw new AssertionError(e);
        }
    }

    static final JsonNode ASK = messages("[{\"role\":\"user\",\"content\":\"what is a hedgerow?\"}]");

    RouteSnapshot route() {
        return store.snapshot(List.of(ROUTE), Duration.ofMinutes(1)).await().atMost(Duration.ofSeconds(5)).get(ROUTE);
    }

    // ---- reading the judge's answer ----

    @Test
    void theScoreIsTheFirstWholeNumberFrom1To100() {
        assertEquals(OptionalInt.of(87), AccuracyJudge.score("87"));
        assertEquals(OptionalInt.of(87), AccuracyJudge.score(" 87\n"));
        assertEquals(OptionalInt.of(73), AccuracyJudge.score("Score: 73/100"));
        assertEquals(OptionalInt.of(100), AccuracyJudge.score("100"));
        assertEquals(OptionalInt.of(1), AccuracyJudge.score("1"));
        assertEquals(OptionalInt.of(7), AccuracyJudge.score("007"));
        for (String none : List.of("", "no idea", "0", "101", "1000", "-5", "99999999999999999999")) {
            assertEquals(OptionalInt.empty(), AccuracyJudge.score(none), none);
        }
    }

    @Test
    void aBodyThatIsNoChatCompletionHasNoText() {
        assertEquals("42", AccuracyJudge.answerText(AccuracyJudge.answer(
                "{\"choices\":[{\"message\":{\"role\":\"assistant\",\"content\":\"42\"}}]}".getBytes())));
        assertEquals(null, AccuracyJudge.answer("<html>".getBytes()));
        assertEquals(null, AccuracyJudge.answer("{\"choices\":[]}".getBytes()));
    }

    // ---- what the judge is shown ----

    @Test
    void theJudgeSeesTheLastMessagesWithoutTheIgnoredRolesThenTheResponse() {
        JsonNode conversation = messages("""
                [{"role":"system","content":"SYSTEM-TEXT"},
                 {"role":"user","content":"first question"},
                 {"role":"assistant","content":"ASSISTANT-TEXT"},
                 {"role":"tool","content":"TOOL-TEXT","tool_call_id":"c1"},
                 {"role":"user","content":[{"type":"text","text":"second "},{"type":"text","text":"question"}]},
                 {"role":"user","content":"third question"}]""");
        GroupSettings.Judge two = new GroupSettings.Judge("grader", "p", 1, 2, true, true, true, 8,
                Duration.ofSeconds(1));
        assertEquals("REQUEST:\nuser: second question\nuser: third question\n\nRESPONSE:\nthe answer",
                AccuracyJudge.layout(two, conversation, "the answer"));
        GroupSettings.Judge everyRole = new GroupSettings.Judge("grader", "p", 1, 4, false, false, false, 8,
                Duration.ofSeconds(1));
        assertEquals("REQUEST:\nassistant: ASSISTANT-TEXT\ntool: TOOL-TEXT\nuser: second question\n"
                + "user: third question\n\nRESPONSE:\nok", AccuracyJudge.layout(everyRole, conversation, "ok"));
    }

    @Test
    void theJudgeRequestIsANonStreamedCompletionWithThePromptAsSystemMessage() {
        JsonNode body = AccuracyJudge.request("judge-model", settings(1), ASK, "an answer");
        assertEquals("judge-model", body.path("model").asText());
        assertFalse(body.path("stream").asBoolean(true));
        assertEquals(8, body.path("max_tokens").asInt());
        assertEquals(2, body.path("messages").size());
        assertEquals("system", body.path("messages").path(0).path("role").asText());
        assertEquals(GroupSettings.Judge.DEFAULT_PROMPT, body.path("messages").path(0).path("content").asText());
        assertEquals("user", body.path("messages").path(1).path("role").asText());
    }

    // ---- calling the judge ----

    @Test
    void aScoredAnswerIsLearnedIntoTheRoutesAccuracy() {
        judge(1, 16).answered(org(), settings(1), ROUTE, ASK, "a GOOD answer");
        eventually(() -> count(AccuracyJudge.Outcome.SCORED) == 1, "scored");
        eventually(() -> models.accuracyScores(route()).isMeasured(), "the score is stored");
        assertEquals(87, models.accuracy(route()), 1e-9);
        judge(1, 16).answered(org(), settings(1), ROUTE, ASK, "a BAD answer");
        eventually(() -> models.accuracyScores(route()).count() == 2, "the second score is stored");
        assertEquals(87 + LearnedModels.ACCURACY_ALPHA * (12 - 87), models.accuracy(route()), 1e-9,
                "a decayed mean");
        eventually(() -> count(AccuracyJudge.Outcome.SCORED) == 2, "both counted");
        assertEquals(2, bills.size(), "each judge call answered is billed: " + bills);
        assertTrue(bills.get(0).matches("grader UsageSample\\[promptTokens=[1-9]\\d*, completionTokens=[1-9]\\d*, .*"),
                bills.get(0));
    }

    @Test
    void aJudgeAnswerWithNoScoreRecordsNothing() {
        judge(1, 16).answered(org(), settings(1), ROUTE, ASK, "neither keyword here");
        eventually(() -> count(AccuracyJudge.Outcome.UNPARSABLE) == 1, "the seeded text is no score");
        assertFalse(models.accuracyScores(route()).isMeasured());
        assertEquals(1, bills.size(), "an answer with no score was still a paid call: " + bills);
    }

    @Test
    void aFailingJudgeRecordsNothing() {
        sim.enqueue("grader", Fault.status(500));
        judge(1, 16).answered(org(), settings(1), ROUTE, ASK, "a GOOD answer");
        eventually(() -> count(AccuracyJudge.Outcome.FAILED) == 1, "a 500 is a failure");
        assertFalse(models.accuracyScores(route()).isMeasured());
        assertTrue(bills.isEmpty(), "a refused call bills nothing: " + bills);
    }

    @Test
    void aJudgeSilentPastItsTimeoutFailsAndItsCallIsClosed() {
        sim.enqueue("grader", Fault.noResponse());
        AccuracyJudge j = judge(1, 16);
        j.answered(org(), settings(1), ROUTE, ASK, "a GOOD answer");
        eventually(() -> sim.stats("grader").received() == 1, "the judge was called");
        assertEquals(1, j.inFlight());
        scheduler.advance(Duration.ofSeconds(4));
        assertEquals(0, count(AccuracyJudge.Outcome.FAILED), "not before its timeout");
        scheduler.advance(Duration.ofSeconds(1));
        assertEquals(1, count(AccuracyJudge.Outcome.FAILED));
        assertEquals(0, j.inFlight());
        eventually(() -> sim.stats("grader").cancelled() == 1, "the judge's connection was closed");
        assertFalse(models.accuracyScores(route()).isMeasured());
    }

    @Test
    void beyondTheInFlightBoundASampleIsSkipped() {
        sim.enqueue("grader", Fault.noResponse(), Fault.noResponse());
        AccuracyJudge j = judge(1, 2);
        for (int i = 0; i < 3; i++) {
            j.answered(org(), settings(1), ROUTE, ASK, "a GOOD answer");
        }
        assertEquals(1, count(AccuracyJudge.Outcome.SKIPPED));
        eventually(() -> sim.stats("grader").received() == 2, "two judge calls only");
        scheduler.advance(Duration.ofSeconds(5));
        assertEquals(2, count(AccuracyJudge.Outcome.FAILED));
        j.answered(org(), settings(1), ROUTE, ASK, "a GOOD answer");
        eventually(() -> count(AccuracyJudge.Outcome.SCORED) == 1, "room again once they ended");
    }

    @Test
    void theSamplingRateDecidesWhichAnswersAreJudged() {
        AccuracyJudge none = judge(1, 16);
        for (int i = 0; i < 20; i++) {
            none.answered(org(), settings(0), ROUTE, ASK, "a GOOD answer");
        }
        assertTrue(outcomes.isEmpty(), "rate 0 judges nothing: " + outcomes);

        // the same seeded source the judge draws from says which of 40 answers a rate of 0.25 samples
        SplittableRandom same = new SplittableRandom(7);
        int expected = 0;
        for (int i = 0; i < 40; i++) {
            expected += same.nextDouble() < 0.25 ? 1 : 0;
        }
        AccuracyJudge quarter = judge(7, 64);
        for (int i = 0; i < 40; i++) {
            quarter.answered(org(), settings(0.25), ROUTE, ASK, "a GOOD answer");
        }
        int sampled = expected;
        eventually(() -> count(AccuracyJudge.Outcome.SCORED) == sampled, sampled + " judged");
        assertTrue(sampled > 0 && sampled < 40, "a share of them: " + sampled);
        assertEquals(sampled, sim.stats("grader").received());
    }
}
