package dev.hedgerow.function.prober;

import dev.hedgerow.sim.SimServer;
import dev.hedgerow.testsupport.AppTestResource;
import io.quarkus.test.junit.QuarkusTest;
import io.restassured.response.ValidatableResponse;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

import java.util.ArrayList;
import java.util.List;

import static io.restassured.RestAssured.given;
import static org.hamcrest.Matchers.equalTo;
import static org.hamcrest.Matchers.hasItems;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * A provider's {@code metrics_url}, scraped by the real application's prober ({@code POST /prober/run}), steers the
 * gateway's routing: acme's alpha reports its KV cache 97 % full in vLLM's {@code vllm:gpu_cache_usage_perc}, and
 * from the round that read it on, {@code kimi3} ({@code rr_health} over alpha and beta) passes alpha over while beta
 * has headroom; the round after alpha's pressure falls puts it back in the rotation. (The scrape's parsing and the
 * report's expiry on a fake clock are {@code PrometheusCapacityTest} and {@code ProberTest}.)
 */
@QuarkusTest
class MetricsScrapeRoutingTest {
    static SimServer alpha() {
        return AppTestResource.sims().get("alpha");
    }

    @AfterEach
    void relieved() {
        alpha().memoryPressure(0);
        round();
    }

    static ValidatableResponse round() {
        return given().auth().oauth2(AppTestResource.PROBER_TOKEN).post("/prober/run").then().statusCode(200)
                .body("ran", equalTo(true));
    }

    /** The routes that answered {@code n} requests to {@code kimi3}, in order. */
    static List<String> served(int n) {
        List<String> out = new ArrayList<>();
        for (int i = 0; i < n; i++) {
            out.add(given().auth().oauth2("k-acme").contentType("application/json")
                    .body("{\"model\":\"kimi3\",\"messages\":[{\"role\":\"user\",\"content\":\"scrape " + i + "\"}]}")
                    .post("/v1/chat/completions").then().statusCode(200).extract().header("x-hedgerow-route"));
        }
        return out;
    }

    @Test
    void aScrapedFullKvCachePassesTheRouteOverUntilARoundReadsItRelieved() {
        round();
        assertTrue(served(4).containsAll(List.of("kimi3-alpha", "kimi3-beta")), "the group rotates over both");

        alpha().memoryPressure(0.97);
        round().body("scrapes.find { it.provider == 'alpha' }.outcome", equalTo("ok"))
                .body("scrapes.find { it.provider == 'alpha' }.routes", hasItems("kimi3-alpha", "solo-alpha"));
        assertEquals(List.of("kimi3-beta", "kimi3-beta", "kimi3-beta", "kimi3-beta", "kimi3-beta", "kimi3-beta"),
                served(6), "alpha has no headroom while beta has");
        // the only route of its alias still serves: a report without headroom never leaves an alias unserved
        given().auth().oauth2("k-acme").contentType("application/json")
                .body("{\"model\":\"solo\",\"messages\":[{\"role\":\"user\",\"content\":\"still served\"}]}")
                .post("/v1/chat/completions").then().statusCode(200);

        alpha().memoryPressure(0);
        round();
        assertTrue(served(4).contains("kimi3-alpha"), "back in the rotation once a round reads it relieved");
    }
}
