package dev.hedgerow.function;

import dev.hedgerow.testsupport.AppTestResource;
import dev.hedgerow.testsupport.MetricsScrape;
import io.quarkus.test.common.QuarkusTestResource;
import io.quarkus.test.junit.QuarkusTest;
import io.restassured.specification.RequestSpecification;
import org.junit.jupiter.api.Test;

import java.util.Map;
import java.util.TreeMap;
import java.util.function.Supplier;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

import static dev.hedgerow.testsupport.Eventually.eventually;
import static io.restassured.RestAssured.given;
import static org.hamcrest.Matchers.equalTo;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * {@code hedgerow_requests_total{org,alias,status}} on the real application's {@code /q/metrics}: every request the
 * gateway answers is counted once with its status, refusals before dispatch included, and no label value comes from
 * the client.
 */
@QuarkusTest
@QuarkusTestResource(value = AppTestResource.class, restrictToAnnotatedClass = false)
class RequestMetricsTest {
    private static final Pattern SERIES = Pattern.compile("^hedgerow_requests_total\\{(.*)} ([0-9.eE+-]+)$");

    /** Every {@code hedgerow_requests_total} series of the scrape, by its label set. */
    static Map<String, Double> requests() {
        Map<String, Double> out = new TreeMap<>();
        for (String line : MetricsScrape.text().split("\n")) {
            Matcher m = SERIES.matcher(line);
            if (m.matches()) {
                out.put(m.group(1), Double.parseDouble(m.group(2)));
            }
        }
        return out;
    }

    private static double count(String org, String alias, int status) {
        return requests().getOrDefault("alias=\"" + alias + "\",org=\"" + org + "\",status=\"" + status + "\"", 0.0);
    }

    /** Runs {@code request} and checks that it moved the one series named by org, alias and status, by one. */
    private static void countedOnce(String org, String alias, int status, Supplier<Integer> request) {
        Map<String, Double> before = requests();
        assertEquals(status, request.get(), "the request's status");
        String series = "alias=\"" + alias + "\",org=\"" + org + "\",status=\"" + status + "\"";
        // dispatch counts a request it served as it ends, just after the answer's last byte went out: a scrape on
        // another connection can come first
        eventually(() -> requests().getOrDefault(series, 0.0) > before.getOrDefault(series, 0.0), "counted");
        Map<String, Double> after = requests();
        assertEquals(before.getOrDefault(series, 0.0) + 1, after.getOrDefault(series, 0.0),
                "counted once on " + series + ": " + after);
        double total = after.values().stream().mapToDouble(Double::doubleValue).sum()
                - before.values().stream().mapToDouble(Double::doubleValue).sum();
        assertEquals(1, total, "nothing else counted: " + before + " -> " + after);
    }

    private static RequestSpecification chat(String key) {
        return given().auth().oauth2(key).contentType("application/json");
    }

    @Test
    void refusalsBeforeDispatchAreCountedWithTheirStatus() {
        // a request the gateway serves, for comparison
        countedOnce("acme", "solo", 200, () -> chat("k-acme")
                .body("{\"model\":\"solo\",\"messages\":[{\"role\":\"user\",\"content\":\"counted\"}]}")
                .post("/v1/chat/completions").statusCode());
        // 400 no_capable_provider: solo's only route has no tools
        countedOnce("acme", "solo", 400, () -> chat("k-acme")
                .body("{\"model\":\"solo\",\"tools\":[{\"type\":\"function\",\"function\":{\"name\":\"f\","
                        + "\"parameters\":{\"type\":\"object\"}}}],"
                        + "\"messages\":[{\"role\":\"user\",\"content\":\"tools\"}]}")
                .post("/v1/chat/completions").then().body("error.code", equalTo("no_capable_provider"))
                .extract().statusCode());
        // 400 provider_excluded_all: the caller ignores solo's only provider
        countedOnce("acme", "solo", 400, () -> chat("k-acme")
                .body("{\"model\":\"solo\",\"provider\":{\"ignore\":[\"alpha\"]},"
                        + "\"messages\":[{\"role\":\"user\",\"content\":\"ignore\"}]}")
                .post("/v1/chat/completions").then().body("error.code", equalTo("provider_excluded_all"))
                .extract().statusCode());
        // 400 on a body that is not JSON: the alias is unknown, the org is the key's
        countedOnce("acme", GatewayMetrics.NONE, 400, () -> chat("k-acme").body("{not json")
                .post("/v1/chat/completions").statusCode());
        // 401 on a key no org has
        countedOnce(GatewayMetrics.NONE, GatewayMetrics.NONE, 401, () -> chat("k-nobody")
                .body("{\"model\":\"solo\",\"messages\":[{\"role\":\"user\",\"content\":\"who\"}]}")
                .post("/v1/chat/completions").statusCode());
        // 405 on the chat path, before any key is read
        countedOnce(GatewayMetrics.NONE, GatewayMetrics.NONE, 405, () -> given().auth().oauth2("k-acme")
                .get("/v1/chat/completions").statusCode());
        // the model list and a model the caller has
        countedOnce("acme", GatewayMetrics.NONE, 200, () -> given().auth().oauth2("k-acme").get("/v1/models")
                .statusCode());
        countedOnce("acme", "kimi3", 200, () -> given().auth().oauth2("k-acme").get("/v1/models/kimi3")
                .statusCode());
    }

