package dev.hedgerow.function;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;
import com.fasterxml.jackson.dataformat.yaml.YAMLFactory;
import com.fasterxml.jackson.dataformat.yaml.YAMLParser;
import dev.hedgerow.catalog.CatalogLoader;
import dev.hedgerow.function.gateway.GatewayRoutes;
import io.vertx.core.Vertx;
import io.vertx.ext.web.Route;
import io.vertx.ext.web.Router;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.Set;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * The deployment descriptions (functions/*, infra/knative, infra/aws/template.yaml) agree with each other and with the
 * application: its HTTP port and the variable that sets it, its health paths, the config names it reads, the
 * gateway's routes, and a catalog that loads.
 */
class InfraManifestsTest {
    static final ObjectMapper YAML = new ObjectMapper(new YAMLFactory());
    static final List<String> FUNCTIONS = List.of("gateway", "prober", "console");
    /** Variables every function must be given on every platform. */
    static final Set<String> REQUIRED_ENV = Set.of("REDIS_URL", "HEDGEROW_CONFIG", "HEDGEROW_FUNCTION",
            "HEDGEROW_REDIS_CLUSTER", "QUARKUS_HTTP_PORT", "HEDGEROW_SECRET_KEY");

    /**
     * What each function's environment lists beyond {@link #REQUIRED_ENV}: the prober runs its rounds on the
     * platform's schedule only (both platforms set it; a port from function.env without it got the in-process timer
     * too; found by hunt29-a).
     */
    static Set<String> requiredEnv(String function) {
        Set<String> out = new HashSet<>(REQUIRED_ENV);
        if (function.equals("prober")) {
            out.add("HEDGEROW_PROBER_INTERVAL");
        }
        return out;
    }

    static Properties appProperties;
    static String portVariable;
    static int appPort;
    static Set<String> gatewayRoutes;
    static Vertx vertx;

    @BeforeAll
    static void readTheApplication() throws IOException {
        appProperties = new Properties();
        try (InputStream in = InfraManifestsTest.class.getClassLoader().getResourceAsStream("application.properties")) {
            appProperties.load(in);
        }
        Matcher m = Pattern.compile("\\$\\{(\\w+):(\\d+)}").matcher(appProperties.getProperty("quarkus.http.port"));
        assertTrue(m.matches(), "quarkus.http.port is ${VARIABLE:default}");
        portVariable = m.group(1);
        appPort = Integer.parseInt(m.group(2));

        vertx = Vertx.vertx();
        Router router = Router.router(vertx);
        new GatewayRoutes(() -> {
            throw new AssertionError("mounting must not build the core");
        }, () -> {
            throw new AssertionError("mounting must not build the metrics");
        }, 1024).mount(router);
        gatewayRoutes = new HashSet<>();
        for (Route r : router.getRoutes()) {
            if (r.methods() != null) {   // method-less routes are the 405 catch-alls, not served paths
                r.methods().forEach(method -> gatewayRoutes.add(method.name() + " " + r.getPath()));
            }
        }
    }

    @AfterAll
    static void close() {
        vertx.close();
    }

    // ---- the application's side ------------------------------------------------------------------------------

    static String healthPath(String kind) {
        String root = "/" + appProperties.getProperty("quarkus.http.non-application-root-path", "q")
                + "/" + appProperties.getProperty("quarkus.smallrye-health.root-path", "health");
        return (root + "/" + appProperties.getProperty("quarkus.smallrye-health." + kind + "-path",
                kind.equals("readiness") ? "ready" : "live")).replaceAll("/+", "/");
    }

    /** Environment names of the app's own settings (MicroProfile Config's mapping of property names). */
    static Set<String> appEnvNames() {
        Set<String> out = new HashSet<>();
        HedgerowSettings.ALL.forEach(s -> out.add(s.variable()));
        out.add(portVariable);
        return out;
    }

    static JsonNode yaml(String path) {
        try {
            return YAML.readTree(Path.of(path).toFile());
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    static List<JsonNode> yamlDocs(String path) {
        try (YAMLParser p = new YAMLFactory().createParser(Path.of(path).toFile())) {
            return YAML.readValues(p, JsonNode.class).readAll().stream().map(n -> (JsonNode) n).toList();
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    static Map<String, String> functionEnv(String function) {
        Map<String, String> out = new LinkedHashMap<>();
        try {
            for (String line : Files.readAllLines(Path.of("functions", function, "function.env"))) {
                if (!line.isBlank() && !line.startsWith("#")) {
                    int eq = line.indexOf('=');
                    out.put(line.substring(0, eq).trim(), line.substring(eq + 1).trim());
                }
            }
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
        return out;
    }

    static JsonNode trigger(String function) {
        return yaml("functions/" + function + "/trigger.yaml");
    }

    // ---- functions/ ------------------------------------------------------------------------------------------

    @ParameterizedTest
    @ValueSource(strings = {"gateway", "prober", "console"})
    void functionEnvNamesAreOnesTheAppReads(String function) {
        Map<String, String> env = functionEnv(function);
        assertEquals(requiredEnv(function), env.keySet());
        assertTrue(appEnvNames().containsAll(env.keySet()), appEnvNames() + " vs " + env.keySet());
        assertEquals(Functions.parse(function), Functions.parse(env.get("HEDGEROW_FUNCTION")));
        assertEquals(Integer.toString(appPort), env.get(portVariable));
    }

    @ParameterizedTest
    @ValueSource(strings = {"gateway", "prober", "console"})
    void triggerHealthPathsAreTheAppsHealthPaths(String function) {
        JsonNode t = trigger(function);
        assertEquals(function, t.path("function").asText());
        assertEquals(healthPath("readiness"), t.path("health").path("readiness").asText());
        assertEquals(healthPath("liveness"), t.path("health").path("liveness").asText());
    }

    @Test
    void everyGatewayTriggerPathIsARouteTheGatewayServes() {
        List<String> declared = new ArrayList<>();
        trigger("gateway").path("paths").forEach(p -> declared.add(p.asText()));
        assertEquals(gatewayRoutes, new HashSet<>(declared));
    }

    // ---- infra/knative ---------------------------------------------------------------------------------------

    static JsonNode knativeService(String function) {
        JsonNode s = yaml("infra/knative/" + function + ".yaml");
        assertEquals("serving.knative.dev/v1", s.path("apiVersion").asText());
        assertEquals("Service", s.path("kind").asText());
        assertEquals(trigger(function).path("knative").path("service").asText(), s.path("metadata").path("name").asText());
        return s;
    }

    static Map<String, String> containerEnv(JsonNode container) {
        Map<String, String> env = new HashMap<>();
        container.path("env").forEach(e -> env.put(e.path("name").asText(), e.path("value").asText()));
        return env;
    }

    /** The variables a container takes from the example Secret it names in {@code envFrom}. */
    static Set<String> secretEnv(JsonNode container) {
        JsonNode secret = yaml("infra/knative/secret.example.yaml");
        Set<String> out = new HashSet<>();
        container.path("envFrom").forEach(e -> {
            if (e.path("secretRef").path("name").asText().equals(secret.path("metadata").path("name").asText())) {
                secret.path("stringData").fieldNames().forEachRemaining(out::add);
            }
        });
        return out;
    }

    @ParameterizedTest
    @ValueSource(strings = {"gateway", "prober", "console"})
    void knativeServiceRunsTheFunctionOnTheAppsPortWithItsHealthPaths(String function) {
        JsonNode spec = knativeService(function).path("spec").path("template").path("spec");
        JsonNode c = spec.path("containers").get(0);
        assertEquals(appPort, c.path("ports").get(0).path("containerPort").asInt());
        assertEquals(healthPath("readiness"), c.path("readinessProbe").path("httpGet").path("path").asText());
        assertEquals(healthPath("liveness"), c.path("livenessProbe").path("httpGet").path("path").asText());
        Map<String, String> env = containerEnv(c);
        Set<String> secrets = secretEnv(c);
        functionEnv(function).forEach((k, v) -> {
            assertTrue(env.containsKey(k) || v.isEmpty() && secrets.contains(k), function + " sets " + k);
            if (!v.isEmpty()) {
                assertEquals(v, env.get(k), k);
            }
        });
        assertTrue(appEnvNames().containsAll(env.keySet()), "only variables the app reads: " + env.keySet());
        String configDir = c.path("volumeMounts").get(0).path("mountPath").asText();
        assertTrue(env.get("HEDGEROW_CONFIG").startsWith(configDir + "/"), "the catalog is on the mounted path");
    }

    @ParameterizedTest
    @ValueSource(strings = {"gateway", "prober", "console"})
    void knativeServiceScalesToZeroWithTheTriggersConcurrencyAndTimeout(String function) {
        JsonNode template = knativeService(function).path("spec").path("template");
        JsonNode k = trigger(function).path("knative");
        JsonNode ann = template.path("metadata").path("annotations");
        assertEquals("0", ann.path("autoscaling.knative.dev/min-scale").asText());
        assertEquals(k.path("min_scale").asText(), ann.path("autoscaling.knative.dev/min-scale").asText());
        assertEquals("concurrency", ann.path("autoscaling.knative.dev/metric").asText());
        assertEquals(k.path("target_concurrency").asText(), ann.path("autoscaling.knative.dev/target").asText());
        assertEquals(k.path("timeout_seconds").asInt(), template.path("spec").path("timeoutSeconds").asInt());
    }

    @Test
    void pingSourceCallsTheProberRunPathEveryMinute() {
        JsonNode ping = yaml("infra/knative/ping-prober.yaml");
        assertEquals("PingSource", ping.path("kind").asText());
        assertEquals(trigger("prober").path("knative").path("ping_source").asText(),
                ping.path("metadata").path("name").asText());
        assertEquals("* * * * *", ping.path("spec").path("schedule").asText());
        JsonNode sink = ping.path("spec").path("sink");
        assertEquals(trigger("prober").path("knative").path("service").asText(), sink.path("ref").path("name").asText());
        assertTrue(trigger("prober").path("paths").toString().contains("POST " + sink.path("uri").asText()));
    }

    @Test
    void knativeRedisUrlPointsAtTheRedisService() {
        List<JsonNode> docs = yamlDocs("infra/knative/redis.yaml");
        JsonNode svc = docs.stream().filter(d -> d.path("kind").asText().equals("Service")).findFirst().orElseThrow();
        String expected = "redis://" + svc.path("metadata").path("name").asText() + ":"
                + svc.path("spec").path("ports").get(0).path("port").asInt();
        for (String f : FUNCTIONS) {
            JsonNode c = knativeService(f).path("spec").path("template").path("spec").path("containers").get(0);
            assertEquals(expected, containerEnv(c).get("REDIS_URL"), f);
            assertEquals("false", containerEnv(c).get("HEDGEROW_REDIS_CLUSTER"), f);
        }
    }

    @Test
    void kustomizationListsFilesThatExistAndNoSecret() {
        JsonNode k = yaml("infra/knative/kustomization.yaml");
        k.path("resources").forEach(r -> assertTrue(Files.exists(Path.of("infra/knative", r.asText())), r.asText()));
        assertFalse(k.path("resources").toString().contains("secret"), "real keys are created out of band");
    }

    @Test
    void knativeCatalogLoadsAndEveryKeyItReferencesIsInTheSecret() {
        JsonNode cm = yaml("infra/knative/config.yaml");
        String catalog = cm.path("data").path("hedgerow.yaml").asText();
        Set<String> secretKeys = new HashSet<>();
        yaml("infra/knative/secret.example.yaml").path("stringData").fieldNames().forEachRemaining(secretKeys::add);
        Set<String> referenced = references(catalog);
        assertFalse(referenced.isEmpty(), "the catalog references its keys as ${...}");
        assertTrue(secretKeys.containsAll(referenced), referenced + " vs " + secretKeys);
        assertFalse(new CatalogLoader(name -> "placeholder-" + name).parse(catalog).orgs().isEmpty());
    }

    static Set<String> references(String catalog) {
        Set<String> out = new HashSet<>();
        for (String line : catalog.lines().filter(l -> !l.trim().startsWith("#")).toList()) {
            Matcher m = Pattern.compile("\\$\\{(\\w+)").matcher(line);
            while (m.find()) {
                out.add(m.group(1));
            }
        }
        return out;
    }

    // ---- infra/aws (SAM) -------------------------------------------------------------------------------------

    static JsonNode sam() {
        return yaml("infra/aws/template.yaml");
    }

    /** A function's environment: Globals overlaid with the function's own variables. */
    static Map<String, JsonNode> samEnv(String logicalId) {
        JsonNode t = sam();
        Map<String, JsonNode> env = new LinkedHashMap<>();
        t.path("Globals").path("Function").path("Environment").path("Variables").fields()
                .forEachRemaining(e -> env.put(e.getKey(), e.getValue()));
        t.path("Resources").path(logicalId).path("Properties").path("Environment").path("Variables").fields()
                .forEachRemaining(e -> env.put(e.getKey(), e.getValue()));
        return env;
    }

    static String samFunctionId(String function) {
        return trigger(function).path("aws").path("function").asText();
    }

    @Test
    void samGlobalsRunEveryFunctionBehindTheWebAdapterOnTheAppsPort() {
        JsonNode g = sam().path("Globals").path("Function");
        assertEquals("run.sh", g.path("Handler").asText());
        assertTrue(Files.isExecutable(Path.of("infra/aws/run.sh")));
        assertTrue(g.path("Layers").toString().contains(":layer:LambdaAdapterLayer"), g.path("Layers").toString());
        JsonNode env = g.path("Environment").path("Variables");
        assertEquals("/opt/bootstrap", env.path("AWS_LAMBDA_EXEC_WRAPPER").asText());
        assertEquals(Integer.toString(appPort), env.path("AWS_LWA_PORT").asText());
        assertEquals(Integer.toString(appPort), env.path(portVariable).asText());
        assertEquals(healthPath("readiness"), env.path("AWS_LWA_READINESS_CHECK_PATH").asText());
    }

    /**
     * A Lambda runtime AWS still creates functions on: java17 (Amazon Linux 2) stopped taking creations on 2026-07-31
     * and updates on 2026-08-31, and the template's deployment failed (cfn-lint E2533; found by hunt29-a). The jar is
     * Java 17 bytecode, which both newer runtimes run.
     */
    @org.junit.jupiter.api.Test
    void samFunctionsRunOnARuntimeLambdaStillCreates() {
        String runtime = sam().path("Globals").path("Function").path("Runtime").asText();
        assertTrue(Set.of("java21", "java25").contains(runtime), runtime);
        sam().path("Resources").forEach(r -> {
            if (r.path("Type").asText().equals("AWS::Serverless::Function")) {
                assertTrue(r.path("Properties").path("Runtime").isMissingNode(), "every function takes the global one");
            }
        });
    }

    @ParameterizedTest
    @ValueSource(strings = {"gateway", "prober", "console"})
    void samFunctionHasTheFunctionsEnvironmentAndTimeout(String function) {
        String id = samFunctionId(function);
        JsonNode fn = sam().path("Resources").path(id);
        assertEquals("AWS::Serverless::Function", fn.path("Type").asText(), id);
        Map<String, JsonNode> env = samEnv(id);
        functionEnv(function).forEach((k, v) -> {
            assertTrue(env.containsKey(k), id + " sets " + k);
            if (!v.isEmpty()) {
                assertEquals(v, env.get(k).asText(), k);
            }
        });
        assertEquals(trigger(function).path("aws").path("timeout_seconds").asInt(),
                fn.path("Properties").path("Timeout").asInt());
        Set<String> hedgerowNames = new HashSet<>(env.keySet());
        hedgerowNames.removeIf(n -> !n.startsWith("HEDGEROW_") && !n.startsWith("REDIS_") && !n.startsWith("QUARKUS_"));
        assertTrue(appEnvNames().containsAll(hedgerowNames), "only variables the app reads: " + hedgerowNames);
    }

    /**
     * A probe round waits out hanging probes, (ceil(routes / 4) * 2 + 2) probe timeouts (10 s) at worst: both
     * platforms let the prober run one over 100 routes (520 s). Knative's 120 s cut a round of more than about 20
     * routes with a 504 and the pod scaled to zero with the round in it (found by hunt25).
     */
    @Test
    void theProberMayWaitOutARoundOverAHundredRoutesOnBothPlatforms() {
        long worstRound = ((100 + 3) / 4 * 2 + 2) * 10;
        assertTrue(knativeService("prober").path("spec").path("template").path("spec").path("timeoutSeconds").asInt()
                >= worstRound, "Knative");
        assertTrue(sam().path("Resources").path(samFunctionId("prober")).path("Properties").path("Timeout").asInt()
                >= worstRound, "Lambda");
    }

    @Test
    void samGatewayStreamsSseThroughAFunctionUrl() {
        String id = samFunctionId("gateway");
        JsonNode url = sam().path("Resources").path(id).path("Properties").path("FunctionUrlConfig");
        assertEquals("RESPONSE_STREAM", url.path("InvokeMode").asText());
        assertEquals(trigger("gateway").path("aws").path("function_url").path("invoke_mode").asText(),
                url.path("InvokeMode").asText());
        assertEquals("response_stream", samEnv(id).get("AWS_LWA_INVOKE_MODE").asText());
        assertTrue(trigger("gateway").path("streaming").asBoolean());
    }

    @Test
    void samProberRunsOnAnEventBridgeScheduleThatReachesProberRun() {
        String id = samFunctionId("prober");
        JsonNode events = sam().path("Resources").path(id).path("Properties").path("Events");
        assertEquals(1, events.size());
        JsonNode ev = events.elements().next();
        assertTrue(ev.path("Type").asText().startsWith("Schedule"), ev.toString());
        assertEquals(trigger("prober").path("aws").path("schedule").asText(),
                ev.path("Properties").path("ScheduleExpression").asText());
        String path = samEnv(id).get("AWS_LWA_PASS_THROUGH_PATH").asText();
        assertTrue(trigger("prober").path("paths").toString().contains("POST " + path), path);
        assertEquals("/prober/run", path);
        // and a Function URL for capacity reports, buffered as the trigger file says (found by audit5: none before)
        JsonNode url = sam().path("Resources").path(id).path("Properties").path("FunctionUrlConfig");
        assertEquals(trigger("prober").path("aws").path("function_url").path("invoke_mode").asText(),
                url.path("InvokeMode").asText());
        assertEquals("BUFFERED", url.path("InvokeMode").asText());
        assertEquals("ProberFunctionUrl", sam().path("Outputs").path("ProberUrl").path("Value").path("Fn::GetAtt")
                .path(0).asText());
    }

    /**
     * The schedule runs the prober's rounds on Lambda, not its in-process timer: the timer fired as a frozen
     * environment thawed, took the round lock before the schedule's event and was frozen again mid-probe, its probes
     * measuring the freeze (found by hunt15).
     */
    @Test
    void samProberRunsRoundsOnTheScheduleOnly() {
        assertEquals("0s", samEnv(samFunctionId("prober")).get("HEDGEROW_PROBER_INTERVAL").asText());
    }

    /**
     * On Knative too the PingSource runs the rounds, and the prober's pod scales to zero between pings: its timer
     * probed every 15 s while a pod was up, and with Knative's default 60 s autoscaling window a pod woken every minute
     * never scaled to zero (found by hunt21).
     */
    @Test
    void knativeProberRunsRoundsOnThePingSourceAndScalesToZeroBetweenThem() {
        JsonNode template = knativeService("prober").path("spec").path("template");
        assertEquals("0s", containerEnv(template.path("spec").path("containers").get(0))
                .get("HEDGEROW_PROBER_INTERVAL"));
        JsonNode annotations = template.path("metadata").path("annotations");
        assertEquals("0", annotations.path("autoscaling.knative.dev/min-scale").asText());
        String window = annotations.path("autoscaling.knative.dev/window").asText();
        assertTrue(!window.isEmpty() && java.time.Duration.parse("PT" + window.toUpperCase()).getSeconds() < 30,
                "an autoscaling window well under the PingSource's minute: " + window);
    }

    @Test
    void samStateIsElastiCacheInTheFunctionsVpcAsACluster() {
        JsonNode t = sam();
        JsonNode cache = t.path("Resources").path("Cache");
        assertEquals("AWS::ElastiCache::ServerlessCache", cache.path("Type").asText());
        assertTrue(Set.of("valkey", "redis").contains(cache.path("Properties").path("Engine").asText()));
        JsonNode env = t.path("Globals").path("Function").path("Environment").path("Variables");
        assertTrue(env.path("REDIS_URL").path("Fn::Sub").asText().startsWith("rediss://${Cache.Endpoint.Address}"));
        assertEquals("true", env.path("HEDGEROW_REDIS_CLUSTER").asText());
        assertEquals(t.path("Globals").path("Function").path("VpcConfig").path("SubnetIds"),
                cache.path("Properties").path("SubnetIds"));
        assertTrue(env.path("HEDGEROW_CONFIG").asText().startsWith("/var/task/"), "baked into the package");
    }

    @Test
    void samFunctionsWriteSharedStateAtOnceSinceLambdaFreezesThemBetweenInvocations() {
        for (String fn : List.of("GatewayFunction", "ProberFunction", "ConsoleFunction")) {
            assertEquals("0s", samEnv(fn).get("HEDGEROW_STATE_WRITE_BATCH").asText(), fn);
        }
    }

    @Test
    void samTakesEveryKeyItsCatalogReferencesFromSecretsManager() {
        String catalog;
        try {
            catalog = Files.readString(Path.of("infra/aws/hedgerow.yaml"));
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
        assertFalse(new CatalogLoader(name -> "placeholder-" + name).parse(catalog).orgs().isEmpty());
        Set<String> referenced = references(catalog);
        assertFalse(referenced.isEmpty());
        JsonNode env = sam().path("Globals").path("Function").path("Environment").path("Variables");
        for (String name : referenced) {
            JsonNode v = env.path(name);
            assertFalse(v.isMissingNode(), name + " is set");
            assertTrue(v.path("Fn::Sub").asText().startsWith("{{resolve:secretsmanager:"), name + ": " + v);
            assertTrue(v.path("Fn::Sub").asText().endsWith(":SecretString:" + name + "}}"), name + ": " + v);
        }
    }

    /**
     * Provider keys are sealed in the shared state store only with {@code HEDGEROW_SECRET_KEY} (else stored there in
     * plaintext): the SAM template never read it from the secret README tells users to put it in.
     */
    @Test
    void everyPlatformGivesEveryFunctionTheKeyThatSealsProviderKeys() {
        String name = "HEDGEROW_SECRET_KEY";
        assertTrue(appEnvNames().contains(name), "the app reads " + name);
        for (String f : FUNCTIONS) {
            JsonNode v = samEnv(samFunctionId(f)).get(name);
            assertNotNull(v, f + " on Lambda is given " + name);
            assertTrue(v.path("Fn::Sub").asText().startsWith("{{resolve:secretsmanager:${ProviderKeysSecretName}:"),
                    f + ": " + v);
            assertTrue(v.path("Fn::Sub").asText().endsWith(":SecretString:" + name + "}}"), f + ": " + v);
        }
        JsonNode secret = yaml("infra/knative/secret.example.yaml");
        assertTrue(secret.path("stringData").has(name), "the Knative secret holds " + name);
        for (String f : FUNCTIONS) {
            JsonNode c = knativeService(f).path("spec").path("template").path("spec").path("containers").get(0);
            assertTrue(c.path("envFrom").toString().contains(secret.path("metadata").path("name").asText()),
                    f + " on Knative takes its environment from the secret");
        }
    }

    @Test
    void samOutputsTheUrlsOfTheHttpFunctions() {
        ObjectNode outputs = (ObjectNode) sam().path("Outputs");
        assertTrue(outputs.path("GatewayUrl").toString().contains(samFunctionId("gateway") + "Url"));
        assertTrue(outputs.path("ConsoleUrl").toString().contains(samFunctionId("console") + "Url"));
    }
}
