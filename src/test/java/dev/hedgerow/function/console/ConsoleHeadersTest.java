package dev.hedgerow.function.console;

import dev.hedgerow.testsupport.AppTestResource;
import io.quarkus.test.common.QuarkusTestResource;
import io.quarkus.test.junit.QuarkusTest;
import io.restassured.response.Response;
import org.junit.jupiter.api.Test;

import static io.restassured.RestAssured.given;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * The dashboard's files are asked for again on each load, so an upgrade's dashboard is seen at once (they were
 * cached a day as immutable), and go out with the headers a page holding an admin key needs: a policy allowing its
 * own script, style and origin only, no framing, no sniffing, no referrer. The browser test checks the dashboard
 * runs under that policy with no violation.
 */
@QuarkusTest
@QuarkusTestResource(value = AppTestResource.class, restrictToAnnotatedClass = false)
class ConsoleHeadersTest {
    private static final String[] FILES = {"/console/", "/console/index.html", "/console/console.js",
            "/console/console.css"};

    @Test
    void everyDashboardFileIsRevalidatedOnEachLoad() {
        for (String path : FILES) {
            Response r = given().get(path);
            assertEquals(200, r.statusCode(), path);
            assertEquals("no-cache", r.header("cache-control"), path);
            assertFalse(r.headers().getValues("cache-control").stream().anyMatch(v -> v.contains("immutable")), path);
        }
    }

    /** An encoded slash is not the dashboard: it was served from /console%2F without its headers (found by hunt21). */
    @Test
    void theDashboardIsServedAtItsOwnPathOnly() {
        for (String path : new String[]{"/console%2Findex.html", "/console%2F", "/console%2fconsole.js"}) {
            Response r = given().urlEncodingEnabled(false).get(path);
            assertEquals(404, r.statusCode(), path + ": " + r.asString());
            assertEquals("not_found", r.jsonPath().getString("error.code"), path);
        }
    }

    @Test
    void anUnchangedFileIsA304SoRevalidationCostsNoBody() {
        Response first = given().get("/console/console.js");
        String modified = first.header("last-modified");
        assertNotNull(modified, "the static handler's validator is kept");
        Response again = given().header("if-modified-since", modified).get("/console/console.js");
        assertEquals(304, again.statusCode());
        assertEquals("", again.asString());
        assertEquals("no-cache", again.header("cache-control"));
    }

    @Test
    void thePageHoldingAnAdminKeyCannotBeFramedSniffedOrMadeToRunOtherCode() {
        for (String path : FILES) {
            Response r = given().get(path);
            String csp = r.header("content-security-policy");
            assertNotNull(csp, path);
            for (String directive : new String[]{"default-src 'none'", "script-src 'self'", "style-src 'self'",
                    "connect-src 'self'", "frame-ancestors 'none'", "base-uri 'none'"}) {
                assertTrue(csp.contains(directive), path + " lacks " + directive + ": " + csp);
            }
            assertFalse(csp.contains("unsafe-inline") || csp.contains("unsafe-eval"), path + ": " + csp);
            assertEquals("DENY", r.header("x-frame-options"), path);
            assertEquals("nosniff", r.header("x-content-type-options"), path);
            assertEquals("no-referrer", r.header("referrer-policy"), path);
        }
    }

    @Test
    void theBareConsolePathStillRedirects() {
        Response r = given().redirects().follow(false).get("/console");
        assertEquals(301, r.statusCode());
        assertEquals("/console/", r.header("location"));
    }
}
