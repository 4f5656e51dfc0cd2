package dev.hedgerow.function.prober;

import dev.hedgerow.sim.Fault;
import dev.hedgerow.sim.ModelScript;
import dev.hedgerow.sim.SimServer;
import dev.hedgerow.testsupport.AppTestResource;
import io.quarkus.test.junit.QuarkusTest;
import io.restassured.response.ValidatableResponse;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

import static dev.hedgerow.testsupport.Eventually.eventually;
import static io.restassured.RestAssured.given;
import static org.hamcrest.Matchers.anyOf;
import static org.hamcrest.Matchers.containsString;
import static org.hamcrest.Matchers.equalTo;
import static org.hamcrest.Matchers.greaterThan;
import static org.hamcrest.Matchers.lessThanOrEqualTo;
import static org.hamcrest.Matchers.nullValue;
import static org.junit.jupiter.api.Assertions.assertEquals;

/**
 * The real application's prober ({@code POST /prober/run}) over an embeddings route ({@code vectors-alpha}, alpha's
 * {@code embed-a}, 1 s cooldown), seen through the admin API's health and the gateway's {@code POST /v1/embeddings}:
 * a failing probe cools it and the half-open probe after the cooldown brings it back, a capacity refusal's wait holds
 * it, and a route serving another model fails verification and is refused by the router until a later round passes
 * it. (The same on a fake clock, below the API: {@code EmbeddingsProberTest}.)
 */
@QuarkusTest
class EmbeddingsProbeTest {
    static SimServer alpha() {
        return AppTestResource.sims().get("alpha");
    }

    /** The model's script as the test resource started it. */
    static ModelScript honest() {
        return alpha().config().models().get("embed-a");
    }

    @BeforeEach
    @AfterEach
    void healthy() {
        alpha().clearFaults();
        alpha().script("embed-a", honest());
        given().auth().oauth2("a-acme").contentType("application/json").body("{\"route\":\"vectors-alpha\"}")
                .post("/admin/routes/reset").then().statusCode(200);
    }

    static ValidatableResponse round() {
        return given().auth().oauth2(AppTestResource.PROBER_TOKEN).post("/prober/run").then().statusCode(200)
                .body("ran", equalTo(true));
    }

    static ValidatableResponse health() {
        return given().auth().oauth2("a-acme").get("/admin/health?alias=vectors").then().statusCode(200)
                .body("groups[0].members[0].route", equalTo("vectors-alpha"));
    }

    static String state() {
        return health().extract().path("groups[0].members[0].state");
    }

    static int embed() {
        return given().auth().oauth2("k-acme").contentType("application/json")
                .body("{\"model\":\"vectors\",\"input\":\"hawthorn and hazel\"}").post("/v1/embeddings").statusCode();
    }

    @Test
    void aFailingProbeCoolsTheRouteAndTheHalfOpenProbeAfterTheCooldownRecoversIt() {
        alpha().enqueue("embed-a", Fault.status(503));

        round().body("routes.find { it.route == 'vectors-alpha' }.outcome", equalTo("failed: http 503"));
        // cooled for 1 s, which the rest of the round may already have outlasted
        health().body("groups[0].members[0].fails", equalTo(1))
                .body("groups[0].members[0].state", anyOf(equalTo("cooling_down"), equalTo("half_open")));

        eventually(() -> "half_open".equals(state()), "the 1 s cooldown ends, the route still at max_fails");
        round().body("routes.find { it.route == 'vectors-alpha' }.action", equalTo("half_open_probe"))
                .body("routes.find { it.route == 'vectors-alpha' }.outcome", equalTo("ok"))
                .body("routes.find { it.route == 'vectors-alpha' }.ttft_ms", nullValue())
                .body("routes.find { it.route == 'vectors-alpha' }.latency_ms", greaterThan(-1));
        health().body("groups[0].members[0].state", equalTo("healthy"))
                .body("groups[0].members[0].fails", equalTo(0));
    }

    @Test
    void aProbeRefusedWithAWaitHoldsTheRouteForIt() {
        alpha().enqueue("embed-a", Fault.rateLimited(30));

        round().body("routes.find { it.route == 'vectors-alpha' }.outcome",
                equalTo("failed: http 429, held 30000 ms by its retry headers"));
        health().body("groups[0].members[0].fails", equalTo(1))
                .body("groups[0].members[0].retry_after_ms", greaterThan(1000))
                .body("groups[0].members[0].retry_after_ms", lessThanOrEqualTo(30_000));
    }

    @Test
    void aRouteServingAnotherModelIsRefusedForEmbeddingsUntilARoundPassesIt() {
        try {
            alpha().script("embed-a", honest().withServedAs("embed-cheap"));
            round().body("routes.find { it.route == 'vectors-alpha' }.outcome", equalTo("ok"))
                    .body("routes.find { it.route == 'vectors-alpha' }.verification",
                            equalTo("fail:served model 'embed-cheap' is not 'embed-a'"));
            health().body("groups[0].members[0].state", equalTo("failing_verification"));
            long sent = alpha().stats("embed-a").received();
            eventually(() -> embed() == 503, "the router refuses the only route");
            given().auth().oauth2("k-acme").contentType("application/json")
                    .body("{\"model\":\"vectors\",\"input\":\"hawthorn and hazel\"}").post("/v1/embeddings").then()
                    .statusCode(503).body("error.code", equalTo("no_healthy_provider"))
                    .body("error.message", containsString("vectors-alpha: failing verification"));
            assertEquals(sent, alpha().stats("embed-a").received(), "nothing was sent to the excluded route");

            alpha().script("embed-a", honest());
            round().body("routes.find { it.route == 'vectors-alpha' }.verification", equalTo("pass"));
            health().body("groups[0].members[0].state", equalTo("healthy"));
            eventually(() -> embed() == 200, "back in service once a round passes it");
        } finally {
            // never leave the shared application's route excluded for the other tests
            alpha().script("embed-a", honest());
            round();
        }
    }
}
