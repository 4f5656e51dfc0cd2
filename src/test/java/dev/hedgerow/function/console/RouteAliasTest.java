package dev.hedgerow.function.console;

import dev.hedgerow.function.HedgerowApp;
import dev.hedgerow.state.StateStore;
import dev.hedgerow.testsupport.AppTestResource;
import dev.hedgerow.testsupport.GatewayHarness;
import dev.hedgerow.testsupport.RedisStores;
import io.quarkus.test.common.QuarkusTestResource;
import io.quarkus.test.junit.QuarkusTest;
import io.restassured.path.json.JsonPath;
import io.restassured.response.Response;
import io.vertx.core.Vertx;
import jakarta.inject.Inject;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

import java.time.Duration;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import java.util.concurrent.TimeUnit;

import static dev.hedgerow.testsupport.Eventually.eventually;
import static io.restassured.RestAssured.given;
import static org.hamcrest.Matchers.containsString;
import static org.hamcrest.Matchers.equalTo;
import static org.hamcrest.Matchers.hasItem;
import static org.hamcrest.Matchers.not;
import static org.hamcrest.Matchers.nullValue;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;

/**
 * {@code PUT /admin/routes/alias} on the real application and a real Redis: a route attached to an alias joins its
 * group, which then serves it; the alias it left goes with its settings when it was its only member; refusals are
 * OpenAI envelopes naming the field and save nothing; every move is an audit event; the balancer's position and the
 * members' health memory survive it; another instance, and one started afterwards from the same file, see it. Every
 * test starts from the catalog file's {@code crew} (alpha's {@code crew-alpha} alone) and {@code recruit} (beta's
 * {@code recruit-beta} alone, hedging off).
 */
@QuarkusTest
@QuarkusTestResource(value = AppTestResource.class, restrictToAnnotatedClass = false)
class RouteAliasTest {
    @Inject
    HedgerowApp app;

    StateStore store() {
        return app.core().store();
    }

    @BeforeEach
    void crewAndRecruitAsFiled() {
        String recruitOf = admin().get("/admin/groups/crew").jsonPath().getList("members.route").contains(
                "recruit-beta") ? "crew" : "recruit";
        if (recruitOf.equals("crew")) {
            move("{\"route\": \"recruit-beta\", \"alias\": \"recruit\", \"new_alias\": true}").then().statusCode(200);
        }
        admin().body("{\"hedging\": false, \"members\": [{\"route\": \"recruit-beta\", \"weight\": 100,"
                + " \"priority\": 1}]}").put("/admin/groups/recruit").then().statusCode(200);
        admin().body("{\"members\": [{\"route\": \"crew-alpha\", \"weight\": 100, \"priority\": 1}]}")
                .put("/admin/groups/crew").then().statusCode(200);
        for (String r : List.of("crew-alpha", "recruit-beta")) {
            store().resetHealth("acme/" + r).await().atMost(Duration.ofSeconds(5));
        }
    }

    static io.restassured.specification.RequestSpecification admin() {
        return given().auth().oauth2("a-acme").contentType("application/json");
    }

    static Response move(String body) {
        return admin().body(body).put("/admin/routes/alias");
    }

    static Response chat(String alias) {
        return given().auth().oauth2("k-acme").contentType("application/json")
                .body("{\"model\":\"" + alias + "\",\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}]}")
                .post("/v1/chat/completions");
    }

    static Set<String> providersServing(String alias, int n) {
        Set<String> out = new HashSet<>();
        for (int i = 0; i < n; i++) {
            Response r = chat(alias);
            assertEquals(200, r.statusCode(), r.asString());
            out.add(r.path("provider"));
        }
        return out;
    }

