package dev.hedgerow.function.prober;

import dev.hedgerow.sim.Fault;
import dev.hedgerow.sim.SimServer;
import dev.hedgerow.testsupport.AppTestResource;
import io.quarkus.test.junit.QuarkusTest;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

import static io.restassured.RestAssured.given;
import static org.hamcrest.Matchers.equalTo;
import static org.hamcrest.Matchers.greaterThan;
import static org.hamcrest.Matchers.lessThanOrEqualTo;

/**
 * The real application's prober ({@code POST /prober/run}) meeting a provider's capacity refusal with a wait: the
 * round reports the hold, and the admin API's health shows the route held for it, as a live 429 would leave it.
 * (That a held route is then left alone until the wait ends, past its cooldown, is ProberTest's, on a fake clock.)
 */
@QuarkusTest
class ProberHoldTest {
    static SimServer alpha() {
        return AppTestResource.sims().get("alpha");
    }

    @BeforeEach
    @AfterEach
    void healthy() {
        alpha().clearFaults();
        given().auth().oauth2("a-acme").contentType("application/json").body("{\"route\":\"solo-alpha\"}")
                .post("/admin/routes/reset").then().statusCode(200);
    }

    @Test
    void aProbeRefusedWithAWaitHoldsTheRouteForIt() {
        alpha().enqueue("solo-a", Fault.rateLimited(30));

        given().auth().oauth2(AppTestResource.PROBER_TOKEN).post("/prober/run").then().statusCode(200)
                .body("ran", equalTo(true))
                .body("routes.find { it.route == 'solo-alpha' }.outcome",
                        equalTo("failed: http 429, held 30000 ms by its retry headers"));
        given().auth().oauth2("a-acme").get("/admin/health?alias=solo").then().statusCode(200)
                .body("groups[0].members[0].route", equalTo("solo-alpha"))
                .body("groups[0].members[0].fails", equalTo(1))
                .body("groups[0].members[0].retry_after_ms", greaterThan(0))
                .body("groups[0].members[0].retry_after_ms", lessThanOrEqualTo(30_000));
    }
}
