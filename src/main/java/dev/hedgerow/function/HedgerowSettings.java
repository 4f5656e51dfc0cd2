package dev.hedgerow.function;

import dev.hedgerow.catalog.SecretBox;
import io.quarkus.runtime.ExecutionMode;
import io.quarkus.runtime.configuration.ConfigurationException;
import io.quarkus.runtime.configuration.DurationConverter;
import io.smallrye.config.ConfigSourceInterceptor;
import io.smallrye.config.ConfigSourceInterceptorContext;
import io.smallrye.config.ConfigSourceInterceptorFactory;
import io.smallrye.config.ConfigValue;
import io.smallrye.config.EnvConfigSource;
import io.smallrye.config.Priorities;

import java.io.Serial;
import java.net.URI;
import java.net.URISyntaxException;
import java.util.ArrayList;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Locale;
import java.util.OptionalInt;
import java.util.Set;

/**
 * Hedgerow's own settings (every {@code hedgerow.*} property and {@code redis.url}; MicroProfile Config reads
 * {@code hedgerow.jit.idle-priority} from {@code HEDGEROW_JIT_IDLE_PRIORITY} too), handled in one place while the
 * configuration is built:
 * <ul>
 * <li><b>A blank value is no value</b>, so the setting takes its default. Deployment files leave per-deployment
 *     variables empty ({@code functions/*}/function.env); SmallRye Config hands an empty value to an injected
 *     {@code defaultValue} as it is and the conversion fails ("Failed to load config value of type boolean"),
 *     while an {@code Optional} took it as missing. A blank variable or system property is not set at all
 *     ({@link BlankVariables}: the next source down decides, a properties file's or a profile's value included);
 *     a blank value left in another source is dropped here, below the profile interceptor, so both see "not set"
 *     and a profile's value ({@code %test.hedgerow.jit.idle-priority}) still applies. The same holds for the
 *     Quarkus settings of {@link #QUARKUS} ({@link #blankMeansUnset}).</li>
 * <li><b>A value that does not parse stops startup</b> with one message that lists every bad setting by its
 *     variable and says what it takes, before anything reads them ({@link #ALL} gives each setting's kind). A
 *     boolean used to turn into {@code false} with a warning (SmallRye's converter takes anything), a bad number
 *     or duration stopped startup naming the property only, a bad {@code REDIS_URL} with a stack trace. Secrets
 *     are never echoed.</li>
 * </ul>
 * Registered in {@code META-INF/services/io.smallrye.config.ConfigSourceInterceptorFactory}; Quarkus instantiates
 * it from generated code and registers it for reflection, in a native image too. It is in the runtime
 * configuration only (not {@code @StaticInitSafe}): nothing reads Hedgerow's settings during static init.
 * Stateless; thread-safe.
 */
public final class HedgerowSettings implements ConfigSourceInterceptorFactory {
    /** What a setting's value must be. */
    public enum Kind {
        /** Free text (a path, a token): any value. */
        TEXT,
        /** Free text that is never echoed in an error. */
        SECRET,
        /** The path of a file the process can read (a certificate authority's PEM file). */
        FILE,
        /** {@code true} or {@code false} in any case (or what SmallRye's converter also reads: yes/no, on/off, 1/0, y/n). */
        FLAG,
        /** A whole number that fits an {@code int}. */
        INT,
        /** A whole number that fits a {@code long}. */
        LONG,
        /** {@code 50ms}, {@code 15s}, {@code 2m}, an ISO-8601 {@code PT15S}, or a number of seconds. */
        DURATION,
        /** {@link Functions#parse}: {@code gateway}, {@code prober}, {@code console}, a list of them, or {@code all}. */
        FUNCTIONS,
        /** {@code redis://} or {@code rediss://} URLs, comma-separated. */
        REDIS_URLS,
        /** {@link SecretBox#of}: the base64 of 32 bytes. */
        SECRET_KEY
    }