    @Test
    void aRouteAttachedToAnAliasJoinsItsGroupWhichThenServesIt() {
        assertEquals(Set.of("alpha"), providersServing("crew", 4), "crew is a pinned route on alpha");
        String before = admin().get("/admin/groups/crew").path("revision");

        Response moved = move("{\"route\": \"recruit-beta\", \"alias\": \"crew\"}");
        moved.then().statusCode(200)
                .body("route", equalTo("recruit-beta")).body("alias", equalTo("crew"))
                .body("previous_alias", equalTo("recruit"))
                .body("group.alias", equalTo("crew"))
                .body("group.members.route", equalTo(List.of("crew-alpha", "recruit-beta")))
                .body("group.members.provider", equalTo(List.of("alpha", "beta")));
        String after = moved.path("group.revision");
        assertNotEquals(before, after, "the group's revision changes with its members");
        assertEquals("\"" + after + "\"", moved.header("ETag"));
        admin().get("/admin/groups/crew").then().body("revision", equalTo(after))
                .body("members.route", equalTo(List.of("crew-alpha", "recruit-beta")));

        // rr_health rotates over both members: the route attached really serves the group's requests
        assertEquals(Set.of("alpha", "beta"), providersServing("crew", 4));
    }

    @Test
    void anAliasItsOnlyMemberLeftIsRemovedWithItsSettingsAndComesBackWithDefaults() {
        move("{\"route\": \"recruit-beta\", \"alias\": \"crew\"}").then().statusCode(200)
                .body("removed_alias", equalTo("recruit")).body("previous_group", nullValue());
        admin().get("/admin/groups").then().body("groups.alias", not(hasItem("recruit")));
        admin().get("/admin/groups/recruit").then().statusCode(404).body("error.code", equalTo("not_found"));
        chat("recruit").then().statusCode(404).body("error.code", equalTo("model_not_found"));

        // moved back, it is the only member of a new alias of that name: a pinned route, with the default settings
        move("{\"route\": \"recruit-beta\", \"alias\": \"recruit\", \"new_alias\": true}").then().statusCode(200)
                .body("group.members.route", equalTo(List.of("recruit-beta")))
                .body("group.settings.hedging", equalTo(true))
                .body("removed_alias", nullValue())
                .body("previous_group.members.route", equalTo(List.of("crew-alpha")));
        assertEquals(Set.of("beta"), providersServing("recruit", 2));
        assertEquals(Set.of("alpha"), providersServing("crew", 4));
    }

    @Test
    void aMoveGivesTheRouteTheWeightAndPriorityAskedForInItsNewGroup() {
        move("{\"route\": \"recruit-beta\", \"alias\": \"crew\", \"weight\": 7, \"priority\": 2}").then()
                .statusCode(200).body("group.members.find { it.route == 'recruit-beta' }.weight", equalTo(7))
                .body("group.members.find { it.route == 'recruit-beta' }.priority", equalTo(2));
        // a route "moved" to the alias it has stays where it is among the members, with the weight given
        move("{\"route\": \"crew-alpha\", \"alias\": \"crew\", \"weight\": 3}").then().statusCode(200)
                .body("group.members.route", equalTo(List.of("crew-alpha", "recruit-beta")))
                .body("group.members.weight", equalTo(List.of(3, 7)))
                .body("removed_alias", nullValue()).body("previous_group", nullValue());
    }

    @Test
    void aPinnedRouteLeavesItsPinBehind() {
        admin().body("{\"route\": \"recruit-beta\"}").post("/admin/members/pin").then().statusCode(200)
                .body("members[0].pinned", equalTo(true));
        move("{\"route\": \"recruit-beta\", \"alias\": \"crew\"}").then().statusCode(200)
                .body("group.members.pinned", equalTo(List.of(false, false)));
        assertEquals(Set.of("alpha", "beta"), providersServing("crew", 4), "no member of crew is pinned");
    }

    @Test
    void everyMoveIsAnAdminAuditEventNamingTheAliasItLeft() {
        move("{\"route\": \"recruit-beta\", \"alias\": \"crew\"}").then().statusCode(200);
        JsonPath e = admin().get("/admin/audit?type=admin&alias=crew&limit=1").then().statusCode(200).extract()
                .jsonPath();
        assertEquals("move", e.getString("events[0].action"));
        assertEquals("recruit-beta", e.getString("events[0].route"));
        assertEquals("crew", e.getString("events[0].alias"));
        assertEquals("recruit", e.getString("events[0].previous_state"));
        assertEquals("ops", e.getString("events[0].admin_key"));
        String message = e.getString("events[0].message");
        assertEquals(true, message.contains("from alias recruit to crew"), message);
        assertEquals(true, message.contains("only member of recruit: that alias and its group settings were removed"), message);
    }

