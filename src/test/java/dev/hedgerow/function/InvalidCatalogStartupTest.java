package dev.hedgerow.function;

import dev.hedgerow.testsupport.ExitAfterStartup;
import dev.hedgerow.testsupport.FakeEnvironment;
import io.quarkus.test.junit.QuarkusTestProfile;
import io.quarkus.test.junit.TestProfile;
import io.quarkus.test.junit.main.Launch;
import io.quarkus.test.junit.main.LaunchResult;
import io.quarkus.test.junit.main.QuarkusMainTest;
import org.junit.jupiter.api.Test;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * The real application started on an invalid catalog file: it stops with status 1, and what a first-run user reads is
 * the list of errors once and one line saying the process stops. (The list used to come twice, the second time
 * inside a long stack trace of Quarkus' "Failed to start application".)
 */
@QuarkusMainTest
@TestProfile(InvalidCatalogStartupTest.BadCatalog.class)
class InvalidCatalogStartupTest {
    static final String BAD = """
            revision: 0
            orgs:
              - id: acme
                keys: [{ name: app, key: "k" }]
                providers:
                  - { id: p, base_url: "not a url" }
                routes:
                  - { alias: a, provider: nobody, model: m }
            """;

    /** A catalog file with three errors. */
    public static class BadCatalog implements QuarkusTestProfile {
        static final Path FILE = write();

        private static Path write() {
            try {
                Path f = Files.createTempFile("hedgerow-invalid", ".yaml");
                Files.writeString(f, BAD);
                f.toFile().deleteOnExit();
                return f;
            } catch (IOException e) {
                throw new UncheckedIOException(e);
            }
        }

        /**
         * The file comes as HEDGEROW_CONFIG, as deployments give it, and is gone when the test ends: a profile's
         * config override would stay behind as a system property for the next main test (see ShippedEnvironmentsTest).
         */
        @Override
        public boolean disableGlobalTestResources() {
            return true; // the suite's shared resource names its own catalog file
        }

        @Override
        public List<TestResourceEntry> testResources() {
            return List.of(new TestResourceEntry(FakeEnvironment.Resource.class,
                    Map.of("HEDGEROW_CONFIG", FILE.toString())));
        }

        @Override
        public Map<String, String> getConfigOverrides() {
            return Map.of(ExitAfterStartup.PROPERTY, "true");
        }
    }

    @Test
    @Launch(value = {}, exitCode = 1)
    void anInvalidCatalogIsListedOnceAndTheProcessStops(LaunchResult result) {
        String all = result.getOutput() + "\n" + result.getErrorOutput();
        for (String error : new String[]{"revision: must be a whole number from 1 up, raised with every change of "
                + "the file (got \"0\") (line 1)", "orgs[0].providers[0].base_url: not a valid URL",
                "orgs[0].routes[0].provider: unknown provider \"nobody\" (declared: p) (line 8)"}) {
            assertEquals(1, count(all, error), error + " once in:\n" + all);
        }
        assertTrue(all.contains("Hedgerow stops: the catalog " + BadCatalog.FILE
                + " (HEDGEROW_CONFIG) is invalid; its errors are listed above."), all);
        assertFalse(all.contains("Failed to start"), all);
        assertFalse(all.contains("\tat "), "no stack trace:\n" + all);
    }

    private static int count(String text, String part) {
        int n = 0;
        for (int i = text.indexOf(part); i >= 0; i = text.indexOf(part, i + 1)) {
            n++;
        }
        return n;
    }
}
