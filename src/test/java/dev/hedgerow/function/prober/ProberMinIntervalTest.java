package dev.hedgerow.function.prober;

import dev.hedgerow.testsupport.AppTestResource;
import io.quarkus.test.junit.QuarkusTest;
import io.quarkus.test.junit.QuarkusTestProfile;
import io.quarkus.test.junit.TestProfile;
import org.junit.jupiter.api.Test;

import java.util.List;
import java.util.Map;

import static io.restassured.RestAssured.given;
import static org.hamcrest.Matchers.containsString;
import static org.hamcrest.Matchers.equalTo;
import static org.hamcrest.Matchers.matchesPattern;
import static org.junit.jupiter.api.Assertions.assertEquals;

/**
 * The real application's prober with a minimum interval between rounds ({@code hedgerow.prober.min-interval}) on a
 * real Redis: a round asked for again at once, with the prober token or without any, is answered without running,
 * saying why and when the next may start, and probes nothing. (The other application tests run with no minimum interval.)
 */
@QuarkusTest
@TestProfile(ProberMinIntervalTest.HourApart.class)
class ProberMinIntervalTest {
    /** An hour between rounds: the second round of the test is always within it. */
    public static class HourApart implements QuarkusTestProfile {
        @Override
        public Map<String, String> getConfigOverrides() {
            return Map.of("hedgerow.prober.min-interval", "1h");
        }
    }

    @Test
    void aRoundAskedForAgainWithinTheMinimumIntervalIsNotRunAndSaysWhenTheNextMayStart() {
        var alpha = AppTestResource.sims().get("alpha");
        given().auth().oauth2(AppTestResource.PROBER_TOKEN).post("/prober/run").then().statusCode(200)
                .body("ran", equalTo(true));
        long probed = alpha.stats("kimi-a").received();

        given().auth().oauth2(AppTestResource.PROBER_TOKEN).post("/prober/run").then().statusCode(200)
                .contentType("application/json")
                .body("ran", equalTo(false))
                .body("note", matchesPattern("the last probe round started \\d+(\\.\\d)? s ago and rounds start at "
                        + "least 3600 s apart \\(min-interval\\): the next may start in \\d+(\\.\\d)? s"))
                .body("routes", equalTo(List.of()))
                .body("scrapes", equalTo(List.of()));
        // without a token: the same answer, as counts
        given().post("/prober/run").then().statusCode(200)
                .body("ran", equalTo(false))
                .body("note", containsString("rounds start at least 3600 s apart"))
                .body("counts.routes", equalTo(0));
        // a wrong token is checked first, as ever
        given().auth().oauth2("not-the-prober-token").post("/prober/run").then().statusCode(401)
                .body("error.code", equalTo("invalid_api_key"))
                .body("error.message", containsString("the prober token (HEDGEROW_PROBER_TOKEN)"));

        assertEquals(probed, alpha.stats("kimi-a").received(), "a refused round probes nothing");
        given().auth().oauth2(AppTestResource.METRICS_TOKEN).get("/q/metrics").then().statusCode(200)
                .body(containsString("hedgerow_prober_rounds_total{result=\"ran\"} 1.0"))
                .body(containsString("hedgerow_prober_rounds_total{result=\"skipped\"} 2.0"));
    }
}