    @Test
    void embeddingsRequestsAreCountedAsChatRequestsAre() {
        countedOnce("acme", "vectors", 200, () -> chat("k-acme").body("{\"model\":\"vectors\",\"input\":\"counted\"}")
                .post("/v1/embeddings").statusCode());
        // a chat alias on the embeddings path, and an embeddings alias on the chat path
        countedOnce("acme", "kimi3", 404, () -> chat("k-acme").body("{\"model\":\"kimi3\",\"input\":\"x\"}")
                .post("/v1/embeddings").then().body("error.code", equalTo("not_an_embeddings_model"))
                .extract().statusCode());
        countedOnce("acme", "vectors", 400, () -> chat("k-acme")
                .body("{\"model\":\"vectors\",\"input\":\"x\",\"provider\":{\"only\":[\"nobody\"]}}")
                .post("/v1/embeddings").then().body("error.code", equalTo("provider_not_in_group"))
                .extract().statusCode());
        countedOnce(GatewayMetrics.NONE, GatewayMetrics.NONE, 401, () -> chat("k-nobody")
                .body("{\"model\":\"vectors\",\"input\":\"x\"}").post("/v1/embeddings").statusCode());
        countedOnce(GatewayMetrics.NONE, GatewayMetrics.NONE, 405, () -> given().auth().oauth2("k-acme")
                .get("/v1/embeddings").statusCode());
    }

    @Test
    void anOutageCountsItsServiceUnavailableRefusals() {
        standing("solo-alpha", "suspended"); // solo's only route
        try {
            countedOnce("acme", "solo", 503, () -> chat("k-acme")
                    .body("{\"model\":\"solo\",\"messages\":[{\"role\":\"user\",\"content\":\"outage\"}]}")
                    .post("/v1/chat/completions").then().body("error.code", equalTo("no_healthy_provider"))
                    .extract().statusCode());
        } finally {
            standing("solo-alpha", "good");
        }
    }

    private static void standing(String route, String standing) {
        given().auth().oauth2("a-acme").contentType("application/json")
                .body("{\"route\":\"" + route + "\",\"standing\":\"" + standing + "\"}")
                .put("/admin/routes/standing").then().statusCode(200);
    }

