package dev.hedgerow.function;

import dev.hedgerow.catalog.CatalogLoader;
import dev.hedgerow.catalog.LoadedCatalog;
import dev.hedgerow.catalog.Org;
import dev.hedgerow.catalog.Provider;
import dev.hedgerow.catalog.Route;
import dev.hedgerow.sim.ModelScript;
import dev.hedgerow.sim.SimConfig;
import dev.hedgerow.sim.SimServer;
import io.vertx.core.Vertx;
import io.vertx.core.VertxOptions;
import io.vertx.core.file.FileSystemOptions;
import io.vertx.core.metrics.MetricsOptions;

import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.Locale;
import java.util.Map;
import java.util.concurrent.TimeUnit;

/**
 * The simulated providers behind the bundled demo catalog: one simulator per provider of the demo file, serving
 * that provider's models with distinct, realistic speeds. Each provider's base URL is handed to the catalog as
 * {@code SIM_<PROVIDER>_URL}.
 *
 * <p>The simulators run on a Vert.x instance of their own, without metrics, created and closed with the fleet: on the
 * application's instance Quarkus' Micrometer binder would count their requests in the gateway's
 * {@code http_server_requests} and warn that its connection gauge is already registered.
 */
final class DemoFleet implements AutoCloseable {
    private final Vertx vertx;
    private final Map<String, String> env;

    private DemoFleet(Vertx vertx, Map<String, String> env) {
        this.vertx = vertx;
        this.env = env;
    }

    /** Starts the fleet on loopback and waits for it; do not call on an event loop. */
    static DemoFleet start() {
        // the simulators serve no files: no file cache (and no vertx-cache directory in the temp folder)
        Vertx own = Vertx.vertx(new VertxOptions()
                .setMetricsOptions(new MetricsOptions().setEnabled(false))
                .setFileSystemOptions(new FileSystemOptions().setFileCachingEnabled(false)
                        .setClassPathResolvingEnabled(false)));
        try {
            return new DemoFleet(own, startSimulators(own));
        } catch (RuntimeException e) {
            own.close();
            throw e;
        }
    }

    private static Map<String, String> startSimulators(Vertx vertx) {
        // read the demo file once with placeholder URLs to learn which provider serves which models
        Map<String, String> placeholder = new HashMap<>(System.getenv());
        LoadedCatalog probe = new CatalogLoader(name -> name.startsWith("SIM_") && name.endsWith("_URL")
                ? "http://127.0.0.1:9/v1" : placeholder.get(name)).loadResource(CatalogLoader.DEMO_RESOURCE);
        Map<String, SimConfig> configs = new LinkedHashMap<>();
        int i = 0;
        for (Org org : probe.orgs()) {
            for (Provider p : org.providers()) {
                long ttft = 150L + 120L * i++;
                SimConfig cfg = configs.getOrDefault(p.id(), SimConfig.of(42));
                for (Route r : org.routes()) {
                    if (r.provider().equals(p.id())) {
                        cfg = cfg.withModel(r.model(), ModelScript.defaults()
                                .withLatency(ModelScript.Latency.of(ttft, 60 + 15 * (i % 3))
                                        .withTtftPer1kPromptTokens(20 + 10 * (i % 2)).withJitter(0.2)));
                    }
                }
                configs.put(p.id(), cfg);
            }
        }
        Map<String, String> env = new LinkedHashMap<>();
        for (Map.Entry<String, SimConfig> e : configs.entrySet()) {
            SimServer s = SimServer.startBlocking(vertx, e.getValue());
            env.put("SIM_" + e.getKey().toUpperCase(Locale.ROOT).replace('-', '_') + "_URL", s.baseUrl());
        }
        return env;
    }

    Map<String, String> environment() {
        return env;
    }

    /** Closes the simulators with their Vert.x instance (at most 5 s); do not call on an event loop. */
    @Override
    public void close() {
        try {
            vertx.close().toCompletionStage().toCompletableFuture().get(5, TimeUnit.SECONDS);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        } catch (Exception e) {
            throw new IllegalStateException("demo simulators did not stop: " + e, e);
        }
    }
}
