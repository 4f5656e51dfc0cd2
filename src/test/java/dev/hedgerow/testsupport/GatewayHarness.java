package dev.hedgerow.testsupport;

import dev.hedgerow.audit.LedgerLine;
import dev.hedgerow.catalog.CatalogLoader;
import dev.hedgerow.catalog.LoadedCatalog;
import dev.hedgerow.catalog.ProviderUrls;
import dev.hedgerow.catalog.SecretBox;
import dev.hedgerow.function.GatewayMetrics;
import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import dev.hedgerow.function.CoreFactory;
import dev.hedgerow.function.VertxScheduler;
import dev.hedgerow.function.gateway.GatewayRoutes;
import dev.hedgerow.prober.MetricsSource;
import dev.hedgerow.prober.Prober;
import dev.hedgerow.prober.ProberConfig;
import dev.hedgerow.prober.RoundReport;
import dev.hedgerow.runtime.Hedgerow;
import dev.hedgerow.sim.SimConfig;
import dev.hedgerow.sim.SimServer;
import dev.hedgerow.state.LedgerEntry;
import dev.hedgerow.state.MemoryStateStore;
import dev.hedgerow.state.StateStore;
import dev.hedgerow.time.Ticker;
import dev.hedgerow.upstream.VertxUpstreamClient;
import io.vertx.core.Vertx;
import io.vertx.core.http.HttpServer;
import io.vertx.core.http.HttpServerOptions;
import io.vertx.ext.web.Router;

import java.time.Clock;
import java.time.Duration;
import java.time.InstantSource;
import java.time.LocalDate;
import java.time.ZoneOffset;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.Locale;
import java.util.Map;
import java.util.function.BiConsumer;
import java.util.function.Function;
import java.util.function.Supplier;

/**
 * One real gateway instance for end-to-end tests: the production core and the production HTTP routes on a real
 * Vert.x server on a free port, in front of real simulators (one per provider), over a given state store (memory,
 * or a real Redis shared by several harnesses = several gateway instances). The catalog YAML refers to each
 * simulator as {@code ${SIM_<PROVIDER>_URL}}, and its Prometheus metrics as {@code ${SIM_<PROVIDER>_METRICS_URL}}.
 */
public final class GatewayHarness implements AutoCloseable {
    private final Vertx vertx;
    private final boolean ownsVertx;
    private final Map<String, SimServer> sims;
    private final boolean ownsSims;
    private final Hedgerow core;
    private final HttpServer server;
    private final VertxUpstreamClient upstream;
    private final MeterRegistry meters;

    private GatewayHarness(Vertx vertx, boolean ownsVertx, Map<String, SimServer> sims, boolean ownsSims,
                           Hedgerow core, HttpServer server, VertxUpstreamClient upstream,
                           MeterRegistry meters) {
        this.vertx = vertx;
        this.ownsVertx = ownsVertx;
        this.sims = sims;
        this.ownsSims = ownsSims;
        this.core = core;
        this.server = server;
        this.upstream = upstream;
        this.meters = meters;
    }

    /** Starts one simulator per provider id; the same map can back several harnesses. */
    public static Map<String, SimServer> startSims(Vertx vertx, Map<String, SimConfig> providers) {
        Map<String, SimServer> out = new LinkedHashMap<>();
        providers.forEach((id, cfg) -> out.put(id, SimServer.startBlocking(vertx, cfg)));
        return out;
    }

    /** The request body limit of every harness but {@link #startWithBodyLimit}'s. */
    static final int BODY_LIMIT = 1024 * 1024;

    public static GatewayHarness start(String yaml, Map<String, SimConfig> providers) {
        return start(yaml, providers, new MemoryStateStore(Ticker.system()));
    }

    /** Own Vert.x and simulators (closed with the harness) over a given store, e.g. a memory store on a fake clock. */
    public static GatewayHarness start(String yaml, Map<String, SimConfig> providers, StateStore store) {
        return start(yaml, providers, store, null);
    }

    /**
     * Like {@link #start(String, Map, StateStore)}, and {@code mounts} adds more HTTP routes (another function's
     * edge, e.g. {@code POST /v1/capacity}) on the same server, after the gateway's.
     */
    public static GatewayHarness start(String yaml, Map<String, SimConfig> providers, StateStore store,
                                       BiConsumer<Router, Supplier<Hedgerow>> mounts) {
        Vertx vertx = Vertx.vertx();
        return start(vertx, true, yaml, startSims(vertx, providers), true, store, mounts,
                ProviderUrls::metadataReason, BODY_LIMIT, Clock.systemUTC());
    }

