package dev.hedgerow.testsupport;

import dev.hedgerow.function.BlankVariables;
import io.quarkus.test.common.QuarkusTestResourceLifecycleManager;

import java.util.LinkedHashMap;
import java.util.Map;

/**
 * Environment variables for an application a test starts in this JVM (a JVM cannot change its own environment):
 * the application's own environment source ({@link BlankVariables.Environment}, SmallRye Config's
 * {@code EnvConfigSource} with its blank rule) over the variables a test sets, just above the real environment
 * (ordinal 301), so {@code HEDGEROW_JIT_IDLE_PRIORITY=} reaches {@code hedgerow.jit.idle-priority} exactly as a real
 * variable does. Registered for every test application (META-INF/services); empty unless a test sets it. Only
 * MicroProfile Config sees these variables: code that reads {@code System.getenv} (a catalog's {@code ${NAME}}
 * references) does not.
 *
 * <p>The variables travel in a system property, which the test's class loader and the application's share; the
 * source reads them when the application builds its configuration. Not for tests that run at the same time.
 */
public final class FakeEnvironment extends BlankVariables.Environment {
    private static final String PROPERTY = "fake-environment.variables";
    private static final char SEP = '\u0001';

    public FakeEnvironment() {
        super(read(), 301);
    }

    /** The variables the next application start sees (replacing any set before). */
    public static void set(Map<String, String> variables) {
        StringBuilder b = new StringBuilder();
        variables.forEach((k, v) -> b.append(k).append('=').append(v).append(SEP));
        System.setProperty(PROPERTY, b.toString());
    }

    public static void clear() {
        System.clearProperty(PROPERTY);
    }

    private static Map<String, String> read() {
        Map<String, String> out = new LinkedHashMap<>();
        String all = System.getProperty(PROPERTY, "");
        for (String entry : all.split(String.valueOf(SEP))) {
            int eq = entry.indexOf('=');
            if (eq > 0) {
                out.put(entry.substring(0, eq), entry.substring(eq + 1));
            }
        }
        return out;
    }

    /** A test profile's resource ({@code testResources()}) that sets its arguments as the variables while it runs. */
    public static final class Resource implements QuarkusTestResourceLifecycleManager {
        private Map<String, String> variables = Map.of();

        @Override
        public void init(Map<String, String> args) {
            variables = Map.copyOf(args);
        }

        @Override
        public Map<String, String> start() {
            set(variables);
            return Map.of();
        }

        @Override
        public void stop() {
            clear();
        }
    }
}
