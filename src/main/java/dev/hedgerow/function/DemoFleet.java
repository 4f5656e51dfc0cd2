package dev.hedgerow.function;

import dev.hedgerow.catalog.CatalogLoader;
import dev.hedgerow.catalog.LoadedCatalog;
import dev.hedgerow.catalog.Org;
import dev.hedgerow.catalog.Provider;
import dev.hedgerow.catalog.Route;
import dev.hedgerow.sim.ModelScript;
import dev.hedgerow.sim.SimConfig;
import dev.hedgerow.sim.SimServer;
import io.vertx.core.Future;
import io.vertx.core.Vertx;

import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;

/**
 * The simulated providers behind the bundled demo catalog: one simulator per provider of the demo file, serving
 * that provider's models with distinct, realistic speeds. Each provider's base URL is handed to the catalog as
 * {@code SIM_<PROVIDER>_URL}.
 */
final class DemoFleet implements AutoCloseable {
    private final List<SimServer> servers;
    private final Map<String, String> env;

    private DemoFleet(List<SimServer> servers, Map<String, String> env) {
        this.servers = servers;
        this.env = env;
    }

    static DemoFleet start(Vertx vertx) {
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
        List<SimServer> servers = new ArrayList<>();
        Map<String, String> env = new LinkedHashMap<>();
        for (Map.Entry<String, SimConfig> e : configs.entrySet()) {
            Future<SimServer> f = SimServer.start(vertx, e.getValue());
            SimServer s = f.toCompletionStage().toCompletableFuture().join();
            servers.add(s);
            env.put("SIM_" + e.getKey().toUpperCase(Locale.ROOT).replace('-', '_') + "_URL", s.baseUrl());
        }
        return new DemoFleet(servers, env);
    }

    Map<String, String> environment() {
        return env;
    }

    @Override
    public void close() {
        servers.forEach(s -> s.closeAsync());
    }
}
