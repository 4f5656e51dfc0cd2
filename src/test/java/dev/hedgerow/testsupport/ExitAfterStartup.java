package dev.hedgerow.testsupport;

import io.quarkus.runtime.Quarkus;
import io.quarkus.runtime.StartupEvent;
import jakarta.annotation.Priority;
import jakarta.enterprise.context.ApplicationScoped;
import jakarta.enterprise.event.Observes;
import org.eclipse.microprofile.config.inject.ConfigProperty;

/**
 * For the {@code @QuarkusMainTest}s of startup failures: with {@code hedgerow.test.exit-after-startup=true} in their
 * profile, an application that did start exits at once (status 0) instead of serving until stopped, so a regression
 * fails such a test on its exit code rather than hanging the run. Off (the default) for every other test.
 */
@ApplicationScoped
public class ExitAfterStartup {
    /** The property a test profile sets to true. */
    public static final String PROPERTY = "hedgerow.test.exit-after-startup";

    @ConfigProperty(name = PROPERTY, defaultValue = "false")
    boolean exit;

    void onStart(@Observes @Priority(Integer.MAX_VALUE) StartupEvent ev) {
        if (exit) {
            Quarkus.asyncExit(0);
        }
    }
}
