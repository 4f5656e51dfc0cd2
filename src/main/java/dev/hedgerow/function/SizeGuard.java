package dev.hedgerow.function;

import io.quarkus.runtime.configuration.MemorySize;
import io.vertx.ext.web.Router;
import jakarta.enterprise.context.ApplicationScoped;
import jakarta.enterprise.event.Observes;
import org.eclipse.microprofile.config.inject.ConfigProperty;

/**
 * Any request that declares a body over the server's limit ({@code quarkus.http.limits.max-body-size}, 10 MiB by
 * default) gets its 413 in the OpenAI envelope: Quarkus' own check, which runs before every route, answers an empty
 * one. The edges with smaller limits (the gateway's 8 MiB, {@code /v1/capacity}'s 16 KiB) check theirs first, and
 * the admin API checks the admin key first.
 */
@ApplicationScoped
public class SizeGuard {
    @ConfigProperty(name = "quarkus.http.limits.max-body-size", defaultValue = "10240K")
    MemorySize maxBodySize;

    /** The largest body the server reads, in bytes. */
    public long limit() {
        return maxBodySize.asLongValue();
    }

    void mount(@Observes Router router) {
        JsonReplies.refuseDeclaredOversize(router, JsonReplies.SIZE_GUARD_ORDER, limit());
    }
}
