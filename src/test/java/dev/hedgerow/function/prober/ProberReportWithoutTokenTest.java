package dev.hedgerow.function.prober;

import com.fasterxml.jackson.databind.JsonNode;
import dev.hedgerow.testsupport.AppTestResource;
import io.quarkus.test.junit.QuarkusTest;
import io.quarkus.test.junit.QuarkusTestProfile;
import io.quarkus.test.junit.TestProfile;
import io.restassured.response.Response;
import org.junit.jupiter.api.Test;

import java.util.List;
import java.util.Map;

import static io.restassured.RestAssured.given;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * A deployment with a catalog file and no {@code HEDGEROW_PROBER_TOKEN}: {@code POST /prober/run} runs a round for
 * anyone (a schedule sends no token) but answers only its counts, and a caller presenting a token, which cannot be
 * checked, gets 403 {@code prober_token_not_set} saying what to set. Before, everyone got every org's route ids,
 * outcomes and verdicts. (The bundled demo, one made-up org, still answers the full report.)
 */
@QuarkusTest
@TestProfile(ProberReportWithoutTokenTest.NoToken.class)
class ProberReportWithoutTokenTest {
    /** The app the suite's resource starts, without its prober token. */
    public static class NoToken implements QuarkusTestProfile {
        @Override
        public boolean disableGlobalTestResources() {
            return true;
        }

        @Override
        public List<TestResourceEntry> testResources() {
            return List.of(new TestResourceEntry(AppTestResource.class,
                    Map.of(AppTestResource.PROBER_TOKEN_ARG, "")));
        }
    }

    @Test
    void anyoneGetsOnlyTheCountsAndATokenIsRefusedSayingWhatToSet() throws Exception {
        Response anonymous = given().post("/prober/run");
        assertEquals(200, anonymous.statusCode(), anonymous.asString());
        String body = anonymous.asString();
        for (String name : List.of("acme", "other", "alpha", "beta", "gamma", "kimi", "solo", "sdk", "secret")) {
            assertFalse(body.contains(name), "an anonymous caller is told '" + name + "': " + body);
        }
        JsonNode summary = ProberReportAccessTest.JSON.readTree(body);
        assertTrue(summary.path("ran").asBoolean(), body);
        assertTrue(summary.path("counts").path("routes").asInt() > 0, body);
        assertTrue(summary.path("details").asText().contains("HEDGEROW_PROBER_TOKEN"), body);

        for (String token : new String[]{AppTestResource.PROBER_TOKEN, "a-acme", "k-acme"}) {
            Response r = given().auth().oauth2(token).post("/prober/run");
            assertEquals(403, r.statusCode(), token + ": " + r.asString());
            JsonNode error = ProberReportAccessTest.JSON.readTree(r.asString()).path("error");
            assertEquals("permission_error", error.path("type").asText(), r.asString());
            assertEquals("prober_token_not_set", error.path("code").asText(), r.asString());
            assertTrue(error.path("message").asText().contains("HEDGEROW_PROBER_TOKEN"), r.asString());
        }
    }
}