    @Test
    void refusedMovesAreEnvelopesNamingTheFieldAndSaveNothing() {
        String crew = admin().get("/admin/groups/crew").path("revision");
        int events = admin().get("/admin/audit?type=admin&limit=1000").jsonPath().getList("events").size();

        move("{\"route\": \"nope\", \"alias\": \"crew\"}").then().statusCode(404)
                .body("error.code", equalTo("not_found")).body("error.param", equalTo("route"));
        // another org's route is no route of this one
        move("{\"route\": \"secret-gamma\", \"alias\": \"crew\"}").then().statusCode(404)
                .body("error.param", equalTo("route"));
        move("{\"route\": \"recruit-beta\", \"alias\": \"crewe\"}").then().statusCode(404)
                .body("error.code", equalTo("not_found")).body("error.param", equalTo("alias"))
                .body("error.message", containsString("new_alias"));
        move("{\"route\": \"recruit-beta\", \"alias\": \"crew\", \"new_alias\": true}").then().statusCode(400)
                .body("error.code", equalTo("alias_exists")).body("error.param", equalTo("new_alias"));
        move("{\"route\": \"recruit-beta\", \"alias\": \"crew\", \"new_alias\": \"yes\"}").then().statusCode(400)
                .body("error.param", equalTo("new_alias"));
        move("{\"route\": \"recruit-beta\", \"alias\": \"no good!\", \"new_alias\": true}").then().statusCode(400)
                .body("error.code", equalTo("invalid_catalog")).body("error.param", equalTo("alias"))
                .body("error.errors[0].route", equalTo("recruit-beta"))
                .body("error.message", containsString("invalid alias"));
        // spaces around a name (an em space too) are no part of an alias: "crew " made a second group looking like
        // crew that no group edit could reach, as the loader judged it stripped (found by hunt13)
        for (String spaced : new String[] {"crew ", "\\u2003crew", " fresh"}) {
            move("{\"route\": \"recruit-beta\", \"alias\": \"" + spaced + "\", \"new_alias\": true}").then()
                    .statusCode(400).body("error.code", equalTo("invalid_catalog"))
                    .body("error.param", equalTo("alias")).body("error.errors[0].route", equalTo("recruit-beta"))
                    .body("error.message", containsString("invalid alias"));
        }
        // a name whose dot segments a client writing its slash as is would resolve to /admin/whoami
        move("{\"route\": \"recruit-beta\", \"alias\": \"a/../../whoami\", \"new_alias\": true}").then()
                .statusCode(400).body("error.code", equalTo("invalid_catalog")).body("error.param", equalTo("alias"))
                .body("error.message", containsString("no . or .. or empty segment"));
        // the file's rule: chat and embeddings routes never share an alias
        move("{\"route\": \"recruit-beta\", \"alias\": \"vectors\"}").then().statusCode(400)
                .body("error.code", equalTo("invalid_catalog")).body("error.param", equalTo("alias"))
                .body("error.message", containsString("mixes embeddings and chat routes"));
        // the field at fault, not the alias (found by hunt5)
        move("{\"route\": \"recruit-beta\", \"alias\": \"crew\", \"weight\": -1}").then().statusCode(400)
                .body("error.code", equalTo("invalid_catalog")).body("error.param", equalTo("weight"));
        move("{\"route\": \"recruit-beta\", \"alias\": \"crew\", \"priority\": -1}").then().statusCode(400)
                .body("error.code", equalTo("invalid_catalog")).body("error.param", equalTo("priority"));
        move("{\"route\": \"recruit-beta\", \"alais\": \"crew\"}").then().statusCode(400)
                .body("error.code", equalTo("unknown_field")).body("error.param", equalTo("alais"));
        move("{\"route\": \"recruit-beta\"}").then().statusCode(400).body("error.param", equalTo("alias"));
        // the other org's duo is also named pair (routing.aliases): moving its only route would orphan that name
        given().auth().oauth2("a-other").contentType("application/json")
                .body("{\"route\": \"duo-alpha\", \"alias\": \"secret\"}").put("/admin/routes/alias").then()
                .statusCode(400).body("error.code", equalTo("alias_has_names")).body("error.message",
                        containsString("pair"));
        given().auth().oauth2("a-other").get("/admin/groups/duo").then().statusCode(200);
        admin().header("If-Match", "\"0000000000000000\"").body("{\"route\": \"recruit-beta\", \"alias\": \"crew\"}")
                .put("/admin/routes/alias").then().statusCode(412).body("error.code", equalTo("group_changed"));

        admin().get("/admin/groups/recruit").then().statusCode(200)
                .body("members.route", equalTo(List.of("recruit-beta")));
        admin().get("/admin/groups/crew").then().body("revision", equalTo(crew));
        assertEquals(events, admin().get("/admin/audit?type=admin&limit=1000").jsonPath().getList("events").size(),
                "a refused move writes no audit event");

        // If-Match with the group's current revision is applied
        admin().header("If-Match", "\"" + crew + "\"").body("{\"route\": \"recruit-beta\", \"alias\": \"crew\"}")
                .put("/admin/routes/alias").then().statusCode(200);
    }

