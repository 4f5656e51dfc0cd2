package dev.hedgerow.testsupport;

import static io.restassured.RestAssured.given;

/**
 * The running application's Prometheus scrape ({@code GET /q/metrics}) as Prometheus reads it, with the metrics token
 * of {@link AppTestResource} (the demo, which has none, ignores it).
 */
public final class MetricsScrape {
    private MetricsScrape() {
    }

    /** The whole scrape; fails the test unless it answers 200. */
    public static String text() {
        return given().auth().oauth2(AppTestResource.METRICS_TOKEN).get("/q/metrics").then().statusCode(200).extract().asString();
    }
}
