package dev.hedgerow.function.console;

import dev.hedgerow.testsupport.AppTestResource;
import io.quarkus.test.common.QuarkusTestResource;
import io.quarkus.test.junit.QuarkusTest;
import io.restassured.path.json.JsonPath;
import io.restassured.specification.RequestSpecification;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

import java.util.List;
import java.util.Map;

import static io.restassured.RestAssured.given;
import static org.hamcrest.Matchers.containsString;
import static org.hamcrest.Matchers.hasItem;
import static org.hamcrest.Matchers.not;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Every change an operator makes through the admin API is an {@code admin} audit event, on the real application over
 * a real Redis: a group edit, a pin and an unpin, a drain and an undrain, a standing and a verification verdict (the
 * route-health reset is AdminResetTest's). Each names the action, the route (none for a whole-group action), the
 * admin key's name, what it changed from and a sentence; a refused action writes none, and another org sees none.
 */
@QuarkusTest
@QuarkusTestResource(value = AppTestResource.class, restrictToAnnotatedClass = false)
class AdminAuditTest {

    @BeforeEach
    @AfterEach
    void duoAsFiled() {
        admin("a-acme").body("{\"alias\":\"duo\"}").post("/admin/members/unpin").then().statusCode(200);
        for (String r : List.of("duo-alpha", "duo-beta")) {
            admin("a-acme").body("{\"route\":\"" + r + "\",\"drained\":false}").post("/admin/members/drain").then()
                    .statusCode(200);
            admin("a-acme").body("{\"route\":\"" + r + "\",\"standing\":\"good\"}").put("/admin/routes/standing")
                    .then().statusCode(200);
            admin("a-acme").body("{\"route\":\"" + r + "\",\"verification\":\"pass\"}")
                    .put("/admin/routes/verification").then().statusCode(200);
        }
        admin("a-acme").body(AdminApiTest.DUO_AS_FILED).put("/admin/groups/duo").then().statusCode(200);
    }

    @Test
    void aGroupEditIsAnAdminEventWithTheRevisionsAndTheEdit() {
        String before = admin("a-acme").get("/admin/groups/duo").then().statusCode(200).extract().path("revision");
        String after = admin("a-acme").body("{\"strategy\": \"weighted\"}").put("/admin/groups/duo").then()
                .statusCode(200).extract().path("revision");

        Map<String, String> e = newest();
        assertEquals("edit_group", e.get("action"));
        assertEquals("duo", e.get("alias"));
        assertEquals("", e.get("route"), "an edit acts on the whole group");
        assertEquals("ops", e.get("admin_key"));
        assertEquals(before, e.get("previous_state"), "what it changed from: the group's revision");
        assertTrue(e.get("message").startsWith("Group duo edited by admin key 'ops': revision " + before + " -> "
                + after + "; the edit: "), e.get("message"));
        assertTrue(e.get("message").contains("\"strategy\":\"weighted\""), e.get("message"));
    }

    @Test
    void pinsAndUnpinsSayWhichMemberWasPinnedBefore() {
        pin("duo-beta");
        assertAction("pin", "duo-beta", "none", "Pinned duo-beta by admin key 'ops': only it takes duo's traffic");
        pin("duo-alpha");
        assertAction("pin", "duo-alpha", "duo-beta", "(pinned before: duo-beta)");
        admin("a-acme").body("{\"alias\":\"duo\"}").post("/admin/members/unpin").then().statusCode(200);
        assertAction("unpin", "", "duo-alpha", "Unpinned duo by admin key 'ops' (pinned before: duo-alpha)");
        // unpinning an alias with nothing pinned, or pinning the pinned member again, changes nothing and records
        // nothing ("Unpinned duo ... (pinned before: none)"; hunt28), as a drain of a drained member
        String id = newest().get("id");
        admin("a-acme").body("{\"alias\":\"duo\"}").post("/admin/members/unpin").then().statusCode(200);
        assertEquals(id, newest().get("id"));
        pin("duo-beta");
        id = newest().get("id");
        pin("duo-beta");
        assertEquals(id, newest().get("id"));
    }

    @Test
    void drainsAndUndrainsSayWhatTheMemberWas() {
        drain("duo-beta", true);
        assertAction("drain", "duo-beta", "serving", "Drained duo-beta by admin key 'ops' (it was serving).");
        drain("duo-beta", false);
        assertAction("undrain", "duo-beta", "drained", "Undrained duo-beta by admin key 'ops' (it was drained).");
        // undraining a serving member changes nothing and records nothing ("Undrained ... (it was serving)"; hunt14)
        String id = newest().get("id");
        drain("duo-beta", false);
        assertEquals(id, newest().get("id"));
    }

    @Test
    void standingAndVerificationSayTheValueTheyReplaced() {
        admin("a-acme").body("{\"route\":\"duo-alpha\",\"standing\":\"suspended\"}").put("/admin/routes/standing")
                .then().statusCode(200);
        assertAction("standing", "duo-alpha", "good",
                "The standing of duo-alpha set to 'suspended' by admin key 'ops' (it was 'good').");
        admin("a-acme").body("{\"route\":\"duo-alpha\",\"verification\":\"fail:wrong answer\"}")
                .put("/admin/routes/verification").then().statusCode(200);
        assertAction("verification", "duo-alpha", "pass",
                "The verification of duo-alpha set to 'fail:wrong answer' by admin key 'ops' (it was 'pass').");
    }

    @Test
    void aRefusedActionWritesNoEventAndAnotherOrgSeesNone() {
        pin("duo-beta");
        String id = newest().get("id");
        admin("a-acme").body("{\"route\":\"nope\"}").post("/admin/members/pin").then().statusCode(404);
        admin("a-acme").body("{\"route\":\"duo-alpha\",\"standing\":\"meh\"}").put("/admin/routes/standing").then()
                .statusCode(400);
        admin("a-acme").body("{\"strategy\": \"Weighted\"}").put("/admin/groups/duo").then().statusCode(400);
        admin("a-acme").body("{\"route\":\"duo-alpha\",\"drained\":\"yes\"}").post("/admin/members/drain").then()
                .statusCode(400);
        assertEquals(id, newest().get("id"), "no refused action is in the audit log");
        admin("a-other").get("/admin/audit?type=admin&limit=1000").then().statusCode(200)
                .body("events.id", not(hasItem(id)));
    }

    /**
     * Operators' actions are kept in a stream of their own so that requests cannot push them out, and type=admin
     * reads that stream: it read the newest events of both and filtered them, so a few dozen refused requests (any
     * client key can make them, free) hid every operator action from it (found by hunt21).
     */
    @Test
    void refusedRequestsDoNotHideOperatorsActions() {
        pin("duo-beta");
        String id = newest().get("id");
        for (int i = 0; i < 40; i++) {
            given().auth().oauth2("k-acme").contentType("application/json")
                    .body("{\"model\":\"duo\",\"temperature\":7,\"messages\":[{\"role\":\"user\",\"content\":\"x\"}]}")
                    .post("/v1/chat/completions").then().statusCode(400);
        }
        assertEquals(id, newest().get("id"), "the operator's action is still found");
        admin("a-acme").get("/admin/audit?type=blocked&alias=duo&limit=5").then().statusCode(200)
                .body("events.size()", org.hamcrest.Matchers.equalTo(5))
                .body("events.type", org.hamcrest.Matchers.everyItem(org.hamcrest.Matchers.equalTo("blocked")));
    }

    /**
     * A value an admin gives (a verification verdict's reason) is logged as one field: a line break and an escape
     * sequence in it forged a log line that looked like another org's action (found by hunt21).
     */
    @Test
    void anAdminsFreeTextCannotForgeALogLine() {
        String forged = "fail:x\n2026-12-04 14:51:41,611 INFO [dev.hedgerow.audit] admin org=beta action=drain"
                + " route=b-one by=bops was=serving\u001b[31m";
        try (dev.hedgerow.testsupport.LogCapture logs = new dev.hedgerow.testsupport.LogCapture()) {
            admin("a-acme").body(dev.hedgerow.api.Json.MAPPER.createObjectNode().put("route", "duo-alpha")
                    .put("verification", forged).toString()).put("/admin/routes/verification").then().statusCode(200);
            admin("a-acme").body("{\"route\":\"duo-alpha\",\"verification\":\"pass\"}")
                    .put("/admin/routes/verification").then().statusCode(200);
            List<String> lines = logs.lines().stream().filter(l -> l.contains("action=verification")).toList();
            assertTrue(lines.size() >= 2, String.join("\n", logs.lines()));
            for (String l : lines) {
                assertTrue(!l.contains("\n") && !l.contains("\u001b"), "one line, no escape sequence: " + l);
            }
        }
    }

    private static void pin(String route) {
        admin("a-acme").body("{\"route\":\"" + route + "\"}").post("/admin/members/pin").then().statusCode(200);
    }

    private static void drain(String route, boolean drained) {
        admin("a-acme").body("{\"route\":\"" + route + "\",\"drained\":" + drained + "}").post("/admin/members/drain")
                .then().statusCode(200);
    }

    private static void assertAction(String action, String route, String previous, String says) {
        Map<String, String> e = newest();
        assertEquals("admin", e.get("type"));
        assertEquals(action, e.get("action"), e.toString());
        assertEquals("acme", e.get("org"));
        assertEquals("duo", e.get("alias"));
        assertEquals(route, e.get("route"));
        assertEquals("ops", e.get("admin_key"));
        assertEquals(previous, e.get("previous_state"), e.toString());
        org.hamcrest.MatcherAssert.assertThat(e.get("message"), containsString(says));
    }

    /** The newest admin event of the duo group. */
    private static Map<String, String> newest() {
        JsonPath events = admin("a-acme").get("/admin/audit?type=admin&alias=duo&limit=1").then().statusCode(200)
                .extract().jsonPath();
        return events.getMap("events[0]", String.class, String.class);
    }

    static RequestSpecification admin(String key) {
        return given().auth().oauth2(key).contentType("application/json");
    }
}
