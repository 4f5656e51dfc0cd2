package dev.hedgerow.function;

import dev.hedgerow.testsupport.ExitAfterStartup;
import dev.hedgerow.testsupport.FakeEnvironment;
import io.quarkus.test.junit.QuarkusTestProfile;
import io.quarkus.test.junit.TestProfile;
import io.quarkus.test.junit.main.Launch;
import io.quarkus.test.junit.main.LaunchResult;
import io.quarkus.test.junit.main.QuarkusMainTest;
import org.junit.jupiter.api.Test;

import java.util.List;
import java.util.Map;

import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * The real application started with variables that are set but invalid: it stops with status 1 and one message that
 * names each bad variable and what it takes, with no stack trace and never a secret. Before, a bad boolean
 * ({@code HEDGEROW_JIT_IDLE_PRIORITY=banana}) became {@code false} with a warning and the process served on, a bad
 * number or duration stopped it with "Failed to load config value of type int for: hedgerow.prober.concurrency" (the
 * property, not the variable, nor why), and a bad {@code REDIS_URL} with a NullPointerException's stack trace.
 */
@QuarkusMainTest
@TestProfile(InvalidSettingsStartupTest.InvalidVariables.class)
class InvalidSettingsStartupTest {
    static final String PASSWORD = "hunter2-redis-password";

    /** Five bad variables in the environment; none of the suite's shared test resources. */
    public static class InvalidVariables implements QuarkusTestProfile {
        @Override
        public boolean disableGlobalTestResources() {
            return true;
        }

        @Override
        public List<TestResourceEntry> testResources() {
            return List.of(new TestResourceEntry(FakeEnvironment.Resource.class, Map.of(
                    "HEDGEROW_JIT_IDLE_PRIORITY", "banana",
                    "HEDGEROW_PROBER_CONCURRENCY", "four",
                    "HEDGEROW_STATE_WRITE_BATCH", "soon",
                    "REDIS_URL", "redis://:" + PASSWORD + "@cache.internal:port",
                    "HEDGEROW_SECRET_KEY", "c2hvcnQ=",
                    "HEDGEROW_REDIS_TLS_CA", "/nonexistent/redis-ca.pem")));
        }

        @Override
        public Map<String, String> getConfigOverrides() {
            return Map.of(ExitAfterStartup.PROPERTY, "true");
        }
    }

    @Test
    @Launch(value = {}, exitCode = 1)
    void invalidVariablesAreNamedWithWhatTheyTakeAndTheProcessStops(LaunchResult result) {
        String all = result.getOutput() + "\n" + result.getErrorOutput();
        assertTrue(all.contains("Hedgerow stops: 6 settings are invalid (an empty value means the default):"), all);
        for (String line : new String[]{
                "HEDGEROW_JIT_IDLE_PRIORITY=\"banana\" (hedgerow.jit.idle-priority): expected true or false",
                "HEDGEROW_PROBER_CONCURRENCY=\"four\" (hedgerow.prober.concurrency): expected a whole number",
                "HEDGEROW_STATE_WRITE_BATCH=\"soon\" (hedgerow.state.write-batch): expected a duration",
                "REDIS_URL=\"redis://***@cache.internal:port\" (redis.url): expected redis://host:port",
                "HEDGEROW_SECRET_KEY (hedgerow.secret-key): must decode to 32 bytes (AES-256), not 5",
                "HEDGEROW_REDIS_TLS_CA=\"/nonexistent/redis-ca.pem\" (hedgerow.redis.tls-ca): no such file, or it cannot"
                        + " be read"}) {
            assertTrue(all.contains(line), line + " in:\n" + all);
        }
        assertFalse(all.contains(PASSWORD), "no secret in:\n" + all);
        assertFalse(all.contains("c2hvcnQ="), "no secret in:\n" + all);
        assertFalse(all.contains("Failed to"), all);
        assertFalse(all.contains("\tat "), "no stack trace:\n" + all);
    }
}
