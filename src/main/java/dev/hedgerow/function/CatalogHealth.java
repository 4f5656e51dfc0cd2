package dev.hedgerow.function;

import dev.hedgerow.catalog.CatalogService;
import jakarta.enterprise.context.ApplicationScoped;
import jakarta.inject.Inject;
import org.eclipse.microprofile.health.HealthCheck;
import org.eclipse.microprofile.health.HealthCheckResponse;
import org.eclipse.microprofile.health.Readiness;

/**
 * Readiness detail for the catalog: the revision of this instance's configuration file, the highest revision
 * stored (what the fleet serves), and what publishing the file did ({@link CatalogService.FileStatus}). UP while every
 * stored org is readable: an instance whose file is older than the stored catalog serves the stored one, as every
 * other instance does. DOWN while it cannot read a stored org (a {@code HEDGEROW_SECRET_KEY} other than the one the
 * catalog was sealed with), naming them: it answered every key of such an org with 401 while it reported ready
 * (found by hunt8). Thread-safe (stateless).
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
        java.util.Set<String> unreadable = catalog.unreadableOrgs();
        var response = HealthCheckResponse.named("hedgerow-catalog").status(unreadable.isEmpty())
                .withData("file_revision", HedgerowApp.revisionText(file.fileRevision()))
                .withData("stored_revision", HedgerowApp.revisionText(catalog.storedRevision()))
                .withData("file", file.outcome())
                .withData("orgs", catalog.current().orgs().size());
        if (!unreadable.isEmpty()) {
            response.withData("unreadable_orgs", String.join(",", unreadable)).withData("unreadable_because",
                    "their stored catalog cannot be read: is HEDGEROW_SECRET_KEY the key it was sealed with?");
        }
        return response.build();
    }
}
