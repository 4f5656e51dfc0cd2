package dev.hedgerow.function;

import dev.hedgerow.routing.LearnedModels;
import dev.hedgerow.sim.SimText;
import dev.hedgerow.state.StateKeys;
import dev.hedgerow.testsupport.AppTestResource;
import dev.hedgerow.testsupport.Resp;
import dev.hedgerow.testsupport.Sse;
import io.quarkus.test.junit.QuarkusTest;
import io.quarkus.test.junit.QuarkusTestProfile;
import io.quarkus.test.junit.TestProfile;
import org.junit.jupiter.api.Test;

import java.io.IOException;
import java.util.List;
import java.util.Map;

import static dev.hedgerow.testsupport.Eventually.eventually;
import static io.restassured.RestAssured.given;
import static org.junit.jupiter.api.Assertions.assertEquals;

/**
 * The real application with {@code REDIS_URL=rediss://...} and {@code HEDGEROW_REDIS_TLS_CA}, on a Redis that takes
 * TLS (as ElastiCache Serverless takes nothing else): it serves on shared state, and what it learns is in that Redis.
 * It never connected before (Vert.x 4.5 refuses a TLS client that has not said which hostname check it wants), and
 * readiness said "degraded" while every instance kept its own state (found by hunt15).
 */
@QuarkusTest
@TestProfile(RedisTlsAppTest.OnTls.class)
class RedisTlsAppTest {
    public static class OnTls implements QuarkusTestProfile {
        @Override
        public boolean disableGlobalTestResources() {
            return true;
        }

        @Override
        public List<TestResourceEntry> testResources() {
            return List.of(new TestResourceEntry(AppTestResource.class, Map.of(AppTestResource.TLS_ARG, "true")));
        }
    }

    static String stored(String key) {
        try {
            return Resp.command(AppTestResource.redis().port(), "GET", key);
        } catch (IOException e) {
            return null;
        }
    }

    @Test
    void theAppServesOnSharedStateOverTls() {
        String out = given().auth().oauth2("k-acme").contentType("application/json")
                .body("{\"model\":\"solo\",\"stream\":true,\"messages\":[{\"role\":\"user\",\"content\":\"over tls\"}]}")
                .post("/v1/chat/completions").then().statusCode(200).extract().asString();
        assertEquals(SimText.expected(AppTestResource.SEED, "over tls", 24), Sse.content(out));
        String body = given().get("/q/health/ready").then().statusCode(200).extract().asString();
        Map<String, Object> state = io.restassured.path.json.JsonPath.from(body)
                .getMap("checks.find { it.name == 'hedgerow-state' }.data");
        assertEquals("shared", state.get("state"), body);
        assertEquals("up", state.get("redis"), body);
        eventually(() -> stored(StateKeys.routeBlob("acme/solo-alpha", LearnedModels.TTFT)) != null,
                "what the request taught is in the TLS Redis");
    }
}
