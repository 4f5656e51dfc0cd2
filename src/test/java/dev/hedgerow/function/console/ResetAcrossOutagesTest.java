package dev.hedgerow.function.console;

import dev.hedgerow.sim.Fault;
import dev.hedgerow.sim.SimText;
import dev.hedgerow.state.RouteFlags;
import dev.hedgerow.state.StateKeys;
import dev.hedgerow.testsupport.AppTestResource;
import dev.hedgerow.testsupport.Resp;
import dev.hedgerow.testsupport.Sse;
import io.quarkus.test.common.QuarkusTestResource;
import io.quarkus.test.junit.QuarkusTest;
import io.restassured.path.json.JsonPath;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

import java.time.Duration;
import java.util.List;

import static dev.hedgerow.function.console.AdminResetTest.admin;
import static dev.hedgerow.function.console.AdminResetTest.alphaFirst;
import static dev.hedgerow.function.console.AdminResetTest.reset;
import static dev.hedgerow.function.console.AdminResetTest.tried;
import static io.restassured.RestAssured.given;
import static org.hamcrest.Matchers.equalTo;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * A route's health across Redis outages, on the real application (gateway and console in one process, as the default
 * deployment runs them) over its private Redis, which the tests stop and start again. While Redis is down the
 * instance keeps breaker verdicts in its local fallback store ({@code ResilientStateStore}); what an operator's
 * {@code POST /admin/routes/reset} clears there, and what is left of them when Redis answers again, decides whether a
 * route that serves is kept out at the next outage.
 *
 * <p>The {@code duo} group's breaker has a 10 min cooldown here, so a cooldown the tests open ends only by a reset
 * while they run, however slow the machine (the app's stores are on the system clock: a cooldown that ended by itself
 * would let a route serve whether the reset reached the local store or not). Requests ask for alpha first ({@code provider.order}),
 * so the attempt trail says whether duo-alpha was passed over.
 */
@QuarkusTest
@QuarkusTestResource(value = AppTestResource.class, restrictToAnnotatedClass = false)
class ResetAcrossOutagesTest {
    static final String LONG_COOLDOWN = "{\"breaker\": {\"max_fails\": 1, \"fail_timeout\": \"600s\"}}";

    @BeforeEach
    void duoWithALongCooldown() {
        AppTestResource.sims().values().forEach(s -> s.clearFaults());
        admin("a-acme").body(AdminApiTest.DUO_AS_FILED).put("/admin/groups/duo").then().statusCode(200);
        admin("a-acme").body(LONG_COOLDOWN).put("/admin/groups/duo").then().statusCode(200);
        for (String route : List.of("duo-alpha", "duo-beta")) {
            reset("a-acme", route).then().statusCode(200);
        }
    }

    /** Redis runs again, the instance is back on it, and duo is as filed with healthy routes for the next class. */
    @AfterEach
    void redisBackAndDuoAsFiled() {
        AppTestResource.redis().restart();
        driveUntilState("shared");
        AppTestResource.sims().values().forEach(s -> s.clearFaults());
        admin("a-acme").body(AdminApiTest.DUO_AS_FILED).put("/admin/groups/duo").then().statusCode(200);
        for (String route : List.of("duo-alpha", "duo-beta")) {
            reset("a-acme", route).then().statusCode(200);
        }
    }

    static String stateMode() {
        String body = given().get("/q/health/ready").then().statusCode(200).extract().asString();
        return JsonPath.from(body).getString("checks.find { it.name == 'hedgerow-state' }.data.state");
    }

    /**
     * Serves requests (to alias solo, which nothing here checks the health of) until readiness reports the state
     * store {@code state}: {@code degraded} once the outage guard has opened, {@code shared} once it closed again.
     */
    static void driveUntilState(String state) {
        long deadline = System.nanoTime() + Duration.ofSeconds(20).toNanos();
        for (int i = 0; !state.equals(stateMode()); i++) {
            assertTrue(System.nanoTime() < deadline, "readiness never reported state " + state);
            String prompt = "outage drive " + i;
            String out = given().auth().oauth2("k-acme").contentType("application/json")
                    .body("{\"model\":\"solo\",\"stream\":true,\"messages\":[{\"role\":\"user\",\"content\":\""
                            + prompt + "\"}]}")
                    .post("/v1/chat/completions").then().statusCode(200).extract().asString();
            assertEquals(SimText.expected(AppTestResource.SEED, prompt, 24), Sse.content(out));
        }
    }

