package dev.hedgerow.function;

import dev.hedgerow.sim.SimText;
import dev.hedgerow.testsupport.AppTestResource;
import dev.hedgerow.testsupport.MetricsScrape;
import dev.hedgerow.testsupport.Sse;
import io.quarkus.test.common.QuarkusTestResource;
import io.quarkus.test.junit.QuarkusTest;
import jakarta.inject.Inject;
import org.junit.jupiter.api.Test;

import static io.restassured.RestAssured.given;
import static org.hamcrest.Matchers.equalTo;
import static org.hamcrest.Matchers.hasItems;
import static org.junit.jupiter.api.Assertions.assertEquals;

/** The real Quarkus application, on a real Redis, in front of simulators. */
@QuarkusTest
@QuarkusTestResource(value = AppTestResource.class, restrictToAnnotatedClass = false)
class AppWiringTest {

    @Inject
    HedgerowApp app;

    @Test
    void healthIsUp() {
        given().get("/q/health/live").then().statusCode(200);
        given().get("/q/health/ready").then().statusCode(200);
    }

    @Test
    void listsTheCallersAliases() {
        given().auth().oauth2("k-acme").get("/v1/models").then().statusCode(200)
                .body("data.id", hasItems("kimi3", "solo"));
    }

    @Test
    void streamsThroughTheRealApplicationOnRedis() {
        String out = given().auth().oauth2("k-acme").contentType("application/json")
                .body("{\"model\":\"solo\",\"stream\":true,\"messages\":[{\"role\":\"user\",\"content\":\"wired\"}]}")
                .post("/v1/chat/completions").then().statusCode(200).extract().asString();
        assertEquals(SimText.expected(AppTestResource.SEED, "wired", 24), Sse.content(out));
    }

    @Test
    void metricsCountRequests() {
        String requests = "hedgerow_requests_total{alias=\"solo\",org=\"acme\",status=\"200\"}";
        String attempts = "hedgerow_attempts_total{kind=\"primary\",org=\"acme\",outcome=\"success\","
                + "route=\"solo-alpha\"}";
        double requestsBefore = metric(requests);
        double attemptsBefore = metric(attempts);
        for (int i = 0; i < 3; i++) {
            given().auth().oauth2("k-acme").contentType("application/json")
                    .body("{\"model\":\"solo\",\"messages\":[{\"role\":\"user\",\"content\":\"count\"}]}")
                    .post("/v1/chat/completions").then().statusCode(200);
        }
        assertEquals(requestsBefore + 3, metric(requests), "each request counted once, on the same series");
        assertEquals(attemptsBefore + 3, metric(attempts));
    }

    /** The sum of the series in the Prometheus scrape whose line starts with {@code series} (0 when none). */
    static double metric(String series) {
        String scrape = MetricsScrape.text();
        double sum = 0;
        for (String line : scrape.split("\n")) {
            if (line.startsWith(series)) {
                sum += Double.parseDouble(line.substring(line.lastIndexOf(' ') + 1));
            }
        }
        return sum;
    }

    @Test
    void theJitWarmupGateCountsEveryFinishedRequest() {
        long before = app.finishedRequests();
        for (int i = 0; i < 3; i++) {
            given().auth().oauth2("k-acme").contentType("application/json")
                    .body("{\"model\":\"solo\",\"messages\":[{\"role\":\"user\",\"content\":\"warm\"}]}")
                    .post("/v1/chat/completions").then().statusCode(200);
        }
        given().auth().oauth2("k-acme").contentType("application/json")
                .body("{\"model\":\"no-such-alias\",\"messages\":[{\"role\":\"user\",\"content\":\"x\"}]}")
                .post("/v1/chat/completions").then().statusCode(404);
        assertEquals(before + 3, app.finishedRequests(),
                "three served; a request refused before dispatch never reached the core's observer");
    }

    @Test
    void pathAliasRoutingRuleWorks() {
        given().auth().oauth2("k-acme").contentType("application/json")
                .body("{\"messages\":[{\"role\":\"user\",\"content\":\"wired\"}]}")
                .post("/models/solo/v1/chat/completions").then().statusCode(200)
                .body("provider", equalTo("alpha"));
    }

    @Test
    void hugeHeadersGetA431InTheOpenAiEnvelope() {
        given().auth().oauth2("k-acme").contentType("application/json").header("x-junk", "j".repeat(100_000))
                .body("{\"model\":\"solo\",\"messages\":[{\"role\":\"user\",\"content\":\"x\"}]}")
                .post("/v1/chat/completions").then().statusCode(431)
                .body("error.code", equalTo("headers_too_large"));
    }
}