    /** One setting: its property name and the kind of value it takes. */
    public record Setting(String property, Kind kind) {
        /** The environment variable MicroProfile Config maps to the property ({@code HEDGEROW_JIT_IDLE_PRIORITY}). */
        public String variable() {
            return property.replaceAll("[^A-Za-z0-9]", "_").toUpperCase(Locale.ROOT);
        }
    }

    /**
     * Every setting Hedgerow reads through MicroProfile Config (their defaults are at the injection points;
     * {@code HedgerowSettingsTest} keeps this list and those in step).
     */
    public static final List<Setting> ALL = List.of(
            new Setting("hedgerow.config", Kind.TEXT),
            new Setting("redis.url", Kind.REDIS_URLS),
            new Setting("hedgerow.redis.cluster", Kind.FLAG),
            new Setting("hedgerow.redis.tls-ca", Kind.FILE),
            new Setting("hedgerow.redis.tls-verify-host", Kind.FLAG),
            new Setting("hedgerow.function", Kind.FUNCTIONS),
            new Setting("hedgerow.catalog.poll", Kind.DURATION),
            new Setting("hedgerow.secret-key", Kind.SECRET_KEY),
            new Setting("hedgerow.state.snapshot-max-age", Kind.DURATION),
            new Setting("hedgerow.state.write-batch", Kind.DURATION),
            new Setting("hedgerow.jit.idle-priority", Kind.FLAG),
            new Setting("hedgerow.jit.warm-requests", Kind.LONG),
            new Setting("hedgerow.gateway.body-limit", Kind.LONG),
            new Setting("hedgerow.gateway.body-timeout", Kind.DURATION),
            new Setting("hedgerow.prober.interval", Kind.DURATION),
            new Setting("hedgerow.prober.concurrency", Kind.INT),
            new Setting("hedgerow.prober.timeout", Kind.DURATION),
            new Setting("hedgerow.prober.token", Kind.SECRET),
            new Setting("hedgerow.prober.min-interval", Kind.DURATION),
            new Setting("hedgerow.prober.verify-every", Kind.DURATION),
            new Setting("hedgerow.metrics.token", Kind.SECRET),
            new Setting("hedgerow.shutdown.grace", Kind.DURATION));

    /**
     * Quarkus' own settings that get the blank-is-unset rule: the address the process listens on, which is what a
     * deployment's environment sets (every shipped env file and manifest sets {@code QUARKUS_HTTP_PORT}; a platform
     * template that fills in the port fills in the host beside it). Not every {@code quarkus.*} property: for many an
     * empty value is a value (an empty list, an empty root path or log format), and the rest are set on purpose, by
     * someone turning a feature on, not left empty by a template.
     */
    public static final List<String> QUARKUS = List.of("quarkus.http.port", "quarkus.http.host");

    private static final Set<String> QUARKUS_VARIABLES = Set.copyOf(QUARKUS.stream()
            .map(p -> new Setting(p, Kind.TEXT).variable()).toList());

    // SmallRye's boolean converter reads the first five as true and anything else as false (with a warning only)
    private static final Set<String> TRUE_FLAGS = Set.of("true", "1", "yes", "y", "on");
    private static final Set<String> FLAGS = java.util.stream.Stream.concat(TRUE_FLAGS.stream(),
            Set.of("false", "0", "no", "n", "off").stream()).collect(java.util.stream.Collectors.toUnmodifiableSet());

    @Override
    public ConfigSourceInterceptor getInterceptor(ConfigSourceInterceptorContext context) {
        // the build reads its configuration with this factory too: its environment is not the one the app runs in
        ExecutionMode mode = ExecutionMode.current();
        if (mode == ExecutionMode.RUNTIME_INIT || mode == ExecutionMode.RUNNING) {
            check(context);
        }
        return new BlankIsUnset();
    }