    @Test
    void aClientCannotCreateLabelValues() {
        String made = "made-up-" + System.nanoTime();
        // an alias the caller does not have, in the body, the path and the retrieve
        countedOnce("acme", GatewayMetrics.NONE, 404, () -> chat("k-acme")
                .body("{\"model\":\"" + made + "\",\"messages\":[{\"role\":\"user\",\"content\":\"x\"}]}")
                .post("/v1/chat/completions").then().body("error.code", equalTo("model_not_found"))
                .extract().statusCode());
        countedOnce("acme", GatewayMetrics.NONE, 404, () -> chat("k-acme")
                .body("{\"messages\":[{\"role\":\"user\",\"content\":\"x\"}]}")
                .post("/models/" + made + "/v1/chat/completions").statusCode());
        countedOnce("acme", GatewayMetrics.NONE, 404, () -> given().auth().oauth2("k-acme")
                .get("/v1/models/" + made).statusCode());
        // another org's alias (org other's secret) named by acme's key
        countedOnce("acme", GatewayMetrics.NONE, 404, () -> chat("k-acme")
                .body("{\"model\":\"secret\",\"messages\":[{\"role\":\"user\",\"content\":\"x\"}]}")
                .post("/v1/chat/completions").statusCode());
        // an unknown key naming a real alias
        countedOnce(GatewayMetrics.NONE, GatewayMetrics.NONE, 401, () -> chat(made)
                .body("{\"model\":\"solo\",\"messages\":[{\"role\":\"user\",\"content\":\"x\"}]}")
                .post("/v1/chat/completions").statusCode());
        String scrape = MetricsScrape.text();
        assertTrue(!scrape.contains(made), "no series names the client's text");
        assertEquals(0, count("acme", "secret", 404), "acme's series never name another org's alias");
    }

    /**
     * Nor a made-up path refused before Quarkus matched it (an admin path without a key, a path over 8 KiB): each
     * was a series labelled with the path as sent, so anyone could add series of up to 64 KiB to every scrape until
     * Quarkus' cap of 100 URI labels kept real paths from getting theirs (found by hunt8).
     */
    @Test
    void aMadeUpPathRefusedBeforeMatchingAddsNoSeriesOfItsOwn() {
        for (int i = 0; i < 3; i++) {
            given().get("/admin/attack" + i + "XYZZY").then().statusCode(401);
            given().auth().oauth2("k-acme").get("/admin/attack" + i + "XYZZY").then().statusCode(403);
            given().get("/nothing" + i + "XYZZY" + "B".repeat(9000)).then().statusCode(414);
            // hunt27: a made-up dashboard file sent another method, and an admin path refused for its method,
            // content type or Accept, or asked its methods
            given().post("/console/x" + i + "XYZZY").then().statusCode(405);
            given().options("/console/x" + i + "XYZZY").then().statusCode(204);
            given().auth().oauth2("a-acme").contentType("text/plain").body("x")
                    .put("/admin/groups/g" + i + "XYZZY").then().statusCode(415);
            given().auth().oauth2("a-acme").accept("text/html").get("/admin/groups/g" + i + "XYZZY")
                    .then().statusCode(406);
            given().auth().oauth2("a-acme").delete("/admin/groups/g" + i + "XYZZY").then().statusCode(405);
            given().auth().oauth2("a-acme").options("/admin/groups/g" + i + "XYZZY").then().statusCode(204);
        }
        String scrape = MetricsScrape.text();
        assertTrue(!scrape.contains("XYZZY"), "no series names the path");
        assertTrue(scrape.lines().anyMatch(l -> l.startsWith("http_server_requests_seconds_count")
                && l.contains("uri=\"" + MetricsLabels.REFUSED_ADMIN + "\"") && l.contains("status=\"401\"")),
                "counted under the refused-admin label");
        assertTrue(scrape.lines().anyMatch(l -> l.startsWith("http_server_requests_seconds_count")
                && l.contains("uri=\"" + MetricsLabels.URI_TOO_LONG + "\"")), "counted under the too-long label");
    }

    /**
     * Quarkus' own HTTP server metrics take no label from a client: a made-up method (sent without any key) is
     * tagged OTHER, so no one can add series to the scrape by inventing methods.
     */
    @Test
    void aMadeUpMethodAddsNoSeriesOfItsOwn() {
        for (String method : new String[] {"BREW12345", "WHEN67890"}) {
            given().request(method, "/nothing-here");
        }
        String scrape = MetricsScrape.text();
        assertTrue(!scrape.contains("BREW12345") && !scrape.contains("WHEN67890"), "no series names the method");
        assertTrue(scrape.lines().anyMatch(l -> l.startsWith("http_server_requests_seconds_count")
                && l.contains("method=\"OTHER\"")), "counted under OTHER");
    }
}
