package dev.hedgerow.function.prober;

import dev.hedgerow.sim.ModelScript;
import dev.hedgerow.routing.Router;
import dev.hedgerow.sim.SimServer;
import dev.hedgerow.state.RouteFlags;
import dev.hedgerow.state.StateKeys;
import dev.hedgerow.testsupport.AppTestResource;
import dev.hedgerow.testsupport.Resp;
import io.quarkus.test.junit.QuarkusTest;
import io.restassured.response.Response;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

import static io.restassured.RestAssured.given;
import static org.hamcrest.Matchers.equalTo;
import static org.hamcrest.Matchers.notNullValue;

/**
 * The real application's prober ({@code POST /prober/run}) in front of routes that behave as real providers do and
 * are healthy: a probe round must leave them in service, as the admin API's health ({@code GET /admin/health}) and
 * live traffic through the gateway show. Each case scripts the simulator's {@code solo-a} (alias {@code solo}, one
 * route, {@code solo-alpha}) and puts it back afterwards.
 */
@QuarkusTest
class ProbeRealProvidersTest {
    static final ModelScript FAST = ModelScript.defaults().withLength(24)
            .withLatency(ModelScript.Latency.of(10, 400));

    static SimServer alpha() {
        return AppTestResource.sims().get("alpha");
    }

    @BeforeEach
    void healthy() {
        // whatever an earlier test left of the route's health and verdicts
        given().auth().oauth2("a-acme").contentType("application/json").body("{\"route\":\"solo-alpha\"}")
                .post("/admin/routes/reset").then().statusCode(200);
        given().auth().oauth2("a-acme").contentType("application/json")
                .body("{\"route\":\"solo-alpha\",\"verification\":null}").put("/admin/routes/verification");
        // and a prober's failing verdict (it lives 30 min): a round on the healthy script judges the route afresh
        alpha().script("solo-a", FAST);
        round();
    }

    @AfterEach
    void restore() {
        alpha().clearFaults();
        alpha().script("solo-a", FAST);
    }

    static Response round() {
        Response round = given().auth().oauth2(AppTestResource.PROBER_TOKEN).post("/prober/run");
        round.then().statusCode(200).body("ran", equalTo(true));
        return round;
    }

    static String solo(Response round, String field) {
        return round.path("routes.find { it.route == 'solo-alpha' }." + field) == null ? null
                : round.path("routes.find { it.route == 'solo-alpha' }." + field).toString();
    }

    /** The route is in service: healthy in the admin API, and the gateway serves its alias from it. */
    static void inService() {
        given().auth().oauth2("a-acme").get("/admin/health?alias=solo").then().statusCode(200)
                .body("groups[0].members[0].route", equalTo("solo-alpha"))
                .body("groups[0].members[0].state", equalTo("healthy"))
                .body("groups[0].members[0].cooling_down", equalTo(false))
                .body("groups[0].members[0].fails", equalTo(0));
        given().auth().oauth2("k-acme").contentType("application/json")
                .body("{\"model\":\"solo\",\"max_completion_tokens\":200,"
                        + "\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}]}")
                .post("/v1/chat/completions").then().statusCode(200)
                .header("x-hedgerow-route", equalTo("solo-alpha"));
    }

    // ---- reasoning models -----------------------------------------------------------------------------------------

    /**
     * A thinking model spends the speed probe's whole budget (32 tokens) reasoning and ends with
     * {@code finish_reason: length} and no content: it answered, fast. Its reasoning is its first token (as the
     * gateway counts it), and the round leaves it healthy. Before, the probe read "stream ended with no content", a
     * breaker failure, and the only route of its alias cooled down.
     */
    @Test
    void aThinkingModelWhoseProbeBudgetRunsOutWhileThinkingStaysInService() {
        alpha().script("solo-a", FAST.withReasoning(new ModelScript.Reasoning(100, 0, 0).capped()));

        Response round = round();

        org.junit.jupiter.api.Assertions.assertEquals("ok", solo(round, "outcome"), round.asString());
        round.then().body("routes.find { it.route == 'solo-alpha' }.ttft_ms", notNullValue());
        inService();
    }

    /** The same in the other spelling servers use for reasoning deltas ({@code delta.reasoning}: newer vLLM). */
    @Test
    void reasoningInTheReasoningFieldIsAlsoAnAnswer() {
        alpha().script("solo-a", FAST.withReasoning(new ModelScript.Reasoning(100, 0, 0).capped()
                .inField("reasoning")));

        Response round = round();

        org.junit.jupiter.api.Assertions.assertEquals("ok", solo(round, "outcome"), round.asString());
        inService();
    }

    // ---- probe requests the provider refuses -----------------------------------------------------------------------