    /** Throws a {@link ConfigurationException} listing every setting whose value does not parse. */
    private static void check(ConfigSourceInterceptorContext context) {
        List<String> problems = new ArrayList<>();
        Set<String> keys = new LinkedHashSet<>();
        for (Setting s : ALL) {
            ConfigValue v = context.proceed(s.property());
            String value = v == null ? null : v.getValue();
            if (value == null || value.isBlank() || value.contains("${")) { // an expression is expanded later
                continue;
            }
            String why = problem(s.kind(), value.trim());
            if (why != null) {
                problems.add(describe(s, v) + ": " + why);
                keys.add(s.property());
            }
        }
        String cluster = clusterProblem(context);
        if (cluster != null) {
            problems.add(cluster);
            keys.add("redis.url");
        }
        if (!problems.isEmpty()) {
            throw new ConfigurationException("Hedgerow stops: " + (problems.size() == 1 ? "a setting is"
                    : problems.size() + " settings are") + " invalid (an empty value means the default):\n  "
                    + String.join("\n  ", problems), keys);
        }
    }

    /**
     * A list of Redis URLs without {@code HEDGEROW_REDIS_CLUSTER=true}: a standalone client given several nodes talks to
     * one of them and reported shared state, so instances pointed at different nodes of what the operator took for a
     * cluster would each keep their own. Null when there is no such problem (or either value is still an expression).
     */
    private static String clusterProblem(ConfigSourceInterceptorContext context) {
        ConfigValue urls = context.proceed("redis.url");
        if (urls == null || urls.getValue() == null || urls.getValue().contains("${")) {
            return null;
        }
        long nodes = java.util.Arrays.stream(urls.getValue().split(",")).filter(u -> !u.isBlank()).count();
        ConfigValue flag = context.proceed("hedgerow.redis.cluster");
        String on = flag == null || flag.getValue() == null ? "" : flag.getValue().trim().toLowerCase(Locale.ROOT);
        if (nodes < 2 || on.contains("${") || TRUE_FLAGS.contains(on)) {
            return null;
        }
        Setting url = ALL.stream().filter(s -> s.property().equals("redis.url")).findFirst().orElseThrow();
        return describe(url, urls) + ": lists " + nodes + " nodes, a Redis Cluster's form; set HEDGEROW_REDIS_CLUSTER=true "
                + "(hedgerow.redis.cluster) for a cluster, or give one URL for a single Redis server";
    }

    /** Below {@code ProfileConfigSourceInterceptor} (LIBRARY + 200), which then sees a blank value as missing. */
    @Override
    public OptionalInt getPriority() {
        return OptionalInt.of(Priorities.LIBRARY + 150);
    }

    /** Drops a blank value of a {@linkplain #blankMeansUnset process setting}: nothing is found, the default applies. */
    static final class BlankIsUnset implements ConfigSourceInterceptor {
        @Serial
        private static final long serialVersionUID = 1L;

        @Override
        public ConfigValue getValue(ConfigSourceInterceptorContext context, String name) {
            ConfigValue v = context.proceed(name);
            if (v != null && v.getValue() != null && v.getValue().isBlank() && blankMeansUnset(name)) {
                return null;
            }
            return v;
        }
    }

    /** True for {@code hedgerow.*} and {@code redis.url}, with or without a profile ({@code %test.hedgerow.x}). */
    static boolean isHedgerows(String name) {
        String n = withoutProfile(name);
        return n.startsWith("hedgerow.") || n.equals("redis.url");
    }

    /**
     * Whether a blank value of {@code name} means "not set": Hedgerow's settings and those of {@link #QUARKUS}, by
     * property name ({@code quarkus.http.port}, {@code %prod.hedgerow.x}) or by variable name, as an expression in a
     * properties file looks it up ({@code ${QUARKUS_HTTP_PORT:8080}}).
     */
    public static boolean blankMeansUnset(String name) {
        String n = withoutProfile(name);
        if (isHedgerows(n)) {
            return true;
        }
        String variable = n.replaceAll("[^A-Za-z0-9]", "_").toUpperCase(Locale.ROOT);
        return QUARKUS_VARIABLES.contains(variable) || variable.startsWith("HEDGEROW_") || variable.equals("REDIS_URL");
    }

