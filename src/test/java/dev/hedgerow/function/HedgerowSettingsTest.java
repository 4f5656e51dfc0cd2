package dev.hedgerow.function;

import com.tngtech.archunit.core.domain.JavaField;
import com.tngtech.archunit.core.importer.ClassFileImporter;
import com.tngtech.archunit.core.importer.ImportOption;
import dev.hedgerow.function.HedgerowSettings.Kind;
import dev.hedgerow.function.HedgerowSettings.Setting;
import org.eclipse.microprofile.config.inject.ConfigProperty;
import org.junit.jupiter.api.Test;

import java.lang.reflect.ParameterizedType;
import java.lang.reflect.Type;
import java.time.Duration;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.TreeMap;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * {@link HedgerowSettings#ALL} is every Hedgerow setting the application injects, each with the kind its field
 * takes, so a new {@code @ConfigProperty} cannot miss the empty-value rule's check of its values; and the checks
 * accept what the converters accept. (The startup behaviour itself is EmptySettingsStartupTest's and
 * InvalidSettingsStartupTest's.)
 */
class HedgerowSettingsTest {

    @Test
    void everyInjectedHedgerowSettingIsListedWithTheKindOfItsField() {
        Map<String, Type> injected = new TreeMap<>();
        new ClassFileImporter().withImportOption(ImportOption.Predefined.DO_NOT_INCLUDE_TESTS)
                .importPackages("dev.hedgerow").forEach(c -> {
                    for (JavaField f : c.getFields()) {
                        if (f.isAnnotatedWith(ConfigProperty.class)) {
                            String name = f.getAnnotationOfType(ConfigProperty.class).name();
                            if (HedgerowSettings.isHedgerows(name)) {
                                injected.put(name, f.reflect().getGenericType());
                            }
                        }
                    }
                });
        Map<String, Kind> listed = new TreeMap<>();
        HedgerowSettings.ALL.forEach(s -> listed.put(s.property(), s.kind()));
        assertEquals(injected.keySet(), listed.keySet());
        injected.forEach((name, type) -> assertTrue(kindsOf(type).contains(listed.get(name)),
                name + ": a " + type + " field, listed as " + listed.get(name)));
    }

    private static Set<Kind> kindsOf(Type type) {
        Type t = type instanceof ParameterizedType p && p.getRawType() == Optional.class
                ? p.getActualTypeArguments()[0] : type;
        if (t == boolean.class || t == Boolean.class) {
            return Set.of(Kind.FLAG);
        } else if (t == int.class || t == Integer.class) {
            return Set.of(Kind.INT);
        } else if (t == long.class || t == Long.class) {
            return Set.of(Kind.LONG);
        } else if (t == Duration.class) {
            return Set.of(Kind.DURATION);
        }
        return Set.of(Kind.TEXT, Kind.SECRET, Kind.FILE, Kind.FUNCTIONS, Kind.REDIS_URLS, Kind.SECRET_KEY);
    }

    @Test
    void variablesAreTheEnvironmentNamesOfTheProperties() {
        assertEquals("HEDGEROW_STATE_SNAPSHOT_MAX_AGE", new Setting("hedgerow.state.snapshot-max-age", Kind.DURATION)
                .variable());
        assertEquals("REDIS_URL", new Setting("redis.url", Kind.REDIS_URLS).variable());
    }

    @Test
    void valuesTheApplicationAcceptsPassTheChecks() {
        for (String[] ok : new String[][]{{"FLAG", "true"}, {"FLAG", "FALSE"}, {"FLAG", "on"}, {"FLAG", "0"}, {"INT", "4"}, {"LONG", "8388608"},
                {"DURATION", "50ms"}, {"DURATION", "0s"}, {"DURATION", "PT15S"}, {"DURATION", "2"},
                {"FUNCTIONS", "gateway, prober"}, {"FUNCTIONS", "all"},
                {"REDIS_URLS", "redis://127.0.0.1:6379"}, {"REDIS_URLS", "rediss://:pw@cache:6380/0"},
                {"REDIS_URLS", "redis://a:7000,redis://b:7001"},
                {"SECRET_KEY", "aGVkZ2Vyb3ctdGVzdC1zZWNyZXQta2V5LTMyYnl0ZXM="}, {"TEXT", "anything"},
                {"FILE", "pom.xml"}}) {
            assertNull(HedgerowSettings.problem(Kind.valueOf(ok[0]), ok[1]), ok[0] + " " + ok[1]);
        }
    }

    @Test
    void valuesTheApplicationWouldMisreadFailTheChecks() {
        for (String[] bad : new String[][]{{"FLAG", "banana"}, {"FLAG", "ture"}, {"FLAG", "enabled"}, {"INT", "3000000000"}, {"LONG", "8M"},
                {"DURATION", "soon"}, {"FUNCTIONS", "gateway,router"}, {"REDIS_URLS", "localhost:6379"},
                {"REDIS_URLS", "redis://h:port"}, {"REDIS_URLS", "http://h:6379"}, {"REDIS_URLS", "redis://h:1/x"},
                {"REDIS_URLS", "unix:///run/redis.sock"}, {"SECRET_KEY", "not base64!"},
                {"FILE", "/nonexistent/ca.pem"}}) {
            assertTrue(HedgerowSettings.problem(Kind.valueOf(bad[0]), bad[1]) != null, bad[0] + " " + bad[1]);
        }
    }

    /** One node of a Redis Cluster named is warned of at startup; several, or a plain Redis, are not (hunt7). */
    @Test
    void aClusterGivenOneNodeIsWarnedOf() {
        assertTrue(HedgerowApp.clusterSeedWarning("redis://10.0.0.1:7000", true).orElseThrow()
                .contains("one node of the Redis Cluster"));
        assertTrue(HedgerowApp.clusterSeedWarning("redis://10.0.0.1:7000, ", true).isPresent(), "a blank entry is none");
        assertTrue(HedgerowApp.clusterSeedWarning("redis://10.0.0.1:7000,redis://10.0.0.2:7000", true).isEmpty());
        assertTrue(HedgerowApp.clusterSeedWarning("redis://10.0.0.1:6379", false).isEmpty());
        // ElastiCache Serverless: one endpoint by design, the shipped AWS stack's (found by hunt15)
        assertTrue(HedgerowApp.clusterSeedWarning("rediss://hedgerow-state-abc123.serverless.euw1.cache.amazonaws.com:6379",
                true).isEmpty());
        assertTrue(HedgerowApp.clusterSeedWarning("rediss://clustercfg.hedgerow.abc123.euw1.cache.amazonaws.com:6379",
                true).isPresent(), "a configuration endpoint of a cluster with nodes is still one node named");
    }
}