    /** Like {@link #start(String, Map)} with another request body limit than the harness's 1 MiB. */
    public static GatewayHarness startWithBodyLimit(String yaml, Map<String, SimConfig> providers, int bodyLimit) {
        Vertx vertx = Vertx.vertx();
        return start(vertx, true, yaml, startSims(vertx, providers), true, new MemoryStateStore(Ticker.system()),
                null, ProviderUrls::metadataReason, bodyLimit, Clock.systemUTC());
    }

    /** Like {@link #start(String, Map)} with another request body timeout than production's 60 s. */
    public static GatewayHarness startWithBodyTimeout(String yaml, Map<String, SimConfig> providers,
                                                      Duration bodyTimeout) {
        Vertx vertx = Vertx.vertx();
        return start(vertx, true, yaml, startSims(vertx, providers), true, new MemoryStateStore(Ticker.system()),
                null, ProviderUrls::metadataReason, BODY_LIMIT, SecretBox.ephemeral(), Clock.systemUTC(),
                Ticker.system(), bodyTimeout);
    }

    public static GatewayHarness start(Vertx vertx, String yaml, Map<String, SimServer> sims, StateStore store) {
        return start(vertx, yaml, sims, store, ProviderUrls::metadataReason);
    }

    /**
     * Like {@link #start(Vertx, String, Map, StateStore)} with another rule for the upstream client's connect-time
     * peer check than production's ({@link ProviderUrls#metadataReason}, which every other harness uses).
     */
    public static GatewayHarness start(Vertx vertx, String yaml, Map<String, SimServer> sims, StateStore store,
                                       Function<String, String> blockedPeer) {
        return start(vertx, false, yaml, sims, false, store, null, blockedPeer, BODY_LIMIT, Clock.systemUTC());
    }

    /**
     * Like {@link #start(Vertx, String, Map, StateStore)} with the core's wall clock (what learned models stamp
     * their samples with and decay by, audit times, ledger days) given by the test, e.g. one a fake ticker moves.
     */
    public static GatewayHarness start(Vertx vertx, String yaml, Map<String, SimServer> sims, StateStore store,
                                       InstantSource clock) {
        return start(vertx, false, yaml, sims, false, store, null, ProviderUrls::metadataReason, BODY_LIMIT, clock);
    }

    /**
     * Like {@link #start(Vertx, String, Map, StateStore)}, sealing provider keys in the store with {@code secrets}:
     * another instance of a fleet whose stored catalog was written with that key (the Quarkus app's, in a test that
     * runs beside it on its Redis), instead of this JVM's ephemeral one.
     */
    public static GatewayHarness start(Vertx vertx, String yaml, Map<String, SimServer> sims, StateStore store,
                                       SecretBox secrets) {
        return start(vertx, false, yaml, sims, false, store, null, ProviderUrls::metadataReason, BODY_LIMIT, secrets,
                Clock.systemUTC());
    }

    /**
     * Like {@link #start(Vertx, String, Map, StateStore)} with the core's ticker (what dispatch measures elapsed time
     * by) given by the test, e.g. the fake one behind the store's TTLs, so a wait the gateway derives from both is
     * exact.
     */
    public static GatewayHarness start(Vertx vertx, String yaml, Map<String, SimServer> sims, StateStore store,
                                       Ticker ticker) {
        return start(vertx, false, yaml, sims, false, store, null, ProviderUrls::metadataReason, BODY_LIMIT,
                SecretBox.ephemeral(), Clock.systemUTC(), ticker);
    }

    private static GatewayHarness start(Vertx vertx, boolean ownsVertx, String yaml, Map<String, SimServer> sims,
                                        boolean ownsSims, StateStore store,
                                        BiConsumer<Router, Supplier<Hedgerow>> mounts,
                                        Function<String, String> blockedPeer, int bodyLimit,
                                        InstantSource clock) {
        return start(vertx, ownsVertx, yaml, sims, ownsSims, store, mounts, blockedPeer, bodyLimit,
                SecretBox.ephemeral(), clock);
    }

    private static GatewayHarness start(Vertx vertx, boolean ownsVertx, String yaml, Map<String, SimServer> sims,
                                        boolean ownsSims, StateStore store,
                                        BiConsumer<Router, Supplier<Hedgerow>> mounts,
                                        Function<String, String> blockedPeer, int bodyLimit, SecretBox secrets,
                                        InstantSource clock) {
        return start(vertx, ownsVertx, yaml, sims, ownsSims, store, mounts, blockedPeer, bodyLimit, secrets, clock,
                Ticker.system());
    }