    private static String withoutProfile(String name) {
        return name.startsWith("%") && name.indexOf('.') > 0 ? name.substring(name.indexOf('.') + 1) : name;
    }

    /** The variable and where its value came from; the value itself unless it is a secret (a URL without its password). */
    private static String describe(Setting s, ConfigValue v) {
        String shown = switch (s.kind()) {
            case SECRET, SECRET_KEY -> "";
            case REDIS_URLS -> "=\"" + v.getValue().replaceAll("//[^/@,]*@", "//***@") + "\"";
            default -> "=\"" + v.getValue() + "\"";
        };
        boolean fromEnvironment = EnvConfigSource.NAME.equals(v.getConfigSourceName())
                || String.valueOf(v.getConfigSourceName()).startsWith(EnvConfigSource.NAME);
        return fromEnvironment ? s.variable() + shown + " (" + s.property() + ")"
                : s.property() + shown + " (" + s.variable() + "; set in " + v.getConfigSourceName() + ")";
    }

    /** Why {@code value} is not a valid value of {@code kind}, or null when it is. */
    static String problem(Kind kind, String value) {
        switch (kind) {
            case TEXT, SECRET -> {
                return null;
            }
            case FLAG -> {
                return FLAGS.contains(value.toLowerCase(Locale.ROOT)) ? null : "expected true or false";
            }
            case FILE -> {
                return java.nio.file.Files.isReadable(java.nio.file.Path.of(value)) ? null
                        : "no such file, or it cannot be read";
            }
            case INT, LONG -> {
                try {
                    long n = Long.parseLong(value);
                    return kind == Kind.INT && (n < Integer.MIN_VALUE || n > Integer.MAX_VALUE)
                            ? "a whole number up to " + Integer.MAX_VALUE : null;
                } catch (NumberFormatException e) {
                    return "expected a whole number";
                }
            }
            case DURATION -> {
                try {
                    DurationConverter.parseDuration(value);
                    return null;
                } catch (RuntimeException e) {
                    return "expected a duration such as 50ms, 15s, 2m or PT15S";
                }
            }
            case FUNCTIONS -> {
                try {
                    Functions.parse(value);
                    return null;
                } catch (IllegalArgumentException e) {
                    return e.getMessage().replaceFirst("^HEDGEROW_FUNCTION: ", "");
                }
            }
            case SECRET_KEY -> {
                try {
                    SecretBox.of(value);
                    return null;
                } catch (IllegalArgumentException e) {
                    return e.getMessage().replaceFirst("^" + SecretBox.KEY_ENV + " ", "");
                }
            }
            case REDIS_URLS -> {
                for (String url : value.split(",")) {
                    String why = url.isBlank() ? null : redisUrlProblem(url.trim());
                    if (why != null) {
                        return why;
                    }
                }
                return null;
            }
            default -> throw new IllegalStateException("unknown kind " + kind);
        }
    }

    /**
     * Vert.x Redis's forms redis[s]://[[user]:password@]host[:port][/db]. Its unix://path needs Netty's native
     * transport, which this build does not ship: such a URL started an instance on local state for good (found by
     * hunt7), so it is refused.
     */
    private static String redisUrlProblem(String url) {
        String expected = "expected redis://host:port or rediss://host:port (a comma-separated list of nodes with "
                + "HEDGEROW_REDIS_CLUSTER=true)";
        URI u;
        try {
            u = new URI(url);
        } catch (URISyntaxException e) {
            return expected;
        }
        String scheme = u.getScheme() == null ? "" : u.getScheme().toLowerCase(Locale.ROOT);
        if (scheme.equals("unix")) {
            return "a Unix socket needs Netty's native transport, which this build does not ship: " + expected;
        }
        if (!scheme.equals("redis") && !scheme.equals("rediss") || u.getHost() == null) {
            return expected;
        }
        String path = u.getPath() == null ? "" : u.getPath();
        return path.isEmpty() || path.matches("/\\d*") ? null : "the path after the host is a database number (/0)";
    }
}
