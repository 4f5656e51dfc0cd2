package dev.hedgerow.function;

import io.smallrye.config.DotEnvConfigSourceProvider;
import io.smallrye.config.EnvConfigSource;
import io.smallrye.config.SmallRyeConfigBuilder;
import io.smallrye.config.SmallRyeConfigBuilderCustomizer;
import io.smallrye.config.SysPropConfigSource;
import io.smallrye.config.common.utils.ConfigSourceUtil;
import org.eclipse.microprofile.config.spi.ConfigSource;

import java.io.IOException;
import java.io.Serial;
import java.net.URL;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;

/**
 * The process's own configuration sources, where a blank value of a {@linkplain HedgerowSettings#blankMeansUnset
 * process setting} means <b>this source does not set it</b>: the lookup goes on to the next source down. So
 * {@code HEDGEROW_X=} in the environment leaves {@code hedgerow.x=5} of a {@code .env} file or
 * {@code application.properties} (or a profile's {@code %test.hedgerow.x}) in force, and {@code -Dhedgerow.x=} leaves
 * {@code HEDGEROW_X=5} in force, as if the empty one were not there.
 *
 * <p>Why at the sources: SmallRye Config (3.16, Quarkus 3.33) looks a name up through its interceptors and then asks
 * the sources in ordinal order, first value wins; an interceptor can only take or drop the winner
 * ({@code ConfigSourceInterceptorContext} has {@code proceed} and {@code restart}, nothing that goes on past a
 * source). So the three sources a blank process setting comes from (system properties, the environment, a
 * {@code .env} file: the ones {@link SmallRyeConfigBuilder} adds as its "system sources") are SmallRye's own classes
 * with a lookup that skips such a blank; everything else about them (names, ordinals, {@code config_ordinal}, the
 * environment's name matching) is theirs. A blank left in another source (a properties file) still means the default
 * ({@link HedgerowSettings}' interceptor drops it).
 *
 * <p>A {@link SmallRyeConfigBuilderCustomizer} (META-INF/services; Quarkus registers it in every configuration it
 * builds, from generated code) that runs last and puts these in place of the builder's system sources. Stateless;
 * the sources are as thread-safe as SmallRye's.
 */
public final class BlankVariables implements SmallRyeConfigBuilderCustomizer {

    @Override
    public void configBuilder(SmallRyeConfigBuilder builder) {
        if (builder.isAddDefaultSources()) {
            // default sources = system sources + properties sources: keep the latter as SmallRye adds them
            builder.setAddDefaultSources(false).setAddSystemSources(false).addPropertiesSources();
        } else if (builder.isAddSystemSources()) {
            builder.setAddSystemSources(false);
        } else {
            return;
        }
        builder.withSources(systemSources(builder.getClassLoader()));
    }

    /** Last, after Quarkus' own customizers have asked for the default sources. */
    @Override
    public int priority() {
        return Integer.MAX_VALUE;
    }

    /** What {@code SmallRyeConfigBuilder.getSystemSources()} gives, with blank process settings left unset. */
    static List<ConfigSource> systemSources(ClassLoader classLoader) {
        List<ConfigSource> sources = new ArrayList<>();
        sources.add(new SystemProperties());
        sources.add(new Environment());
        sources.addAll(new DotEnv().getConfigSources(classLoader));
        return sources;
    }

    /** SmallRye's system properties (ordinal 400). */
    static final class SystemProperties extends SysPropConfigSource {
        @Serial
        private static final long serialVersionUID = 1L;

        @Override
        public String getValue(String propertyName) {
            return unlessBlank(propertyName, super.getValue(propertyName));
        }
    }

    /**
     * SmallRye's environment variables (ordinal 300), or the given variables ({@code .env}, a test's): public so a
     * test's stand-in for the environment is this very source.
     */
    public static class Environment extends EnvConfigSource {
        @Serial
        private static final long serialVersionUID = 1L;

        Environment() {
            super();
        }

        public Environment(Map<String, String> variables, int ordinal) {
            super(variables, ordinal);
        }

        @Override
        public String getValue(String propertyName) {
            return unlessBlank(propertyName, super.getValue(propertyName));
        }
    }

    /** SmallRye's {@code .env} file in the working directory (ordinal 295). */
    static final class DotEnv extends DotEnvConfigSourceProvider {
        @Override
        protected ConfigSource loadConfigSource(URL url, int ordinal) throws IOException {
            return new Environment(ConfigSourceUtil.urlToMap(url), ordinal) {
                @Serial
                private static final long serialVersionUID = 1L;

                @Override
                public String getName() {
                    return super.getName() + "[source=" + url + "]";
                }
            };
        }
    }

    private static String unlessBlank(String name, String value) {
        return value != null && value.isBlank() && HedgerowSettings.blankMeansUnset(name) ? null : value;
    }
}
