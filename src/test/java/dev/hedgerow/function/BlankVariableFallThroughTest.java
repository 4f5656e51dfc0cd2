package dev.hedgerow.function;

import dev.hedgerow.testsupport.FakeEnvironment;
import dev.hedgerow.testsupport.RedisServer;
import io.quarkus.test.common.QuarkusTestResourceLifecycleManager;
import io.quarkus.test.junit.QuarkusTest;
import io.quarkus.test.junit.QuarkusTestProfile;
import io.quarkus.test.junit.TestProfile;
import jakarta.inject.Inject;
import org.junit.jupiter.api.Test;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;

import static io.restassured.RestAssured.given;
import static org.hamcrest.Matchers.equalTo;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * A blank variable or system property means "this source does not set it": the next source down decides, as if the
 * blank one were not there. The real application, started with a properties file below the environment
 * ({@code QUARKUS_CONFIG_LOCATIONS}; its {@code config_ordinal=250} puts it where application.properties is, since a
 * location's file otherwise takes the ordinal of the source that names it), the environment
 * ({@link FakeEnvironment}) and a blank system property above it:
 * <ul>
 * <li>{@code HEDGEROW_FUNCTION=} over the file's {@code hedgerow.function=gateway,console};</li>
 * <li>{@code _TEST_HEDGEROW_GATEWAY_BODY_LIMIT=} (and the plain variable, blank) over the file's
 *     {@code %test.hedgerow.gateway.body-limit=4096}: the profile's value;</li>
 * <li>{@code -Dredis.url=} over {@code REDIS_URL=redis://...} (a private {@code redis-server}).</li>
 * </ul>
 * Before, each blank meant the code default (every function, an 8 MiB body limit, in-memory state): an interceptor
 * could only drop the blank value, not hand the lookup on to a lower source.
 */
@QuarkusTest
@TestProfile(BlankVariableFallThroughTest.BlankOverLowerSources.class)
class BlankVariableFallThroughTest {

    /** The file, the variables and the system property; none of the suite's shared test resources. */
    public static class BlankOverLowerSources implements QuarkusTestProfile {
        @Override
        public boolean disableGlobalTestResources() {
            return true;
        }

        @Override
        public List<TestResourceEntry> testResources() {
            return List.of(new TestResourceEntry(Sources.class));
        }
    }

    /** Writes the properties file, starts Redis, sets the variables and the blank system property; undoes it all. */
    public static class Sources implements QuarkusTestResourceLifecycleManager {
        private RedisServer redis;
        private Path file;

        @Override
        public Map<String, String> start() {
            redis = RedisServer.start();
            try {
                file = Files.createTempFile("hedgerow-lower", ".properties");
                Files.writeString(file, """
                        config_ordinal=250
                        hedgerow.function=gateway,console
                        %test.hedgerow.gateway.body-limit=4096
                        """);
            } catch (IOException e) {
                throw new UncheckedIOException(e);
            }
            FakeEnvironment.set(Map.of(
                    "QUARKUS_CONFIG_LOCATIONS", file.toString(),
                    "HEDGEROW_FUNCTION", "",
                    "HEDGEROW_GATEWAY_BODY_LIMIT", "",
                    "_TEST_HEDGEROW_GATEWAY_BODY_LIMIT", " ",
                    "REDIS_URL", redis.url()));
            System.setProperty("redis.url", "");
            return Map.of();
        }

        @Override
        public void stop() {
            System.clearProperty("redis.url");
            FakeEnvironment.clear();
            if (redis != null) {
                redis.close();
            }
            try {
                Files.deleteIfExists(file);
            } catch (IOException e) {
                throw new UncheckedIOException(e);
            }
        }
    }

    @Inject
    HedgerowApp app;

    @Test
    void aBlankVariableLeavesAPropertiesFilesValue() {
        assertTrue(app.functions().has("gateway") && app.functions().has("console"), "functions");
        assertFalse(app.functions().has("prober"), "hedgerow.function=gateway,console from the file");
    }

    @Test
    void aBlankProfileVariableLeavesTheProfilesValue() {
        given().header("Authorization", "Bearer hr-demo-key").contentType("application/json")
                .body("{\"model\":\"kimi3\",\"messages\":[{\"role\":\"user\",\"content\":\"" + "x".repeat(5000)
                        + "\"}]}")
                .post("/v1/chat/completions")
                .then().statusCode(413).body("error.code", equalTo("request_too_large"));
    }

    @Test
    void aBlankSystemPropertyLeavesTheVariable() {
        assertEquals("redis", app.stateMode());
    }
}