    /** Stops Redis and waits until the instance answers from its local store. */
    static void redisDown() {
        AppTestResource.redis().stop();
        driveUntilState("degraded");
        // past the instance's copy of duo-alpha's state (hedgerow.state.snapshot-max-age, 50 ms): what follows reads
        // the local store, not a copy taken while Redis still answered
        pause(Duration.ofMillis(120));
    }

    static void redisUp() {
        AppTestResource.redis().restart();
        driveUntilState("shared");
    }

    static void pause(Duration d) {
        try {
            Thread.sleep(d.toMillis());
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new AssertionError(e);
        }
    }

    /** duo-alpha's state as {@code GET /admin/health} reports it. */
    static String alphaState() {
        return admin("a-acme").get("/admin/health?alias=duo").then().statusCode(200).extract()
                .path("groups[0].members.find { it.route == 'duo-alpha' }.state");
    }

    /** alpha answers 500 once: duo-alpha's breaker opens (max_fails 1) and the request fails over to beta. */
    static void alphaFails(String prompt) {
        AppTestResource.sims().get("alpha").enqueue("kimi-a", Fault.status(500));
        assertEquals(List.of("duo-alpha", "duo-beta"), tried(alphaFirst(null, prompt)));
        assertEquals("cooling_down", alphaState());
    }

    /**
     * An operator suspends duo-alpha while Redis is down: in force on this instance at once (its local store), and,
     * as README says of every admin edit made during an outage, written to Redis when it answers again, so the route
     * stays out of service then (before, it was back in service as soon as the instance read Redis again).
     */
    @Test
    void aRouteSuspendedWhileRedisIsDownStaysSuspendedOnceRedisAnswers() {
        redisDown();
        try {
            admin("a-acme").body("{\"route\":\"duo-alpha\",\"standing\":\"suspended\"}")
                    .put("/admin/routes/standing").then().statusCode(200);
            pause(Duration.ofMillis(120));   // past the snapshot copy's max age
            assertEquals(List.of("duo-beta"), tried(alphaFirst(null, "suspended in the outage")),
                    "precondition: in force during the outage");
            redisUp();
            // written to Redis at the instance's next catalog poll (hedgerow.catalog.poll-interval)
            long deadline = System.nanoTime() + Duration.ofSeconds(15).toNanos();
            List<String> t = tried(alphaFirst(null, "after the outage"));
            for (int i = 0; !t.equals(List.of("duo-beta")); i++) {
                assertTrue(System.nanoTime() < deadline, "duo-alpha is back in service after the outage: " + t);
                pause(Duration.ofMillis(200));
                t = tried(alphaFirst(null, "after the outage " + i));
            }
            pause(Duration.ofMillis(120));   // past any copy read before the write
            for (int i = 0; i < 5; i++) {
                assertEquals(List.of("duo-beta"), tried(alphaFirst(null, "still suspended " + i)));
            }
        } finally {
            AppTestResource.redis().restart();
            driveUntilState("shared");
            admin("a-acme").body("{\"route\":\"duo-alpha\",\"standing\":\"good\"}")
                    .put("/admin/routes/standing").then().statusCode(200);
        }
    }

    /** An operator puts duo-alpha in {@code standing}, and waits past the instance's copy of its state. */
    static void standing(String standing) {
        admin("a-acme").body("{\"route\":\"duo-alpha\",\"standing\":\"" + standing + "\"}")
                .put("/admin/routes/standing").then().statusCode(200);
        pause(Duration.ofMillis(120));   // past the snapshot copy's max age
    }

    /**
     * A route suspended while Redis answers stays suspended through an outage: the instance answers from its local
     * store then, which never held the verdict, and the route was back in service for the outage.
     */
    @Test
    void aRouteSuspendedBeforeAnOutageStaysSuspendedThroughIt() {
        try {
            standing("suspended");
            assertEquals(List.of("duo-beta"), tried(alphaFirst(null, "suspended before the outage")));
            redisDown();
            assertEquals(List.of("duo-beta"), tried(alphaFirst(null, "suspended in the outage")));
            assertEquals("suspended", alphaState());
        } finally {
            redisUp();
            standing("good");
        }
    }