    /**
     * OpenAI's reasoning models (o-series, gpt-5) answer 400 to {@code max_tokens} and to {@code temperature: 0}:
     * the probe is sent again as {@code max_completion_tokens} and without the temperature, and the route is
     * measured and verified. Before, the refused speed probe was a breaker failure and the route cooled down.
     */
    @Test
    void anOpenAiReasoningModelIsProbedWithTheParametersItTakes() {
        alpha().script("solo-a", FAST.withCapabilities(ModelScript.Capabilities.DEFAULT.withReasoningParameters(true)));

        Response round = round();

        org.junit.jupiter.api.Assertions.assertEquals("ok", solo(round, "outcome"), round.asString());
        org.junit.jupiter.api.Assertions.assertEquals("pass", solo(round, "verification"), round.asString());
        inService();
        given().auth().oauth2("a-acme").get("/admin/health?alias=solo").then()
                .body("groups[0].members[0].verification", equalTo("pass"));
    }

    /**
     * The body variant a reasoning model takes is remembered for the route: the next round sends it first, and the
     * provider sees no refused request at all (before, every round found it again: three requests for the known-answer
     * check, two for the speed probe). A first round whose probe the provider refuses outright makes the prober forget
     * whatever an earlier test taught it about this route (a remembered variant refused is forgotten), so the test
     * starts from the plain body either way.
     */
    @Test
    void theParametersAReasoningModelTakesAreRememberedForLaterRounds() {
        alpha().enqueue("solo-a", new dev.hedgerow.sim.Fault.HttpError(400, "invalid_request_error", null,
                "Invalid request: unrecognised request argument", null, 0));
        org.junit.jupiter.api.Assertions.assertTrue(solo(round(), "outcome").startsWith("refused: http 400"));
        alpha().script("solo-a", FAST.withCapabilities(ModelScript.Capabilities.DEFAULT.withReasoningParameters(true)));

        dev.hedgerow.sim.SimStats before = alpha().stats("solo-a");
        Response first = round();
        dev.hedgerow.sim.SimStats afterFirst = alpha().stats("solo-a");
        Response second = round();
        dev.hedgerow.sim.SimStats afterSecond = alpha().stats("solo-a");

        for (Response r : java.util.List.of(first, second)) {
            org.junit.jupiter.api.Assertions.assertEquals("ok", solo(r, "outcome"), r.asString());
            org.junit.jupiter.api.Assertions.assertEquals("pass", solo(r, "verification"), r.asString());
        }
        org.junit.jupiter.api.Assertions.assertTrue(afterFirst.rejected() > before.rejected(),
                "the first round finds the variant by refusals");
        org.junit.jupiter.api.Assertions.assertEquals(afterFirst.rejected(), afterSecond.rejected(),
                "the second round sends no refused request");
        int sent = (int) (afterSecond.received() - afterFirst.received());
        org.junit.jupiter.api.Assertions.assertEquals(2, sent, "one speed probe and one known-answer check");
        java.util.List<dev.hedgerow.sim.SimStats.RecordedRequest> recent = afterSecond.recent();
        for (dev.hedgerow.sim.SimStats.RecordedRequest req : recent.subList(recent.size() - sent, recent.size())) {
            org.junit.jupiter.api.Assertions.assertFalse(req.body().contains("\"max_tokens\""), req.body());
            org.junit.jupiter.api.Assertions.assertFalse(req.body().contains("\"temperature\""), req.body());
            org.junit.jupiter.api.Assertions.assertTrue(req.body().contains("\"max_completion_tokens\""), req.body());
        }
        inService();
    }

    /**
     * A 400 the probe cannot adapt to is the probe's own fault, as a live 400 is the client's: reported as refused,
     * not counted against the route (a live 400 is passed through and counts nothing either).
     */
    @Test
    void aProbeTheProviderRefusesIsNotARouteFailure() {
        alpha().enqueue("solo-a", new dev.hedgerow.sim.Fault.HttpError(400, "invalid_request_error", null,
                "Invalid request: unrecognised request argument", null, 0));

        Response round = round();

        org.junit.jupiter.api.Assertions.assertTrue(solo(round, "outcome").startsWith("refused: http 400"),
                round.asString());
        inService();
    }

    // ---- verification ------------------------------------------------------------------------------------------

    /**
     * The real OpenAI API answers {@code gpt-4o-mini-2024-07-18} to a request for {@code gpt-4o-mini}: a dated
     * snapshot of the route's model is the route's model. Before, the route read {@code failing_verification} and
     * lost all its traffic.
     */
    @Test
    void aRouteAnsweringADatedSnapshotOfItsModelPassesVerification() {
        alpha().script("solo-a", FAST.withServedAs("solo-a-2024-07-18"));

        Response round = round();

        org.junit.jupiter.api.Assertions.assertEquals("pass", solo(round, "verification"), round.asString());
        inService();
    }

