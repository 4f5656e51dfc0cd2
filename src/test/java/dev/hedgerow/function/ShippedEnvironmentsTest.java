package dev.hedgerow.function;

import com.fasterxml.jackson.databind.JsonNode;
import dev.hedgerow.testsupport.AppTestResource;
import dev.hedgerow.testsupport.ExitAfterStartup;
import dev.hedgerow.testsupport.FakeEnvironment;
import dev.hedgerow.testsupport.RedisCluster;
import dev.hedgerow.testsupport.RedisServer;
import io.quarkus.test.junit.QuarkusTestProfile;
import io.quarkus.test.junit.TestProfile;
import io.quarkus.test.junit.main.LaunchResult;
import io.quarkus.test.junit.main.QuarkusMainLauncher;
import io.quarkus.test.junit.main.QuarkusMainTest;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Every environment the deployment files give the application starts it, as shipped, empty values included:
 * {@code functions/*}/function.env, each Knative Service's env list (with the example Secret, its {@code envFrom}),
 * and each SAM function's variables (Globals, then its own). The real application is started once per function with
 * that list as its environment ({@link FakeEnvironment}) and exits once started. Substituted, because they cannot
 * exist here: the catalog path (the file's own catalog, written to a temporary file with its {@code ${NAME}}
 * references filled from the list, since the catalog loader reads the process environment), the Redis host (a
 * private {@code redis-server}; for AWS a private 3-master Redis Cluster, without TLS), values the platform resolves
 * (SAM's Secrets Manager references and cache endpoint) and the example Secret's placeholder
 * {@code HEDGEROW_SECRET_KEY} (a sentence, not a key). {@code QUARKUS_HTTP_PORT=8080} is kept but tests listen on a
 * free port. An empty variable used to stop the process at start ("Failed to load config value of type boolean").
 */
@QuarkusMainTest
@TestProfile(ShippedEnvironmentsTest.ExitOnceStarted.class)
class ShippedEnvironmentsTest {
    static RedisServer redis;
    static RedisCluster cluster;

    /** Only the environment each launch gives; the process exits once started. */
    public static class ExitOnceStarted implements QuarkusTestProfile {
        @Override
        public boolean disableGlobalTestResources() {
            return true;
        }

        @Override
        public Map<String, String> getConfigOverrides() {
            return Map.of(ExitAfterStartup.PROPERTY, "true");
        }
    }

    @BeforeAll
    static void startRedis() {
        redis = RedisServer.start();
        cluster = RedisCluster.start();
    }

    @AfterAll
    static void stopRedis() {
        FakeEnvironment.clear();
        if (redis != null) {
            redis.close();
        }
        if (cluster != null) {
            cluster.close();
        }
    }

    @Test
    void eachFunctionEnvFileStartsTheApp(QuarkusMainLauncher launcher) {
        for (String function : InfraManifestsTest.FUNCTIONS) {
            Map<String, String> env = InfraManifestsTest.functionEnv(function);
            assertTrue(env.containsValue(""), "the file leaves some variables empty: " + env);
            starts(launcher, "functions/" + function + "/function.env", env, "state memory, functions " + function);
        }
    }

    @Test
    void eachKnativeServiceEnvironmentStartsTheApp(QuarkusMainLauncher launcher) {
        for (String function : InfraManifestsTest.FUNCTIONS) {
            JsonNode c = InfraManifestsTest.knativeService(function).path("spec").path("template").path("spec")
                    .path("containers").get(0);
            Map<String, String> env = new LinkedHashMap<>();
            InfraManifestsTest.yaml("infra/knative/secret.example.yaml").path("stringData").fields()
                    .forEachRemaining(e -> env.put(e.getKey(), e.getValue().asText()));
            env.putAll(InfraManifestsTest.containerEnv(c));
            env.put("HEDGEROW_SECRET_KEY", AppTestResource.SECRET_KEY);
            env.put("REDIS_URL", redis.url());
            env.put("HEDGEROW_CONFIG", catalogFile(InfraManifestsTest.yaml("infra/knative/config.yaml")
                    .path("data").path("hedgerow.yaml").asText(), env));
            starts(launcher, "infra/knative/" + function + ".yaml", env, "state redis, functions " + function);
        }
    }

    @Test
    void eachSamFunctionEnvironmentStartsTheApp(QuarkusMainLauncher launcher) throws IOException {
        String catalog = Files.readString(Path.of("infra/aws/hedgerow.yaml"));
        for (String function : InfraManifestsTest.FUNCTIONS) {
            Map<String, String> env = new LinkedHashMap<>();
            InfraManifestsTest.samEnv(InfraManifestsTest.samFunctionId(function)).forEach((k, v) ->
                    env.put(k, v.isValueNode() ? v.asText() : "resolved-" + k)); // an intrinsic the platform resolves
            env.put("HEDGEROW_SECRET_KEY", AppTestResource.SECRET_KEY);
            env.put("REDIS_URL", String.join(",", cluster.urls()));
            env.put("HEDGEROW_CONFIG", catalogFile(catalog, env));
            starts(launcher, "infra/aws/template.yaml " + InfraManifestsTest.samFunctionId(function), env,
                    "state redis-cluster, functions " + function);
        }
    }

    private static void starts(QuarkusMainLauncher launcher, String file, Map<String, String> env, String expected) {
        // an earlier @QuarkusMainTest's profile overrides stay behind as system properties (Quarkus 3.33's main-test
        // launcher does not restore them), and a system property outranks the environment: only the list counts here
        HedgerowSettings.ALL.forEach(s -> System.clearProperty(s.property()));
        FakeEnvironment.set(env);
        LaunchResult r;
        try {
            r = launcher.launch();
        } finally {
            FakeEnvironment.clear();
        }
        String all = r.getOutput() + "\n" + r.getErrorOutput();
        assertEquals(0, r.exitCode(), file + " did not start the app with " + env + ":\n" + all);
        assertTrue(all.contains("Hedgerow ready:") && all.contains(expected), file + ": " + expected + " in:\n" + all);
    }

    /**
     * The catalog in a temporary file, its {@code ${NAME}} references filled from {@code env} (one it does not set,
     * as in a comment, stays as written: the loader then reports it if a value needs it).
     */
    private static String catalogFile(String yaml, Map<String, String> env) {
        Matcher m = Pattern.compile("\\$\\{(\\w+)}").matcher(yaml);
        StringBuilder filled = new StringBuilder();
        while (m.find()) {
            m.appendReplacement(filled, Matcher.quoteReplacement(env.getOrDefault(m.group(1), m.group())));
        }
        m.appendTail(filled);
        try {
            Path f = Files.createTempFile("hedgerow-shipped", ".yaml");
            f.toFile().deleteOnExit();
            Files.writeString(f, filled);
            return f.toString();
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }
}