    @Test
    void theBalancersPositionAndTheMembersHealthMemorySurviveAMove() {
        // a failure each on record (below crew's breaker: these only count), and the rotation's position
        store().recordFailure("acme/crew-alpha", 5, Duration.ofSeconds(60)).await().atMost(Duration.ofSeconds(5));
        store().recordFailure("acme/recruit-beta", 5, Duration.ofSeconds(60)).await().atMost(Duration.ofSeconds(5));
        long cursor = store().nextCursor("acme", "crew").await().atMost(Duration.ofSeconds(5));

        move("{\"route\": \"recruit-beta\", \"alias\": \"crew\"}").then().statusCode(200);

        assertEquals(cursor + 1, store().nextCursor("acme", "crew").await().atMost(Duration.ofSeconds(5)),
                "the group's rotation goes on from where it was");
        JsonPath health = admin().get("/admin/health?alias=crew").then().statusCode(200).extract().jsonPath();
        assertEquals(List.of("crew-alpha", "recruit-beta"), health.getList("groups[0].members.route"));
        assertEquals(List.of(1, 1), health.getList("groups[0].members.fails"),
                "the member that stayed and the one that came keep their failures on record");
    }

    /**
     * A move made through this instance's admin API is served by another instance on the same Redis without a
     * restart, and by an instance started afterwards from the same catalog file (the file is not published over it).
     */
    @Test
    void aMoveReachesAnotherInstanceAndOneStartedAfterIt() {
        Vertx v = Vertx.vertx();
        try (RedisStores.Opened redis2 = RedisStores.open(v, AppTestResource.redis().url());
             GatewayHarness other = GatewayHarness.start(v, AppTestResource.YAML, AppTestResource.sims(),
                     redis2.store(), dev.hedgerow.catalog.SecretBox.of(AppTestResource.SECRET_KEY))) {
            assertEquals(List.of("crew-alpha"), members(other));
            move("{\"route\": \"recruit-beta\", \"alias\": \"crew\"}").then().statusCode(200);
            eventually(() -> members(other).equals(List.of("crew-alpha", "recruit-beta")),
                    "the other instance has the move");
            Set<String> served = new HashSet<>();
            for (int i = 0; i < 4; i++) {
                served.add(given().baseUri(other.baseUrl()).auth().oauth2("k-acme").contentType("application/json")
                        .body("{\"model\":\"crew\",\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}]}")
                        .post("/v1/chat/completions").then().statusCode(200).extract().path("provider"));
            }
            assertEquals(Set.of("alpha", "beta"), served, "the other instance serves the group with both");

            try (RedisStores.Opened redis3 = RedisStores.open(v, AppTestResource.redis().url());
                 GatewayHarness restarted = GatewayHarness.start(v, AppTestResource.YAML, AppTestResource.sims(),
                         redis3.store(), dev.hedgerow.catalog.SecretBox.of(AppTestResource.SECRET_KEY))) {
                assertEquals(List.of("crew-alpha", "recruit-beta"), members(restarted));
                assertEquals(false, restarted.core().catalog().current().org("acme").orElseThrow().aliases()
                        .contains("recruit"));
            }
        } finally {
            v.close().toCompletionStage().toCompletableFuture().orTimeout(10, TimeUnit.SECONDS).join();
        }
    }

    private static List<String> members(GatewayHarness gw) {
        List<String> out = new ArrayList<>();
        gw.core().catalog().current().org("acme").orElseThrow().routesOf("crew").forEach(r -> out.add(r.id()));
        return out;
    }
}
