package dev.hedgerow.function.console;

import dev.hedgerow.testsupport.AppTestResource;
import dev.hedgerow.testsupport.NodeScript;
import io.quarkus.test.common.QuarkusTestResource;
import io.quarkus.test.common.http.TestHTTPResource;
import io.quarkus.test.junit.QuarkusTest;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.Test;

import java.net.URL;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * The dashboard in real headless Chromium ({@code src/test/browser/outage.spec.mjs}) while the app's Redis is down:
 * the usage panel and the audit log say, in the API's words, that what they show is only what this instance recorded
 * ({@code partial} and {@code partial_reason} of {@code GET /admin/usage} and {@code /admin/audit}); once Redis is back
 * they say nothing of the kind. Before, the API said so and the dashboard did not: an operator read one instance's
 * usage as the org's bill. Skipped, with a message, only when node is absent.
 */
@QuarkusTest
@QuarkusTestResource(value = AppTestResource.class, restrictToAnnotatedClass = false)
class ConsoleOutageBrowserTest {
    @TestHTTPResource("/")
    URL base;

    NodeScript.Result run(String expect) throws Exception {
        Path dir = Path.of("src/test/browser");
        NodeScript.installIfMissing(dir, "playwright-core");
        NodeScript.Result r = NodeScript.run(List.of("node", "outage.spec.mjs", base.toString().replaceAll("/$", ""),
                Path.of("target/screenshots").toAbsolutePath().toString(), expect), dir, Map.of(),
                NodeScript.PATIENCE_SECONDS);
        System.out.println(r.output());
        return r;
    }

    @Test
    void theDashboardSaysWhenUsageAndAuditAreThisInstancesOnly() throws Exception {
        Assumptions.assumeTrue(NodeScript.nodeOnPath(), "node is absent: the dashboard's browser test needs node "
                + "(scripts/browser-deps installs it with chromium and playwright-core)");
        NodeScript.Result during;
        ResetAcrossOutagesTest.redisDown();
        try {
            during = run("partial");
        } finally {
            ResetAcrossOutagesTest.redisUp();
        }
        assertEquals(0, during.exit(), during.output());
        assertTrue(during.output().contains("outage: all checks passed"), during.output());
        NodeScript.Result after = run("whole");
        assertEquals(0, after.exit(), after.output());
        assertTrue(after.output().contains("outage: all checks passed"), after.output());
    }
}
