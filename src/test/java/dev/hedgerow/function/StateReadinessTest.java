package dev.hedgerow.function;

import dev.hedgerow.sim.SimText;
import dev.hedgerow.testsupport.AppTestResource;
import dev.hedgerow.testsupport.MetricsScrape;
import dev.hedgerow.testsupport.RedisServer;
import dev.hedgerow.testsupport.Resp;
import dev.hedgerow.state.StateKeys;
import dev.hedgerow.testsupport.Sse;
import io.quarkus.test.common.QuarkusTestResource;
import io.quarkus.test.junit.QuarkusTest;
import io.restassured.path.json.JsonPath;
import org.junit.jupiter.api.Test;

import java.time.Duration;
import java.util.Map;

import static dev.hedgerow.testsupport.Eventually.eventually;
import static io.restassured.RestAssured.given;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * The real application's readiness detail and {@code hedgerow_state_degraded} gauge, across a real Redis outage:
 * readiness stays UP (serving continues on local state) and says {@code degraded}, then {@code shared} again.
 */
@QuarkusTest
@QuarkusTestResource(value = AppTestResource.class, restrictToAnnotatedClass = false)
class StateReadinessTest {

    static Map<String, Object> stateCheck() {
        String body = given().get("/q/health/ready").then().statusCode(200).extract().asString();
        return JsonPath.from(body).getMap("checks.find { it.name == 'hedgerow-state' }.data");
    }

    static double gauge() {
        String metrics = MetricsScrape.text();
        return metrics.lines().filter(l -> l.startsWith("hedgerow_state_degraded"))
                .mapToDouble(l -> Double.parseDouble(l.substring(l.lastIndexOf(' ') + 1))).findFirst()
                .orElseThrow(() -> new AssertionError("no hedgerow_state_degraded gauge"));
    }

    /** Requests {@link #served} sent (every one to alias solo). */
    static int servedCount;

    static void served(String prompt) {
        servedCount++;
        String out = given().auth().oauth2("k-acme").contentType("application/json")
                .body("{\"model\":\"solo\",\"stream\":true,\"messages\":[{\"role\":\"user\",\"content\":\"" + prompt
                        + "\"}]}")
                .post("/v1/chat/completions").then().statusCode(200).extract().asString();
        assertEquals(SimText.expected(AppTestResource.SEED, prompt, 24), Sse.content(out));
    }

    /** Serves requests and polls readiness until it reports {@code state} (at most 20 s). */
    static void driveUntilState(String state) {
        long deadline = System.nanoTime() + Duration.ofSeconds(20).toNanos();
        for (int i = 0; !state.equals(stateCheck().get("state")); i++) {
            assertTrue(System.nanoTime() < deadline, "readiness never reported state " + state);
            served("drive " + i);
        }
    }

    @Test
    void readinessReportsSharedRedisState() {
        Map<String, Object> data = stateCheck();
        assertEquals("shared", data.get("state"));
        assertEquals("redis", data.get("mode"));
        assertEquals("up", data.get("redis"));
        assertEquals(0.0, gauge());
    }

    /**
     * Readiness names the revision of the instance's configuration file, the highest one stored (what the fleet
     * serves: a higher one means a newer file was published and this instance serves it), and what starting from the
     * file did.
     */
    @Test
    void readinessReportsTheCatalogFileRevision() {
        String body = given().get("/q/health/ready").then().statusCode(200).extract().asString();
        Map<String, Object> data = JsonPath.from(body).getMap("checks.find { it.name == 'hedgerow-catalog' }.data");
        assertEquals("1", data.get("file_revision"), body);
        assertEquals("1", data.get("stored_revision"), body);
        assertEquals("published", data.get("file"), body);
        assertEquals(2, data.get("orgs"), body);
    }

