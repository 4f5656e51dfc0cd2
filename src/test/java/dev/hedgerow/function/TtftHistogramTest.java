package dev.hedgerow.function;

import dev.hedgerow.testsupport.AppTestResource;
import dev.hedgerow.testsupport.MetricsScrape;
import io.quarkus.test.common.QuarkusTestResource;
import io.quarkus.test.junit.QuarkusTest;
import org.junit.jupiter.api.Test;

import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

import static io.restassured.RestAssured.given;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * {@code hedgerow_ttft_seconds} on the real application's {@code /q/metrics} is a Prometheus histogram: cumulative
 * buckets per route at fixed bounds from 50 ms to 60 s, so a fleet-wide quantile can be computed from the scrapes
 * ({@code histogram_quantile(0.99, sum by (le) (rate(hedgerow_ttft_seconds_bucket[5m])))}).
 */
@QuarkusTest
@QuarkusTestResource(value = AppTestResource.class, restrictToAnnotatedClass = false)
class TtftHistogramTest {
    private static final String ROUTE = "acme/solo-alpha";
    private static final List<String> BOUNDS = List.of("0.05", "0.1", "0.2", "0.3", "0.5", "0.75", "1.0", "1.5",
            "2.0", "3.0", "5.0", "7.5", "10.0", "15.0", "20.0", "30.0", "60.0", "+Inf");

    /** The route's TTFT buckets in the scrape, by their {@code le}, in scrape order. */
    private static Map<String, Double> buckets() {
        Pattern series = Pattern.compile("^hedgerow_ttft_seconds_bucket\\{(.*)} ([0-9.eE+-]+)$");
        Pattern le = Pattern.compile("(?:^|,)le=\"([^\"]+)\"");
        Map<String, Double> out = new LinkedHashMap<>();
        for (String line : MetricsScrape.text().split("\n")) {
            Matcher m = series.matcher(line);
            if (m.matches() && m.group(1).contains("route=\"" + ROUTE + "\"")) {
                Matcher bound = le.matcher(m.group(1));
                assertTrue(bound.find(), line);
                out.put(bound.group(1), Double.parseDouble(m.group(2)));
            }
        }
        return out;
    }

    private static double count() {
        String prefix = "hedgerow_ttft_seconds_count{route=\"" + ROUTE + "\"} ";
        for (String line : MetricsScrape.text().split("\n")) {
            if (line.startsWith(prefix)) {
                return Double.parseDouble(line.substring(prefix.length()));
            }
        }
        return 0;
    }

    @Test
    void timeToFirstTokenIsPublishedAsBucketsFrom50msTo60s() {
        for (int i = 0; i < 2; i++) { // the first one registers the timer
            given().auth().oauth2("k-acme").contentType("application/json")
                    .body("{\"model\":\"solo\",\"stream\":true,\"messages\":[{\"role\":\"user\",\"content\":\"ttft "
                            + i + "\"}]}")
                    .post("/v1/chat/completions").then().statusCode(200).extract().asString();
        }
        Map<String, Double> before = buckets();
        assertEquals(BOUNDS, new ArrayList<>(before.keySet()), () -> "the bucket bounds, in seconds: "
                + MetricsScrape.text().lines().filter(l -> l.startsWith("hedgerow_ttft")).toList());
        double countBefore = count();
        given().auth().oauth2("k-acme").contentType("application/json")
                .body("{\"model\":\"solo\",\"stream\":true,\"messages\":[{\"role\":\"user\",\"content\":\"ttft\"}]}")
                .post("/v1/chat/completions").then().statusCode(200).extract().asString();
        Map<String, Double> after = buckets();
        assertEquals(countBefore + 1, count());
        assertEquals(after.get("+Inf"), count(), "+Inf holds every observation");
        double previous = 0;
        int moved = 0;
        for (String le : BOUNDS) {
            assertTrue(after.get(le) >= previous, "cumulative: " + after);
            previous = after.get(le);
            moved += after.get(le) > before.get(le) ? 1 : 0;
        }
        assertTrue(moved >= 1, "the new observation is in the buckets from its own up: " + before + " -> " + after);
        assertEquals(1, after.get("+Inf") - before.get("+Inf"));
    }
}
