package dev.hedgerow.function.console;

import dev.hedgerow.testsupport.AppTestResource;
import dev.hedgerow.testsupport.NodeScript;
import io.quarkus.test.common.QuarkusTestResource;
import io.quarkus.test.common.http.TestHTTPResource;
import io.quarkus.test.junit.QuarkusTest;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.Test;

import java.net.URL;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * The dashboard in real headless Chromium: {@code src/test/browser/console.spec.mjs} (playwright-core on Debian's
 * chromium) signs in, changes a weight and checks that routing follows it (the "Saved" line going when the user edits
 * again or after its time, on the page's clock that the spec stops and runs on), edits a group's other settings as
 * hedgerow.yaml writes them (a partial save, a value the file would refuse marked with the one in effect, a setting
 * edited through the API appearing, an emptied one saved as its default), sees an edit made through the API and
 * one made in another tab appear in the editor (typed, unsaved values kept; a save based on stale values refused), sees
 * a refused edit's values marked as not in effect and discards them, watches a member cool down (its countdown ticking
 * each second with no read in between) and come back (and its state, the SLO table and the charts marked as not live
 * while health cannot be read), reads the SLO table, the TTFT chart and the audit log (a failover's trail with each
 * attempt's cause), puts a member cooled down for a minute back into service with its Reset button (healthy at once,
 * served by the next request, the reset in the audit log), shows a route's verification verdict with whose it is (the
 * prober's, or an operator's set through the API, with a Clear button that puts the prober's back at once, the
 * clearing in the audit log), explains a request body (and refuses invalid JSON), reads the usage panel (the totals, per alias and
 * per day exactly as {@code GET /admin/usage} bills them after requests to {@code metered}, narrowed by the alias filter,
 * a from-after-to range refused with the API's message, marked as not live while usage cannot be read), shows each
 * member of the judged group ({@code llm_accuracy}) as not judged yet and then, once requests to it were scored, its
 * judged accuracy as {@code GET /admin/health} gives it ("accuracy 87/100 (2 scores)"; nothing for a group without a
 * judge), adds spare's only route to the deck group with a group's "Add a route" list (which says spare goes with it;
 * deck is then served by both providers, the move is in the audit log, and a move made through the API shows on the next
 * poll), and is
 * signed out with nothing of the org left on the page when its admin key is refused (401) or its key is not an admin
 * key (403). Screenshots go to {@code target/screenshots/}.
 * Skipped, with a message, only when node is absent. The script's limit ({@link NodeScript#PATIENCE_SECONDS}) only
 * stops a hung browser: on a loaded two-core machine a full pass takes over 180 s.
 */
@QuarkusTest
@QuarkusTestResource(value = AppTestResource.class, restrictToAnnotatedClass = false)
class ConsoleBrowserTest {
    @TestHTTPResource("/")
    URL base;

    @Test
    void theDashboardDrivesTheAdminApiInARealBrowser() throws Exception {
        Assumptions.assumeTrue(NodeScript.nodeOnPath(), "node is absent: the dashboard's browser test needs node "
                + "(scripts/browser-deps installs it with chromium and playwright-core)");
        Path dir = Path.of("src/test/browser");
        NodeScript.installIfMissing(dir, "playwright-core");
        String baseUrl = base.toString().replaceAll("/$", "");
        String beta = AppTestResource.sims().get("beta").rootUrl();
        NodeScript.Result r = NodeScript.run(List.of("node", "console.spec.mjs", baseUrl, beta,
                Path.of("target/screenshots").toAbsolutePath().toString(), AppTestResource.PROBER_TOKEN), dir,
                Map.of(), NodeScript.PATIENCE_SECONDS);
        System.out.println(r.output());
        assertEquals(0, r.exit(), r.output());
        assertTrue(r.output().contains("console: all checks passed"), r.output());
        assertTrue(Files.exists(Path.of("target/screenshots/04-recovered.png")));
        assertTrue(Files.exists(Path.of("target/screenshots/06-explain.png")));
        assertTrue(Files.exists(Path.of("target/screenshots/06b-usage.png")));
    }
}