    /**
     * A stored org this instance cannot read (sealed with another secret key; here a document that is not JSON)
     * makes readiness DOWN, naming it, until it is readable or gone: the instance reported ready while it answered
     * every key of such an org with 401 (found by hunt8).
     */
    @Test
    void readinessIsDownWhileAStoredOrgCannotBeRead() throws java.io.IOException {
        int port = AppTestResource.redis().port();
        String org = "zz-unreadable";
        Resp.command(port, "SADD", StateKeys.ORGS, org);
        Resp.command(port, "HSET", StateKeys.catalog(org), "json", "{not a catalog", "version", "1");
        Resp.command(port, "SET", StateKeys.catalogVersion(org), "1");
        try {
            eventually(() -> given().get("/q/health/ready").statusCode() == 503, "readiness goes DOWN");
            String body = given().get("/q/health/ready").then().statusCode(503).extract().asString();
            Map<String, Object> data = JsonPath.from(body)
                    .getMap("checks.find { it.name == 'hedgerow-catalog' }.data");
            assertEquals(org, data.get("unreadable_orgs"), body);
        } finally {
            // stored as removed (as an org the file dropped): nothing to read any more
            Resp.command(port, "HSET", StateKeys.catalog(org), "json", "", "version", "2");
            Resp.command(port, "SET", StateKeys.catalogVersion(org), "2");
        }
        eventually(() -> given().get("/q/health/ready").statusCode() == 200, "readiness is UP again");
    }

    /** An idle instance has no request in flight: the readiness check asking is not counted (it counted itself). */
    @Test
    void anIdleInstanceShowsNoRequestInFlight() {
        eventually(() -> {
            String body = given().get("/q/health/ready").then().statusCode(200).extract().asString();
            Map<String, Object> data = JsonPath.from(body)
                    .getMap("checks.find { it.name == 'hedgerow-shutdown' }.data");
            return ((Number) data.get("requests_in_flight")).intValue() == 0;
        }, "requests_in_flight 0");
    }

    /**
     * Readiness counts the learned writes that found Redis holding another model than the one they were stepped from
     * ({@code learned_conflicts}; each is stepped again from it) and the steps given up ({@code learned_dropped}):
     * how often instances learn from one route at once. Here "another instance" writes solo's TTFT model, two real
     * versions of it in turn, while requests are served.
     */
    @Test
    void readinessCountsLearnedWritesThatFoundRedisChanged() throws Exception {
        int port = AppTestResource.redis().port();
        String key = StateKeys.routeBlob("acme/solo-alpha", dev.hedgerow.routing.LearnedModels.TTFT);
        served("learn one");
        eventually(() -> stored(port, key) != null, "solo's TTFT model is stored");
        String first = stored(port, key);
        served("learn two");
        eventually(() -> !first.equals(stored(port, key)), "the model is stepped");
        String second = stored(port, key);
        long before = ((Number) stateCheck().get("learned_conflicts")).longValue();
        java.util.concurrent.atomic.AtomicBoolean racing = new java.util.concurrent.atomic.AtomicBoolean(true);
        Thread other = new Thread(() -> {
            for (int i = 0; racing.get(); i++) {
                try {
                    Resp.command(port, "SET", key, i % 2 == 0 ? first : second);
                } catch (java.io.IOException e) {
                    return;
                }
            }
        });
        other.start();
        try {
            for (int i = 0; i < 200 && ((Number) stateCheck().get("learned_conflicts")).longValue() == before; i++) {
                served("race " + i);
            }
        } finally {
            racing.set(false);
            other.join();
        }
        Map<String, Object> data = stateCheck();
        assertTrue(((Number) data.get("learned_conflicts")).longValue() > before, data.toString());
        assertTrue(data.containsKey("learned_dropped"), data.toString());   // its count: RedisStateStoreTest
    }

    static String stored(int port, String key) {
        try {
            return Resp.command(port, "GET", key);
        } catch (java.io.IOException e) {
            throw new java.io.UncheckedIOException(e);
        }
    }

