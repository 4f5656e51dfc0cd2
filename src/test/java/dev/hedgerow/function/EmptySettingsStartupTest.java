package dev.hedgerow.function;

import dev.hedgerow.testsupport.ExitAfterStartup;
import io.quarkus.test.junit.QuarkusTestProfile;
import io.quarkus.test.junit.TestProfile;
import io.quarkus.test.junit.main.Launch;
import io.quarkus.test.junit.main.LaunchResult;
import io.quarkus.test.junit.main.QuarkusMainTest;
import org.junit.jupiter.api.Test;

import java.util.Map;

import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * The real application started with the variables {@code functions/*}/function.env leaves empty ("set per deployment":
 * {@code HEDGEROW_CONFIG=}, {@code REDIS_URL=}, {@code HEDGEROW_REDIS_CLUSTER=}) and {@code HEDGEROW_FUNCTION=} set
 * but empty, as an env file passed as it stands sets them: each means its default (the demo catalog, embedded state,
 * no cluster, every function). The process used to fail at start with only "Failed to load config value of type
 * boolean for: hedgerow.redis.cluster", since an empty value is not a missing one to an injected default.
 */
@QuarkusMainTest
@TestProfile(EmptySettingsStartupTest.EmptyVariables.class)
class EmptySettingsStartupTest {

    /** Every variable the function env files leave empty, set empty; the process exits once started. */
    public static class EmptyVariables implements QuarkusTestProfile {
        @Override
        public Map<String, String> getConfigOverrides() {
            return Map.of("hedgerow.config", "", "redis.url", "", "hedgerow.redis.cluster", "",
                    "hedgerow.function", "", ExitAfterStartup.PROPERTY, "true");
        }
    }

    @Test
    @Launch(value = {}, exitCode = 0)
    void emptyVariablesMeanTheirDefaults(LaunchResult result) {
        String all = result.getOutput() + "\n" + result.getErrorOutput();
        assertTrue(all.contains("Hedgerow ready:") && all.contains("state memory, functions all"), all);
    }
}
