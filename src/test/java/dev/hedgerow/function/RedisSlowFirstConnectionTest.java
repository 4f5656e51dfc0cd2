package dev.hedgerow.function;

import dev.hedgerow.sim.SimText;
import dev.hedgerow.state.StateKeys;
import dev.hedgerow.testsupport.AppTestResource;
import dev.hedgerow.testsupport.Resp;
import dev.hedgerow.testsupport.Sse;
import io.quarkus.test.junit.QuarkusTest;
import io.quarkus.test.junit.QuarkusTestProfile;
import io.quarkus.test.junit.TestProfile;
import io.restassured.path.json.JsonPath;
import org.junit.jupiter.api.Test;

import java.io.IOException;
import java.util.List;
import java.util.Map;

import static io.restassured.RestAssured.given;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;

/**
 * The real application whose first Redis connection takes 1.5 s to reach Redis (a relay holds it), as a cold start's
 * first connection to a TLS Redis Cluster took 0.7–1.1 s here (the JVM's TLS stack starting, the handshake, the slot
 * map, a connection per master): longer than the outage guard's 1 s. The app opens its connections before the
 * catalog's publish, so its first guarded call finds one open: the catalog is in Redis and nothing was answered from
 * local state. Before, the publish timed out, went to local state and counted against the breaker on every such
 * cold start.
 */
@QuarkusTest
@TestProfile(RedisSlowFirstConnectionTest.SlowFirstConnection.class)
class RedisSlowFirstConnectionTest {
    public static class SlowFirstConnection implements QuarkusTestProfile {
        @Override
        public boolean disableGlobalTestResources() {
            return true;
        }

        @Override
        public List<TestResourceEntry> testResources() {
            return List.of(new TestResourceEntry(AppTestResource.class,
                    Map.of(AppTestResource.SLOW_FIRST_CONNECTION_ARG, "1500")));
        }
    }

    static String storedVersion(String orgId) throws IOException {
        return Resp.command(AppTestResource.redis().port(), "HGET", StateKeys.catalog(orgId), "version");
    }

    @Test
    void aSlowFirstConnectionIsOpenedBeforeTheFirstGuardedCall() throws IOException {
        String body = given().get("/q/health/ready").then().statusCode(200).extract().asString();
        Map<String, Object> state = JsonPath.from(body).getMap("checks.find { it.name == 'hedgerow-state' }.data");
        assertEquals("shared", state.get("state"), body);
        assertEquals("CLOSED", state.get("breaker"), body);
        assertEquals(0, ((Number) state.get("fallbacks")).intValue(), "no call was answered locally: " + body);
        assertEquals(0, ((Number) state.get("pending_edits")).intValue(), body);
        assertNotNull(storedVersion("acme"), "the startup publish reached Redis");

        String out = given().auth().oauth2("k-acme").contentType("application/json")
                .body("{\"model\":\"solo\",\"stream\":true,\"messages\":[{\"role\":\"user\",\"content\":\"cold\"}]}")
                .post("/v1/chat/completions").then().statusCode(200).extract().asString();
        assertEquals(SimText.expected(AppTestResource.SEED, "cold", 24), Sse.content(out));
    }
}
