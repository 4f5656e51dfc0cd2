package dev.hedgerow.function;

import dev.hedgerow.testsupport.AppTestResource;
import io.quarkus.test.common.QuarkusTestResource;
import io.quarkus.test.junit.QuarkusTest;
import org.junit.jupiter.api.Test;

import static io.restassured.RestAssured.given;
import static org.hamcrest.Matchers.containsString;
import static org.hamcrest.Matchers.equalTo;
import static org.hamcrest.Matchers.not;

/**
 * {@code /q/metrics} names every org, alias and route with its traffic: on the real application (a catalog file,
 * {@code hedgerow.metrics.token} set) only a scrape with that token reads it; a client key of an org does not.
 */
@QuarkusTest
@QuarkusTestResource(value = AppTestResource.class, restrictToAnnotatedClass = false)
class MetricsAccessTest {

    @Test
    void onlyTheMetricsTokenReadsTheMetrics() {
        // some traffic of two orgs, so the scrape would name both
        given().auth().oauth2("k-acme").get("/v1/models").then().statusCode(200);
        given().auth().oauth2("k-other").get("/v1/models").then().statusCode(200);

        given().get("/q/metrics").then().statusCode(401)
                .body("error.code", equalTo("invalid_api_key"))
                .body("error.message", containsString("the metrics token (HEDGEROW_METRICS_TOKEN)"))
                .body(not(containsString("org=\"acme\"")));
        given().head("/q/metrics").then().statusCode(401);
        for (String key : new String[]{"k-acme", "a-acme", AppTestResource.PROBER_TOKEN, "metrics-test-toke"}) {
            given().auth().oauth2(key).get("/q/metrics").then().statusCode(401);
        }
        given().auth().oauth2(AppTestResource.METRICS_TOKEN).get("/q/metrics").then().statusCode(200)
                .body(containsString("hedgerow_requests_total{alias=\"_none\",org=\"acme\",status=\"200\"}"))
                .body(containsString("org=\"other\""));
        // probes stay open: Knative's and the Lambda Web Adapter's checks send no token
        given().get("/q/health/ready").then().statusCode(200);
    }
}
