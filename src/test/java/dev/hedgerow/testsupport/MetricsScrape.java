package dev.hedgerow.testsupport;

import static io.restassured.RestAssured.given;

/** The running application's Prometheus scrape ({@code GET /q/metrics}), as Prometheus reads it. */
public final class MetricsScrape {
    private MetricsScrape() {
    }

    /** The whole scrape; fails the test unless it answers 200. */
    public static String text() {
        return given().get("/q/metrics").then().statusCode(200).extract().asString();
    }
}