    /** Sets the weight of org other's one-member group duo through the admin API (routing there cannot change). */
    static void setOtherDuoWeight(int weight) {
        given().auth().oauth2("a-other").contentType("application/json")
                .body("{\"members\":[{\"route\":\"duo-alpha\",\"weight\":" + weight + "}]}")
                .put("/admin/groups/duo").then().statusCode(200);
    }

    static int otherDuoWeight() {
        return given().auth().oauth2("a-other").get("/admin/groups/duo").then().statusCode(200).extract()
                .jsonPath().getInt("members[0].weight");
    }

    /** Requests billed to alias solo since yesterday, as the admin API reports them. */
    static int soloRequests() {
        String from = java.time.LocalDate.now(java.time.ZoneOffset.UTC).minusDays(1).toString();
        return given().auth().oauth2("a-acme").get("/admin/usage?alias=solo&from=" + from).then().statusCode(200)
                .extract().path("total.requests");
    }

    @Test
    void staysReadyAndServesWhileRedisIsDownThenRejoins() {
        RedisServer redis = AppTestResource.redis();
        int weight = otherDuoWeight();
        int servedBefore = servedCount;
        try {
            redis.stop();
            driveUntilState("degraded");
            served("during the outage");
            assertEquals("unreachable", stateCheck().get("redis"));
            assertEquals(1.0, gauge());
            setOtherDuoWeight(weight + 7);     // answered on local state, and kept for Redis
            assertEquals(1, stateCheck().get("pending_edits"));
            assertTrue((Integer) stateCheck().get("pending_usage") > 0, "usage billed during the outage waits");
            assertTrue((Integer) stateCheck().get("pending_audit") > 0, "the weight edit's audit event waits");
            assertTrue((Integer) stateCheck().get("pending_releases") > 0, "the served requests' lease releases wait");
            assertEquals(0, stateCheck().get("dropped_releases"));
            // this instance's own usage and audit, said to be so (found by hunt14)
            for (String path : new String[] {"/admin/usage", "/admin/audit"}) {
                given().auth().oauth2("a-acme").get(path).then().statusCode(200)
                        .body("partial", org.hamcrest.Matchers.equalTo(true))
                        .body("partial_reason", org.hamcrest.Matchers.containsString("not the fleet's"));
            }
        } finally {
            redis.restart();
        }
        try {
            driveUntilState("shared");
            served("after the outage");
            assertEquals(0.0, gauge());
            given().auth().oauth2("a-acme").get("/admin/usage").then().statusCode(200)
                    .body("partial", org.hamcrest.Matchers.nullValue());
            assertEquals(weight + 7, otherDuoWeight(), "the edit made during the outage holds");
            eventually(() -> Integer.valueOf(0).equals(stateCheck().get("pending_edits")),
                    "the edit is written to Redis at the next catalog read");
            assertEquals(0, stateCheck().get("lost_edits"));
            eventually(() -> Integer.valueOf(0).equals(stateCheck().get("pending_usage")),
                    "usage billed during the outage is added to Redis once it answers");
            eventually(() -> Integer.valueOf(0).equals(stateCheck().get("pending_audit")),
                    "the audit events kept during the outage are written to Redis once it answers");
            eventually(() -> Integer.valueOf(0).equals(stateCheck().get("pending_releases")),
                    "the lease releases kept during the outage are sent to Redis once it answers");
            // the test's Redis restarts empty: the edit's admin event in its audit stream came from the replay
            String audit = given().auth().oauth2("a-other").get("/admin/audit?type=admin&alias=duo").then()
                    .statusCode(200).extract().asString();
            assertTrue(audit.contains("\"previous_state\"") && audit.contains("edit_group"), audit);
            int served = servedCount - servedBefore;
            // the test's Redis restarts empty: its ledger holds what was served since it stopped, each request once
            // (a write that timed out as Redis went away included)
            eventually(() -> soloRequests() == served,
                    "every request is billed in the shared ledger, those served during the outage too, none twice ("
                            + served + " served)");
        } finally {
            setOtherDuoWeight(weight);
        }
    }
}
