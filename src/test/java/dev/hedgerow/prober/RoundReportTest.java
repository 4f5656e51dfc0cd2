package dev.hedgerow.prober;

import com.fasterxml.jackson.databind.JsonNode;
import org.junit.jupiter.api.Test;

import java.util.List;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** The summary an anonymous caller of {@code /prober/run} gets: each route counted once, by what its probe came to. */
class RoundReportTest {

    @Test
    void theSummaryCountsEachOutcomeAndNamesNoOrgRouteProviderOrError() {
        RoundReport report = new RoundReport(true, "probed 6 route(s)", List.of(
                route("r-ok", "probe", "ok", "pass"),
                route("r-ok-unverified", "probe", "ok", "fail:served model 'x' is not 'y'"),
                route("r-slow", "probe", "slow: no first token within 10000 ms", null),
                route("r-failed", "half_open_probe", "failed: http 503 secret-upstream-text", null),
                route("r-refused", "probe", "refused: http 400 naming max_tokens: ...", null),
                route("r-skipped", "skipped", "cooling down", null)),
                List.of(new RoundReport.ScrapeResult("org-a", "prov-a", List.of("r-ok"), "ok"),
                        new RoundReport.ScrapeResult("org-a", "prov-b", List.of("r-slow"), "failed: IOException")));
        JsonNode s = report.toSummaryNode();
        assertTrue(s.path("ran").asBoolean());
        assertEquals("probed 6 route(s)", s.path("note").asText());
        JsonNode c = s.path("counts");
        assertEquals(6, c.path("routes").asInt());
        assertEquals(2, c.path("ok").asInt());
        assertEquals(1, c.path("slow").asInt());
        assertEquals(1, c.path("failed").asInt());
        assertEquals(1, c.path("refused").asInt());
        assertEquals(1, c.path("skipped").asInt());
        assertEquals(1, c.path("verification_failed").asInt());
        assertEquals(2, c.path("scrapes").asInt());
        assertEquals(1, c.path("scrapes_failed").asInt());
        String text = s.toString();
        for (String secret : List.of("org-a", "prov-", "r-", "secret-upstream-text", "IOException", "served model")) {
            assertFalse(text.contains(secret), secret + " in " + text);
        }
    }

    private static RoundReport.RouteResult route(String id, String action, String outcome, String verification) {
        return new RoundReport.RouteResult("org-a", id, action, outcome, null, null, null, verification);
    }
}