    /**
     * A route suspended before Redis lost its data (a restart without persistence) stays suspended: the instance that
     * saw the verdict answers with it and writes it back to Redis, counted in readiness as {@code restored_flags}.
     * Before, the route was back in service on every instance (found by hunt7).
     */
    @Test
    void aRouteSuspendedBeforeRedisLostItsDataStaysSuspendedAndTheVerdictIsWrittenBack() throws Exception {
        int port = AppTestResource.redis().port();
        String key = StateKeys.routeBlob("acme/duo-alpha", RouteFlags.STANDING);
        try {
            standing("suspended");
            assertEquals(List.of("duo-beta"), tried(alphaFirst(null, "suspended before Redis lost it")));
            long restored = restoredFlags();

            Resp.command(port, "FLUSHALL");   // as a restart without persistence leaves it, with no outage seen
            pause(Duration.ofMillis(120));    // past the copy read before

            assertEquals(List.of("duo-beta"), tried(alphaFirst(null, "suspended after Redis lost it")));
            assertEquals("suspended", alphaState());
            long deadline = System.nanoTime() + Duration.ofSeconds(10).toNanos();
            while (!"suspended".equals(Resp.command(port, "GET", key))) {
                assertTrue(System.nanoTime() < deadline, "the verdict is not written back to Redis");
                pause(Duration.ofMillis(50));
            }
            // this one at least: the instance writes back every flag it saw (other classes' routes' too); Redis
            // shows the value before the instance has read the script's answer and counted it
            while (restoredFlags() <= restored) {
                assertTrue(System.nanoTime() < deadline, "restored_flags " + restoredFlags() + " after " + restored);
                pause(Duration.ofMillis(50));
            }
        } finally {
            standing("good");
        }
        assertEquals("good", Resp.command(port, "GET", key));
        assertEquals(List.of("duo-alpha"), tried(alphaFirst(null, "back in service")));
    }

    static long restoredFlags() {
        String body = given().get("/q/health/ready").then().statusCode(200).extract().asString();
        return JsonPath.from(body).getLong("checks.find { it.name == 'hedgerow-state' }.data.restored_flags");
    }

    /**
     * A reset while Redis answers clears the breaker the local store kept from an earlier outage too: at the next
     * outage the route serves. (Before c12ff51 the reset reached Redis only, and the local breaker was back, cooling
     * down for the rest of its 10 min, as soon as Redis went away again.)
     */
    @Test
    void aResetWhileRedisAnswersHoldsThroughTheNextOutage() {
        // 1. Redis down: alpha fails, and the open breaker is kept in the instance's local store
        redisDown();
        alphaFails("alpha fails in the outage");
        assertEquals(List.of("duo-beta"), tried(alphaFirst(null, "passed over in the outage")));

        // 2. Redis back. The outage guard closes after its trial calls and every read and write goes to Redis again;
        // this Redis restarted empty (no persistence), so it has no breaker for duo-alpha, but the one the instance
        // saw open in the outage is in force until it ends or Redis takes the route's health again (a Redis at its
        // memory limit answers reads and refuses writes, and dropping it at the first answer let a failing route take
        // traffic every 2 s; hunt29-c)
        redisUp();
        assertEquals("cooling_down", alphaState(), "the outage's breaker holds until it ends");
        assertEquals(List.of("duo-beta"), tried(alphaFirst(null, "passed over once Redis is back")));

        // 3. the operator puts the route back into service
        reset("a-acme", "duo-alpha").then().statusCode(200)
                .body("previous_state", equalTo("cooling_down"))
                .body("state", equalTo("healthy"));

        // 4. Redis down again: the instance answers from its local store, where the reset cleared duo-alpha as well
        redisDown();
        assertEquals("healthy", alphaState(), "not cooling down on the breaker the first outage left locally");
        assertEquals(List.of("duo-alpha"), tried(alphaFirst(null, "alpha serves in the second outage")));
    }

    /**
     * A breaker the local store kept from one outage is not back at the next: once its cooldown has ended (or Redis
     * took the route's health again) the route is judged on Redis (it serves, as here, or fails and cools down
     * there), so the local verdict is out of date by the next outage, which starts from a clean local store instead.
     */
    @Test
    void aLocalBreakerFromAnEarlierOutageIsNotBackAtTheNext() {
        admin("a-acme").body("{\"breaker\": {\"max_fails\": 1, \"fail_timeout\": \"2s\"}}")
                .put("/admin/groups/duo").then().statusCode(200);
        redisDown();
        alphaFails("alpha fails in the first outage");

        redisUp();
        long deadline = System.nanoTime() + Duration.ofSeconds(15).toNanos();
        while (!List.of("duo-alpha").equals(tried(alphaFirst(null, "alpha serves between the outages")))) {
            assertTrue(System.nanoTime() < deadline, "alpha never served once its 2 s cooldown ended");
            pause(Duration.ofMillis(200));
        }

        redisDown();
        assertEquals("healthy", alphaState(), "not cooling down on the breaker the first outage left locally");
        assertEquals(List.of("duo-alpha"), tried(alphaFirst(null, "alpha serves in the second outage")));
    }
}
