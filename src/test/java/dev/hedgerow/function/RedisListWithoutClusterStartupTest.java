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
 * The real application started with a list of Redis nodes but without {@code HEDGEROW_REDIS_CLUSTER=true}: it stops
 * with status 1 naming both settings, its password hidden. Before, a standalone client took the list, talked to one
 * of its nodes and reported shared state (found by audit5).
 */
@QuarkusMainTest
@TestProfile(RedisListWithoutClusterStartupTest.NodeList.class)
class RedisListWithoutClusterStartupTest {
    static final String PASSWORD = "hunter2-cluster-password";

    /** Two nodes, no cluster flag (nothing listens on them: the process must stop before connecting). */
    public static class NodeList implements QuarkusTestProfile {
        @Override
        public boolean disableGlobalTestResources() {
            return true;
        }

        @Override
        public List<TestResourceEntry> testResources() {
            return List.of(new TestResourceEntry(FakeEnvironment.Resource.class, Map.of(
                    "REDIS_URL", "redis://:" + PASSWORD + "@127.0.0.1:1,redis://127.0.0.1:2",
                    "HEDGEROW_REDIS_CLUSTER", "")));
        }

        @Override
        public Map<String, String> getConfigOverrides() {
            return Map.of(ExitAfterStartup.PROPERTY, "true");
        }
    }

    @Test
    @Launch(value = {}, exitCode = 1)
    void aListOfNodesWithoutTheClusterFlagStopsTheProcessNamingBoth(LaunchResult result) {
        String all = result.getOutput() + "\n" + result.getErrorOutput();
        String line = "REDIS_URL=\"redis://***@127.0.0.1:1,redis://127.0.0.1:2\" (redis.url): lists 2 nodes, a Redis "
                + "Cluster's form; set HEDGEROW_REDIS_CLUSTER=true (hedgerow.redis.cluster) for a cluster, or give one "
                + "URL for a single Redis server";
        assertTrue(all.contains("Hedgerow stops: a setting is invalid"), all);
        assertTrue(all.contains(line), line + " in:\n" + all);
        assertFalse(all.contains(PASSWORD), "no secret in:\n" + all);
        assertFalse(all.contains("\tat "), "no stack trace:\n" + all);
    }
}
