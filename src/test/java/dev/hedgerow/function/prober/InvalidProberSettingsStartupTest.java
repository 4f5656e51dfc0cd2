package dev.hedgerow.function.prober;

import dev.hedgerow.testsupport.ExitAfterStartup;
import io.quarkus.test.junit.QuarkusTestProfile;
import io.quarkus.test.junit.TestProfile;
import io.quarkus.test.junit.main.Launch;
import io.quarkus.test.junit.main.LaunchResult;
import io.quarkus.test.junit.main.QuarkusMainTest;
import org.junit.jupiter.api.Test;

import java.util.Map;

import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * A negative {@code hedgerow.prober.min-interval} stops startup with one line naming the prober's settings, as an
 * invalid catalog does; before, a bad prober setting surfaced only as a 500 on every probe round.
 */
@QuarkusMainTest
@TestProfile(InvalidProberSettingsStartupTest.NegativeMinInterval.class)
class InvalidProberSettingsStartupTest {
    public static class NegativeMinInterval implements QuarkusTestProfile {
        @Override
        public Map<String, String> getConfigOverrides() {
            return Map.of("hedgerow.prober.min-interval", "-5s", ExitAfterStartup.PROPERTY, "true");
        }
    }

    @Test
    @Launch(value = {}, exitCode = 1)
    void aNegativeMinimumIntervalStopsStartupWithOneLine(LaunchResult result) {
        String all = result.getOutput() + "\n" + result.getErrorOutput();
        assertTrue(all.contains("Hedgerow stops: invalid prober settings (hedgerow.prober.concurrency 4, timeout "
                + "PT10S, min-interval PT-5S, verify-every PT0S): the minimum interval between rounds cannot be negative"), all);
        assertFalse(all.contains("\tat "), "no stack trace:\n" + all);
    }
}
