package dev.hedgerow.function;

import dev.hedgerow.testsupport.AppTestResource;
import io.quarkus.test.junit.QuarkusTest;
import io.quarkus.test.junit.QuarkusTestProfile;
import io.quarkus.test.junit.TestProfile;
import org.junit.jupiter.api.Test;

import java.util.List;
import java.util.Map;

import static io.restassured.RestAssured.given;
import static org.hamcrest.Matchers.containsString;
import static org.hamcrest.Matchers.equalTo;

/**
 * A deployment with a catalog file and no {@code HEDGEROW_METRICS_TOKEN} serves no metrics on its public URL: 403
 * {@code metrics_token_not_set}, which says what to set, for everyone. (The bundled demo's stay open:
 * {@code DemoMetricsTest}.)
 */
@QuarkusTest
@TestProfile(MetricsClosedTest.NoToken.class)
class MetricsClosedTest {
    /**
     * The app the suite's resource starts, without its metrics token (a blank override would not do: a blank value
     * is not set, and the resource's token below it would decide).
     */
    public static class NoToken implements QuarkusTestProfile {
        @Override
        public boolean disableGlobalTestResources() {
            return true;
        }

        @Override
        public List<TestResourceEntry> testResources() {
            return List.of(new TestResourceEntry(AppTestResource.class,
                    Map.of(AppTestResource.METRICS_TOKEN_ARG, "")));
        }
    }

    @Test
    void withoutATokenTheMetricsAreClosed() {
        for (String key : new String[]{null, "k-acme", "a-acme", "metrics-test-token"}) {
            (key == null ? given() : given().auth().oauth2(key)).get("/q/metrics").then().statusCode(403)
                    .body("error.code", equalTo("metrics_token_not_set"))
                    .body("error.message", containsString("HEDGEROW_METRICS_TOKEN"));
        }
        given().get("/q/health/ready").then().statusCode(200);
    }
}
