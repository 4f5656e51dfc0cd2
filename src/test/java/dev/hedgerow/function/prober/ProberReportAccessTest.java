package dev.hedgerow.function.prober;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.hedgerow.testsupport.AppTestResource;
import io.restassured.response.Response;
import org.junit.jupiter.api.Test;

import java.util.Set;
import java.util.TreeSet;

import static io.restassured.RestAssured.given;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Who sees what of {@code POST /prober/run} when the prober token is set: the token's holder the full report, a
 * caller without {@code Authorization} (a schedule, or anyone who reaches the public prober URL) a round's counts and
 * no org, route, provider or model id, a wrong token 401 in the OpenAI envelope. Before, the token's absence was a 401
 * too, so a schedule could not run rounds with a token set, and with none set everyone read every org's routes.
 */
@io.quarkus.test.junit.QuarkusTest
class ProberReportAccessTest {
    static final ObjectMapper JSON = new ObjectMapper();

    @Test
    void theTokenGetsTheFullReportAndNoAuthorizationOnlyItsCountsWithNoIdOfAnyOrg() throws Exception {
        Response full = given().auth().oauth2(AppTestResource.PROBER_TOKEN).post("/prober/run");
        assertEquals(200, full.statusCode(), full.asString());
        JsonNode report = JSON.readTree(full.asString());
        assertTrue(report.path("ran").asBoolean(), full.asString());
        Set<String> names = namesIn(report);
        assertTrue(names.containsAll(Set.of("acme", "other", "kimi3-alpha", "secret-gamma")), names.toString());

        Response anonymous = given().post("/prober/run");
        assertEquals(200, anonymous.statusCode(), anonymous.asString());
        String body = anonymous.asString();
        for (String name : names) {
            assertFalse(body.contains(name), "an anonymous caller is told '" + name + "': " + body);
        }
        JsonNode summary = JSON.readTree(body);
        assertTrue(summary.path("ran").asBoolean(), body);
        assertFalse(summary.has("routes") || summary.has("scrapes"), body);
        JsonNode counts = summary.path("counts");
        assertEquals(report.path("routes").size(), counts.path("routes").asInt(), body);
        assertEquals(counts.path("routes").asInt(), counts.path("ok").asInt() + counts.path("slow").asInt()
                + counts.path("failed").asInt() + counts.path("refused").asInt() + counts.path("skipped").asInt(),
                body);
        assertTrue(counts.path("ok").asInt() > 0, body);
        assertEquals(report.path("scrapes").size(), counts.path("scrapes").asInt(), body);
        assertTrue(summary.path("details").asText().contains("HEDGEROW_PROBER_TOKEN"), body);
    }

    @Test
    void aWrongTokenIs401InTheEnvelope() throws Exception {
        for (String authorization : new String[]{"Bearer not-the-prober-token", "Basic cHJvYmVyOnRva2Vu",
                "Bearer " + AppTestResource.PROBER_TOKEN + "x"}) {
            Response r = given().header("Authorization", authorization).post("/prober/run");
            assertEquals(401, r.statusCode(), authorization + ": " + r.asString());
            JsonNode error = JSON.readTree(r.asString()).path("error");
            assertEquals("invalid_request_error", error.path("type").asText(), r.asString());
            assertEquals("invalid_api_key", error.path("code").asText(), r.asString());
            assertTrue(error.path("message").asText().contains("the prober token (HEDGEROW_PROBER_TOKEN)"),
                    r.asString());
            assertFalse(r.asString().contains("acme"), r.asString());
        }
    }

    /** Every org, route, provider and model id a full report names. */
    static Set<String> namesIn(JsonNode report) {
        Set<String> names = new TreeSet<>();
        report.path("routes").forEach(r -> {
            names.add(r.path("org").asText());
            names.add(r.path("route").asText());
        });
        report.path("scrapes").forEach(s -> {
            names.add(s.path("org").asText());
            names.add(s.path("provider").asText());
            s.path("routes").forEach(id -> names.add(id.asText()));
        });
        names.addAll(Set.of("kimi-a", "kimi-b", "solo-a", "sdk-a", "sdk-b", "gamma"));
        names.remove("");
        return names;
    }
}