    /** Only a date may follow the name: a route serving another model still fails its verification. */
    @Test
    void aRouteAnsweringAnotherModelStillFailsVerification() {
        alpha().script("solo-a", FAST.withServedAs("solo-a-mini-2024-07-18"));

        Response round = round();

        org.junit.jupiter.api.Assertions.assertTrue(solo(round, "verification").startsWith("fail:served model"),
                round.asString());
        given().auth().oauth2("a-acme").get("/admin/health?alias=solo").then()
                .body("groups[0].members[0].state", equalTo("failing_verification"))
                .body("groups[0].members[0].verification_by", equalTo("prober"));
    }

    /**
     * An operator's verdict set through the admin API is kept over the prober's rounds until the operator clears it
     * ({@code "verification": null}); then the prober's verdicts apply again. Before, the next round overwrote it.
     */
    @Test
    void anOperatorsVerdictWinsOverTheProberUntilCleared() {
        alpha().script("solo-a", FAST.withServedAs("something-else"));
        given().auth().oauth2("a-acme").contentType("application/json")
                .body("{\"route\":\"solo-alpha\",\"verification\":\"pass\"}").put("/admin/routes/verification")
                .then().statusCode(200).body("verification", equalTo("pass"));

        Response round = round();

        org.junit.jupiter.api.Assertions.assertTrue(solo(round, "verification").startsWith("fail:served model"),
                round.asString());
        inService();
        given().auth().oauth2("a-acme").get("/admin/health?alias=solo").then()
                .body("groups[0].members[0].verification", equalTo("pass"))
                .body("groups[0].members[0].verification_by", equalTo("operator"));

        given().auth().oauth2("a-acme").contentType("application/json")
                .body("{\"route\":\"solo-alpha\",\"verification\":null}").put("/admin/routes/verification")
                .then().statusCode(200).body("verification", org.hamcrest.Matchers.nullValue());
        round();
        given().auth().oauth2("a-acme").get("/admin/health?alias=solo").then()
                .body("groups[0].members[0].state", equalTo("failing_verification"))
                .body("groups[0].members[0].verification_by", equalTo("prober"));
    }

    /**
     * Clearing an operator's verdict writes it as cleared ({@code none}, never deleted, so that a verdict missing from
     * Redis is one Redis lost): health shows the prober's verdict at once (no round in between). Before, the verdict
     * was written blank for a minute.
     */
    @Test
    void clearingAnOperatorsVerdictKeepsItClearedAndTheProbersVerdictIsBackAtOnce() throws Exception {
        alpha().script("solo-a", FAST.withServedAs("something-else"));
        org.junit.jupiter.api.Assertions.assertTrue(solo(round(), "verification").startsWith("fail:served model"));
        given().auth().oauth2("a-acme").contentType("application/json")
                .body("{\"route\":\"solo-alpha\",\"verification\":\"pass\"}").put("/admin/routes/verification")
                .then().statusCode(200);
        given().auth().oauth2("a-acme").get("/admin/health?alias=solo").then()
                .body("groups[0].members[0].state", equalTo("healthy"))
                .body("groups[0].members[0].verification_by", equalTo("operator"));

        given().auth().oauth2("a-acme").contentType("application/json")
                .body("{\"route\":\"solo-alpha\",\"verification\":null}").put("/admin/routes/verification")
                .then().statusCode(200).body("verification", org.hamcrest.Matchers.nullValue());

        given().auth().oauth2("a-acme").get("/admin/health?alias=solo").then()
                .body("groups[0].members[0].state", equalTo("failing_verification"))
                .body("groups[0].members[0].verification", org.hamcrest.Matchers.startsWith("fail:served model"))
                .body("groups[0].members[0].verification_by", equalTo("prober"));
        int port = AppTestResource.redis().port();
        String route = "acme/solo-alpha";
        String index = StateKeys.routeBlobIndex(route);
        org.junit.jupiter.api.Assertions.assertEquals(RouteFlags.NO_VERDICT, Resp.command(port, "GET",
                StateKeys.routeBlob(route, Router.OPERATOR_VERIFICATION)),
                "the cleared verdict is kept as cleared (a flag is never deleted: its absence means Redis lost it)");
        org.junit.jupiter.api.Assertions.assertEquals("-1", Resp.command(port, "PTTL", index),
                "the route's blob index lasts as its flags do");
        // the prober's failing verdict lasts 30 min: a round of the route as it was puts its pass back for the others
        alpha().script("solo-a", FAST);
        org.junit.jupiter.api.Assertions.assertEquals("pass", solo(round(), "verification"));
    }
}
