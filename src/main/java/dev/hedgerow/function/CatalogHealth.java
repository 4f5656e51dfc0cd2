package dev.hedgerow.function;

import dev.hedgerow.catalog.CatalogService;
import jakarta.enterprise.context.ApplicationScoped;
import jakarta.inject.Inject;
import org.eclipse.microprofile.health.HealthCheck;
import org.eclipse.microprofile.health.HealthCheckResponse;
import org.eclipse.microprofile.health.Readiness;

/**
 * Readiness detail for the catalog: the revision of this instance's configuration file, the highest revision
 * stored (what the fleet serves), and what publishing the file did ({@link CatalogService.FileStatus}). Always UP:
 * an instance whose file is older than the stored catalog serves the stored one, as every other instance does.
 * Thread-safe (stateless).
 */
@Readiness
@ApplicationScoped
public class CatalogHealth implements HealthCheck {
    @Inject
    HedgerowApp app;

    @Override
    public HealthCheckResponse call() {
        CatalogService catalog = app.core().catalog();
        CatalogService.FileStatus file = catalog.fileStatus();
        return HealthCheckResponse.named("hedgerow-catalog").up()
                .withData("file_revision", HedgerowApp.revisionText(file.fileRevision()))
                .withData("stored_revision", HedgerowApp.revisionText(catalog.storedRevision()))
                .withData("file", file.outcome())
                .withData("orgs", catalog.current().orgs().size())
                .build();
    }
}