    private static GatewayHarness start(Vertx vertx, boolean ownsVertx, String yaml, Map<String, SimServer> sims,
                                        boolean ownsSims, StateStore store,
                                        BiConsumer<Router, Supplier<Hedgerow>> mounts,
                                        Function<String, String> blockedPeer, int bodyLimit, SecretBox secrets,
                                        InstantSource clock, Ticker ticker) {
        return start(vertx, ownsVertx, yaml, sims, ownsSims, store, mounts, blockedPeer, bodyLimit, secrets, clock,
                ticker, Duration.ofSeconds(60));
    }

    private static GatewayHarness start(Vertx vertx, boolean ownsVertx, String yaml, Map<String, SimServer> sims,
                                        boolean ownsSims, StateStore store,
                                        BiConsumer<Router, Supplier<Hedgerow>> mounts,
                                        Function<String, String> blockedPeer, int bodyLimit, SecretBox secrets,
                                        InstantSource clock, Ticker ticker, Duration bodyTimeout) {
        Map<String, String> env = new HashMap<>();
        sims.forEach((id, s) -> {
            String name = "SIM_" + id.toUpperCase(Locale.ROOT).replace('-', '_');
            env.put(name + "_URL", s.baseUrl());
            env.put(name + "_METRICS_URL", s.rootUrl() + "/metrics");
        });
        LoadedCatalog loaded = new CatalogLoader(env::get).parse(yaml);
        VertxUpstreamClient upstream = new VertxUpstreamClient(vertx, 64, blockedPeer);
        MeterRegistry meters = new SimpleMeterRegistry();
        GatewayMetrics metrics = new GatewayMetrics(meters);
        Hedgerow core = CoreFactory.create(store, upstream, new VertxScheduler(vertx), ticker,
                clock, metrics, secrets);
        if (store instanceof dev.hedgerow.state.ResilientStateStore guard) {
            CoreFactory.auditLostEdits(core, guard);   // as HedgerowApp wires its Redis store's guard
        }
        core.catalog().publish(loaded).await().atMost(Duration.ofSeconds(10));
        core.catalog().startPolling(new VertxScheduler(vertx), Duration.ofMillis(200));
        Router router = Router.router(vertx);
        new GatewayRoutes(() -> core, () -> metrics, bodyLimit, bodyTimeout).mount(router);
        if (mounts != null) {
            mounts.accept(router, () -> core);
        }
        // the production server's header limit (quarkus.http.limits.max-header-size), so oversized headers reach
        // the gateway's own guard here as they do there
        HttpServer server = vertx.createHttpServer(new HttpServerOptions().setMaxHeaderSize(256 * 1024))
                .requestHandler(router).listen(0, "127.0.0.1")
                .toCompletionStage().toCompletableFuture().join();
        return new GatewayHarness(vertx, ownsVertx, sims, ownsSims, core, server, upstream, meters);
    }

    public String baseUrl() {
        return "http://127.0.0.1:" + server.actualPort();
    }

    public int port() {
        return server.actualPort();
    }

    public SimServer sim(String provider) {
        return sims.get(provider);
    }

    public Hedgerow core() {
        return core;
    }

    /**
     * One round of a prober over this instance's catalog, store, learned models and upstream client, as the prober
     * function runs it (on this harness's Vert.x), reading provider metrics through {@code metrics}.
     */
    public RoundReport proberRound(MetricsSource metrics, ProberConfig config) {
        return new Prober(new Prober.Deps(core.store(), () -> core.catalog().current(), core.models(), core.upstream(),
                metrics, new VertxScheduler(vertx), Ticker.system(), core.clock(), core.tokens()::countInput, "test"),
                config).runRound().await().atMost(Duration.ofSeconds(30));
    }

    /** The sum of a counter of this instance's production metrics ({@link GatewayMetrics}) over all its tags. */
    /**
     * The org's ledger totals per alias (every client key's together) around today (yesterday to tomorrow, UTC, so a request billed across
     * midnight is still found).
     */
    public Map<String, LedgerEntry> ledger(String org) {
        LocalDate today = LocalDate.now(ZoneOffset.UTC);
        Map<String, LedgerEntry> out = new HashMap<>();
        core.store().ledger(org, today.minusDays(1), today.plusDays(1)).await().atMost(Duration.ofSeconds(5))
                .values().forEach(day -> day.forEach((line, e) -> out.merge(LedgerLine.decode(line).alias(), e,
                        LedgerEntry::plus)));
        return out;
    }

    public double metric(String name, String... tags) {
        return meters.find(name).tags(tags).counters().stream().mapToDouble(c -> c.count()).sum();
    }

    @Override
    public void close() {
        core.catalog().stop();
        server.close().toCompletionStage().toCompletableFuture().join();
        upstream.close();
        if (ownsSims) {
            sims.values().forEach(SimServer::close);
        }
        if (ownsVertx) {
            vertx.close().toCompletionStage().toCompletableFuture().join();
        }
    }
}
