package dev.hedgerow.function.prober;

import dev.hedgerow.sim.ModelScript;
import dev.hedgerow.sim.SimServer;
import dev.hedgerow.testsupport.AppTestResource;
import io.quarkus.test.junit.QuarkusTest;
import io.quarkus.test.junit.QuarkusTestProfile;
import io.quarkus.test.junit.TestProfile;
import io.restassured.response.Response;
import org.junit.jupiter.api.Test;

import java.util.List;
import java.util.Map;

import static io.restassured.RestAssured.given;
import static org.hamcrest.Matchers.equalTo;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * The real application's prober with a verification period ({@code hedgerow.prober.verify-every}, the default 10
 * minutes; the other application tests verify every round): a route with no verdict is checked on the first round, one
 * whose check failed on every round until it passes, and a passing one not again within the period, as the
 * simulator's request counts show (a speed probe streams, a known-answer check does not).
 */
@QuarkusTest
@TestProfile(ProberVerifyEveryTest.TenMinutes.class)
class ProberVerifyEveryTest {
    /** The default period, set explicitly over the test resource's {@code 0s}. */
    public static class TenMinutes implements QuarkusTestProfile {
        @Override
        public Map<String, String> getConfigOverrides() {
            return Map.of("hedgerow.prober.verify-every", "10m");
        }
    }

    static final ModelScript FAST = ModelScript.defaults().withLength(24)
            .withLatency(ModelScript.Latency.of(10, 400));

    static SimServer alpha() {
        return AppTestResource.sims().get("alpha");
    }

    static Response round() {
        Response round = given().auth().oauth2(AppTestResource.PROBER_TOKEN).post("/prober/run");
        round.then().statusCode(200).body("ran", equalTo(true));
        return round;
    }

    /** The known-answer checks {@code solo-a} received since {@code before} requests (its non-streamed requests). */
    static long checks(long before) {
        var stats = alpha().stats("solo-a");
        int since = (int) (stats.received() - before);
        List<dev.hedgerow.sim.SimStats.RecordedRequest> recent = stats.recent();
        return recent.subList(recent.size() - since, recent.size()).stream()
                .filter(r -> r.body().contains("\"stream\":false")).count();
    }

    static String verification(Response round, String route) {
        Object v = round.path("routes.find { it.route == '" + route + "' }.verification");
        return v == null ? null : v.toString();
    }

    @Test
    void aPassingVerdictHoldsForThePeriodAndAFailingOneIsCheckedEveryRoundUntilItPasses() {
        alpha().script("solo-a", FAST.withServedAs("something-else"));
        try {
            long before = alpha().stats("solo-a").received();
            Response first = round();
            // no verdict yet: every route is checked on the first round
            List<Map<String, Object>> routes = first.path("routes");
            assertTrue(routes.size() > 1, first.asString());
            for (Map<String, Object> r : routes) {
                assertNotNull(r.get("verification"), first.asString());
            }
            assertTrue(verification(first, "solo-alpha").startsWith("fail:served model"), first.asString());
            assertEquals(1, checks(before));

            before = alpha().stats("solo-a").received();
            Response second = round();
            // failing: checked again; passing (kimi3's members): not within the period
            assertTrue(verification(second, "solo-alpha").startsWith("fail:served model"), second.asString());
            assertEquals(1, checks(before));
            assertNull(verification(second, "kimi3-alpha"), second.asString());
            assertEquals("ok", second.path("routes.find { it.route == 'kimi3-alpha' }.outcome"), second.asString());
        } finally {
            alpha().script("solo-a", FAST);
        }

        long before = alpha().stats("solo-a").received();
        Response third = round();
        assertEquals("pass", verification(third, "solo-alpha"), third.asString());
        assertEquals(1, checks(before));
        given().auth().oauth2("a-acme").get("/admin/health?alias=solo").then()
                .body("groups[0].members[0].verification", equalTo("pass"));

        before = alpha().stats("solo-a").received();
        Response fourth = round();
        assertNull(verification(fourth, "solo-alpha"), fourth.asString());
        assertEquals(0, checks(before), "a passing route is not checked again within the period");
        assertEquals(1, alpha().stats("solo-a").received() - before, "its speed probe still runs");
        given().auth().oauth2("a-acme").get("/admin/health?alias=solo").then()
                .body("groups[0].members[0].verification", equalTo("pass"))
                .body("groups[0].members[0].state", equalTo("healthy"));
    }
}
