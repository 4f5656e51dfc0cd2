package dev.hedgerow.function;

import dev.hedgerow.api.ApiError;
import dev.hedgerow.audit.RequestLog;
import dev.hedgerow.catalog.CatalogException;
import dev.hedgerow.catalog.CatalogLoader;
import dev.hedgerow.catalog.LoadedCatalog;
import dev.hedgerow.catalog.ProviderUrls;
import dev.hedgerow.catalog.SecretBox;
import dev.hedgerow.runtime.Hedgerow;
import dev.hedgerow.state.BatchingStateStore;
import dev.hedgerow.state.CachingStateStore;
import dev.hedgerow.state.MemoryStateStore;
import dev.hedgerow.state.RedisStateStore;
import dev.hedgerow.state.ResilientStateStore;
import dev.hedgerow.state.StateStore;
import dev.hedgerow.time.Ticker;
import dev.hedgerow.upstream.VertxUpstreamClient;
import io.micrometer.core.instrument.MeterRegistry;
import io.quarkus.runtime.ShutdownDelayInitiatedEvent;
import io.quarkus.runtime.ShutdownEvent;
import io.quarkus.runtime.StartupEvent;
import io.quarkus.runtime.configuration.ConfigurationException;
import io.vertx.core.Vertx;
import io.vertx.redis.client.RedisClientType;
import io.vertx.redis.client.RedisOptions;
import jakarta.enterprise.context.ApplicationScoped;
import jakarta.enterprise.event.Observes;
import jakarta.inject.Inject;
import org.eclipse.microprofile.config.inject.ConfigProperty;

import java.lang.management.CompilationMXBean;
import java.lang.management.ManagementFactory;
import java.nio.file.Path;
import java.time.Clock;
import java.time.Duration;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.TimeUnit;

/**
 * The Quarkus side of one process: reads the environment ({@code HEDGEROW_CONFIG}, {@code REDIS_URL},
 * {@code HEDGEROW_REDIS_CLUSTER}, {@code HEDGEROW_FUNCTION}), builds the core once at startup, publishes the
 * catalog and keeps it in step with the store. Without {@code HEDGEROW_CONFIG} it starts the demo simulators and
 * loads the bundled demo catalog. An invalid catalog stops startup with every error listed.
 */
@ApplicationScoped
public class HedgerowApp {
    private static final System.Logger LOG = System.getLogger("dev.hedgerow");

    @Inject
    Vertx vertx;

    @Inject
    MeterRegistry meters;

    @ConfigProperty(name = "hedgerow.config")
    Optional<String> configPath;

    @ConfigProperty(name = "redis.url")
    Optional<String> redisUrl;

    // set but empty (HEDGEROW_REDIS_CLUSTER= in functions/*/function.env) means the default, as for every setting
    // (HedgerowSettings)
    @ConfigProperty(name = "hedgerow.redis.cluster", defaultValue = "false")
    boolean redisCluster;

    @ConfigProperty(name = "hedgerow.redis.tls-ca")
    Optional<String> redisTlsCa;

    @ConfigProperty(name = "hedgerow.redis.tls-verify-host", defaultValue = "true")
    boolean redisTlsVerifyHost;

    @ConfigProperty(name = "hedgerow.function")
    Optional<String> function;

    @ConfigProperty(name = "hedgerow.catalog.poll", defaultValue = "1s")
    Duration catalogPoll;

    /** HEDGEROW_SECRET_KEY: base64 of 32 bytes sealing provider API keys in the state store (SecretBox). */
    @ConfigProperty(name = "hedgerow.secret-key")
    Optional<String> secretKey;

    /**
     * How long this instance may reuse a route's shared state (Redis) when ranking: another instance's breaker
     * verdicts, holds and leases reach it at most this much later; its own at once (0 = read Redis every request).
     */
    @ConfigProperty(name = "hedgerow.state.snapshot-max-age", defaultValue = "50ms")
    Duration snapshotMaxAge;

    /**
     * How long the writes every request makes (hedge-budget count, usage, ledger, learned models) may wait in this
     * instance to be merged into one Redis call per key (0 = write each at once).
     */
    @ConfigProperty(name = "hedgerow.state.write-batch", defaultValue = "20ms")
    Duration writeBatch;

    /**
     * Once the JIT has warmed up on real traffic ({@link JitWarmup}), run its compiler threads under SCHED_IDLE
     * ({@link JitPriority}): a request thread then preempts a late compile at once instead of waiting out its time
     * slice. Off in tests, which share one JVM that keeps both cores busy.
     */
    @ConfigProperty(name = "hedgerow.jit.idle-priority", defaultValue = "true")
    boolean jitIdlePriority;

    /** How many requests this instance serves before its JIT may count as warm (see {@link JitWarmup}). */
    @ConfigProperty(name = "hedgerow.jit.warm-requests", defaultValue = "20000")
    long jitWarmRequests;

    /**
     * After SIGTERM, how long the requests in flight may take to finish (new ones are refused with 503 meanwhile);
     * a request still running then is ended with 503 {@code server_shutting_down} (a stream: its error event).
     * Below the 30 s Kubernetes (and Knative) give a pod between SIGTERM and SIGKILL, leaving time for the writes
     * flushed after it.
     */
    @ConfigProperty(name = "hedgerow.shutdown.grace", defaultValue = "20s")
    Duration shutdownGrace;

    @Inject
    ShutdownGate gate;

    private volatile Hedgerow core;
    private volatile GatewayMetrics metrics;
    private volatile ResilientStateStore shared;
    private volatile BatchingStateStore batching;
    private volatile DemoFleet demo;
    private volatile VertxUpstreamClient upstream;
    private volatile String stateMode = "memory";

    void onStart(@Observes StartupEvent ev) {
        core();
        if (jitIdlePriority) {
            watchJitWarmup();
        }
    }

    /** How often the JIT warm-up gate looks; it counts the JIT as settled when a pass adds under 1/30 of it. */
    private static final Duration JIT_PASS = Duration.ofSeconds(30);

    /**
     * Every {@link #JIT_PASS}: asks {@link JitWarmup} whether the JIT has settled and, from then on, moves any
     * compiler thread not yet at SCHED_IDLE (HotSpot may start more under load). Nothing without a JIT (native image).
     */
    private void watchJitWarmup() {
        CompilationMXBean jit = ManagementFactory.getCompilationMXBean();
        if (jit == null || !jit.isCompilationTimeMonitoringSupported()) {
            return;
        }
        JitWarmup warmup = new JitWarmup(jitWarmRequests, JIT_PASS.toMillis() / 30);
        vertx.setPeriodic(JIT_PASS.toMillis(), id -> {
            boolean first = !warmup.done();
            if (warmup.done() || warmup.settled(metrics.finishedRequests(), jit.getTotalCompilationTime())) {
                lowerJitPriority(first);
            }
        });
    }

    /** One {@link JitPriority} pass off the event loop (it runs chrt); logs the first pass and later changes. */
    private void lowerJitPriority(boolean first) {
        long requests = metrics.finishedRequests();
        vertx.executeBlocking(() -> JitPriority.forThisJvm().apply(), false).onSuccess(o -> {
            if (!o.supported()) {
                if (first) {
                    LOG.log(System.Logger.Level.INFO, "JIT compiler threads keep their priority: {0}", o.failures());
                }
            } else if (first || o.lowered() > 0 || !o.failures().isEmpty()) {
                LOG.log(o.failures().isEmpty() ? System.Logger.Level.INFO : System.Logger.Level.WARNING,
                        "JIT warm after {0} requests: compiler threads at SCHED_IDLE, {1} moved now, {2} already{3}",
                        Long.toString(requests), o.lowered(), o.alreadyIdle(),
                        o.failures().isEmpty() ? "" : "; not moved: " + o.failures());
            }
        });
    }

    /** The core, built on first use (the HTTP routes may be mounted before the startup event). */
    public Hedgerow core() {
        Hedgerow built = core;   // every request asks: the volatile read alone, no lock, once it is built
        return built != null ? built : build();
    }

    private synchronized Hedgerow build() {
        if (core != null) {
            return core;
        }
        VertxScheduler scheduler = new VertxScheduler(vertx);
        StateStore store = createStore(scheduler);
        // checked on every connection's resolved address too: a provider name that resolves to a metadata address
        upstream = new VertxUpstreamClient(vertx, 512, ProviderUrls.metadataAllowed(System::getenv)
                ? ip -> null : ProviderUrls::metadataReason);
        SecretBox secrets = SecretBox.fromEnvironment(secretKey.orElse(null), !stateMode.equals("memory"));
        metrics = new GatewayMetrics(meters);
        Hedgerow h = CoreFactory.create(store, upstream, scheduler, Ticker.system(), Clock.systemUTC(), metrics,
                secrets);
        if (shared != null) {
            CoreFactory.auditLostEdits(h, shared);
            connectShared(shared);
        }
        LoadedCatalog loaded = loadCatalog();
        // HEDGEROW_CONFIG is the whole catalog (orgs taken out of it are removed); the demo's only adds its own
        h.catalog().publish(loaded, demo == null).await().atMost(Duration.ofSeconds(30));
        h.catalog().startPolling(scheduler, catalogPoll);
        LOG.log(System.Logger.Level.INFO, "Hedgerow ready: {0} org(s), state {1}, functions {2}, provider keys {3}, "
                        + "catalog file revision {4} ({5})",
                h.catalog().current().orgs().size(), stateMode, function.orElse("all"),
                secrets.encrypts() ? "encrypted (" + secrets.origin() + " key)" : "in plaintext",
                revisionText(loaded.revision()), h.catalog().fileStatus().outcome());
        core = h;
        return h;
    }

    /**
     * Opens the Redis connections before the catalog's publish, the first guarded call ({@link
     * ResilientStateStore#warmUp}): a cold start's first connection to a TLS Redis Cluster took up to 1.1 s, past the
     * guard's 1 s, and the publish went to local state. Waits up to {@link #REDIS_READ_IDLE} (a connection that reads
     * nothing for that long is closed anyway); a Redis that has not answered by then leaves the instance on local
     * state at once (the guard's breaker logs why), to try Redis again as during any outage.
     */
    private static void connectShared(ResilientStateStore store) {
        long start = System.nanoTime();
        String down = store.warmUp(REDIS_READ_IDLE).await().indefinitely();
        // a server in the other mode answers (a cluster node its ping, a single server a cluster client's nothing) and
        // then fails every call: the instance stayed ready on its own local state for good (found by hunt21); a
        // setting's mistake stops it, as the settings' own checks do
        String mismatch = !down.isEmpty() && !down.contains("cluster") ? ""   // not reached: nothing to ask
                : store.modeMismatch().ifNoItem().after(REDIS_READ_IDLE).recoverWithItem("").await().indefinitely();
        if (!mismatch.isEmpty()) {
            throw new ConfigurationException("Hedgerow stops: " + mismatch,
                    java.util.Set.of("redis.url", "hedgerow.redis.cluster"));
        }
        if (down.isEmpty()) {
            LOG.log(System.Logger.Level.INFO, "Redis answered in {0} ms",
                    Long.toString((System.nanoTime() - start) / 1_000_000));
        }
    }

    /**
     * Stops taking requests and lets those in flight finish for up to {@code hedgerow.shutdown.grace}; then ends the
     * ones still running with 503 {@code server_shutting_down} (a stream as its error event) and waits a moment for
     * those answers to be written. Returns at once when nothing is in flight.
     */
    private void drain() {
        gate.close();
        int n = gate.inFlight();
        if (n == 0) {
            return;
        }
        LOG.log(System.Logger.Level.INFO, "Hedgerow is shutting down: {0} request(s) in flight may take up to {1}"
                + " to finish (hedgerow.shutdown.grace); new requests get 503 server_shutting_down", n,
                ShutdownGate.text(shutdownGrace));
        if (gate.awaitIdle(shutdownGrace)) {
            LOG.log(System.Logger.Level.INFO, "Every request in flight finished");
            return;
        }
        Hedgerow h = core;
        int ended = h == null ? 0 : h.dispatcher().shutDown(ApiError.shuttingDown("This Hedgerow instance shut "
                + "down before the answer was complete (its grace period for requests in flight, "
                + ShutdownGate.text(shutdownGrace) + ", ended); retry the request."));
        LOG.log(System.Logger.Level.WARNING, "Grace period of {0} over: {1} request(s) still running ended with 503 "
                + "server_shutting_down", ShutdownGate.text(shutdownGrace), ended);
        if (!gate.awaitIdle(WRITES_MAX)) { // their last events go out before the server closes
            LOG.log(System.Logger.Level.WARNING, "{0} request(s) still in flight are cut", gate.inFlight());
        }
    }

    /** Waits until the shared store has answered every call made to it, for at most {@code max}; true if it has. */
    private static boolean awaitCalls(ResilientStateStore s, Duration max) {
        long deadline = System.nanoTime() + max.toNanos();
        while (s.callsInFlight() > 0) {
            if (System.nanoTime() - deadline >= 0) {
                return false;
            }
            try {
                Thread.sleep(5);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                return false;
            }
        }
        return true;
    }

    /** A file revision as logs and readiness show it. */
    static String revisionText(long revision) {
        return revision == LoadedCatalog.NO_REVISION ? "none" : Long.toString(revision);
    }

    /** Hedgerow's own Prometheus meters (built with the core). */
    public GatewayMetrics metrics() {
        core();
        return metrics;
    }

    /** Requests this instance has finished (the JIT warm-up gate's traffic count). */
    long finishedRequests() {
        core();
        return metrics.finishedRequests();
    }

    public Functions functions() {
        return Functions.parse(function.orElse("all"));
    }

    public String stateMode() {
        return stateMode;
    }

    private StateStore createStore(VertxScheduler scheduler) {
        if (redisUrl.isEmpty() || redisUrl.get().isBlank()) {
            stateMode = "memory";
            return new MemoryStateStore(Ticker.system());
        }
        stateMode = redisCluster ? "redis-cluster" : "redis";
        clusterSeedWarning(redisUrl.get(), redisCluster).ifPresent(w -> LOG.log(System.Logger.Level.WARNING, w));
        // a CA file that cannot be read stops startup (HedgerowSettings)
        shared = redisStore(vertx, redisUrl.get(), redisCluster,
                new RedisTls(redisTlsCa.filter(f -> !f.isBlank()), redisTlsVerifyHost));
        StateStore store = shared;
        if (positive(writeBatch)) {
            batching = new BatchingStateStore(store, scheduler, writeBatch);
            store = batching;
        }
        return positive(snapshotMaxAge) ? new CachingStateStore(store, snapshotMaxAge, Ticker.system()) : store;
    }

    private static boolean positive(Duration d) {
        return !d.isNegative() && !d.isZero();
    }

    /** The Redis store behind its outage guard, when state is shared (empty on embedded state). */
    public Optional<ResilientStateStore> sharedState() {
        core();
        return Optional.ofNullable(shared);
    }

    /**
     * A Redis connection that has read nothing for this long is closed, and the pool opens a new one when it needs it.
     * The outage guard gives up on a call after 1 s but cannot take back the pooled connection the call holds: a
     * connection whose peer went silent with the socket left open (a network blackhole, a firewall or NAT that
     * dropped the connection's state) would hold its pool slot until the kernel gives up on it, about 15 minutes,
     * and once every slot is held so, no call reaches a Redis that is healthy again and the instance stays off
     * shared state. Three times the guard's timeout: an answer that is merely slow still arrives on its connection.
     * Hedgerow sends no blocking command and subscribes to nothing, so a healthy connection with a command out always
     * reads within it; the cost is that a connection left idle that long is closed too and reopened on its next use
     * (a TCP connect and the client's handshake). TCP keepalive would not do: it finds a dead peer only after
     * minutes by default, and never when a proxy in between answers its probes while forwarding nothing.
     * <p>
     * The timer counts from the connection's last read, not from the command's sending: a connection the pool handed
     * out after lying idle for nearly that long would be closed with its command still out. So the pool never hands
     * one out: a connection idle for {@link #REDIS_RECYCLE} is closed by the pool's cleaner, which looks every
     * {@link #REDIS_CLEANER}; one handed out has at least the difference left, more than the guard waits.
     */
    static final Duration REDIS_READ_IDLE = Duration.ofSeconds(3);
    static final Duration REDIS_RECYCLE = Duration.ofSeconds(1);
    static final Duration REDIS_CLEANER = Duration.ofMillis(250);

    /**
     * The store for {@code REDIS_URL} (one URL, or a comma-separated list of cluster nodes when {@code cluster}):
     * Redis behind a {@link ResilientStateStore}, so an outage falls back to local state instead of failing requests.
     */
    public static ResilientStateStore redisStore(Vertx vertx, String urls, boolean cluster) {
        return redisStore(vertx, urls, cluster, RedisTls.DEFAULTS);
    }

    /** As above, {@code rediss://} connections made as {@code tls} says. */
    public static ResilientStateStore redisStore(Vertx vertx, String urls, boolean cluster, RedisTls tls) {
        RedisOptions options = redisOptions(urls, cluster, tls);
        io.vertx.mutiny.redis.client.Redis redis = io.vertx.mutiny.redis.client.Redis.createClient(
                io.vertx.mutiny.core.Vertx.newInstance(vertx), options);
        return new ResilientStateStore(new RedisStateStore(redis, options.getType()),
                new MemoryStateStore(Ticker.system()), ResilientStateStore.Settings.DEFAULTS);
    }

    /**
     * What to tell an operator who gave a Redis Cluster one node: the client learns the cluster from the nodes listed
     * only, so while that one is down the instance serves on local state, even once a replica has taken its place
     * (found by hunt7). Nothing when several are listed, or the Redis is not a cluster, or the one is an ElastiCache
     * Serverless endpoint ({@code *.serverless.*.cache.amazonaws.com}), which is one endpoint by design and the
     * shipped AWS stack's (the warning greeted every Lambda cold start; found by hunt15).
     */
    private static final java.util.regex.Pattern SERVERLESS_ENDPOINT = java.util.regex.Pattern.compile(
            "(?i)rediss?://([^@/]*@)?[^/:@]+\\.serverless\\.[^/:@]+\\.cache\\.amazonaws\\.com(:\\d+)?(/.*)?");

    static Optional<String> clusterSeedWarning(String urls, boolean cluster) {
        List<String> listed = java.util.Arrays.stream(urls.split(",")).filter(u -> !u.isBlank()).toList();
        boolean serverless = listed.size() == 1 && SERVERLESS_ENDPOINT.matcher(listed.get(0)).matches();
        return cluster && listed.size() == 1 && !serverless ? Optional.of("REDIS_URL names one node of the Redis"
                + " Cluster: the client learns the"
                + " cluster from that node alone, so while it is down this instance serves on local state, even once"
                + " a replica has taken over. List several nodes, comma-separated (a managed cluster's configuration"
                + " endpoint that resolves to several nodes is fine)") : Optional.empty();
    }

    /**
     * How {@code rediss://} connections are made: the certificate authorities trusted ({@code caFile}, a PEM file;
     * empty: the JVM's own, which hold the public ones a managed Redis such as ElastiCache uses), and whether the
     * server's certificate must name the host connected to ({@code verifyHost}; off only for a Redis reached by an
     * address its certificate does not name). Vert.x 4.5 refuses every TLS connection whose client has not said
     * which hostname check it wants, so without this no {@code rediss://} URL ever connected and an instance served
     * on local state for good, its readiness saying only "degraded" (found by hunt15).
     */
    public record RedisTls(Optional<String> caFile, boolean verifyHost) {
        public static final RedisTls DEFAULTS = new RedisTls(Optional.empty(), true);
    }

    /** The Redis client's options for {@link #redisStore}: its pool, and the read-idle timer with its recycling. */
    static RedisOptions redisOptions(String urls, boolean cluster) {
        return redisOptions(urls, cluster, RedisTls.DEFAULTS);
    }

    static RedisOptions redisOptions(String urls, boolean cluster, RedisTls tls) {
        RedisOptions options = new RedisOptions().setMaxPoolSize(64).setMaxPoolWaiting(4096)
                .setMaxWaitingHandlers(8192).setPoolRecycleTimeout((int) REDIS_RECYCLE.toMillis())
                .setPoolCleanerInterval((int) REDIS_CLEANER.toMillis());
        options.getNetClientOptions().setReadIdleTimeout((int) REDIS_READ_IDLE.toMillis())
                .setIdleTimeoutUnit(TimeUnit.MILLISECONDS);
        options.setType(cluster ? RedisClientType.CLUSTER : RedisClientType.STANDALONE);
        // "HTTPS": the certificate must name the host (RFC 2818), as a browser checks; "" checks nothing, said so
        options.getNetClientOptions().setHostnameVerificationAlgorithm(tls.verifyHost() ? "HTTPS" : "");
        tls.caFile().ifPresent(ca -> options.getNetClientOptions()
                .setTrustOptions(new io.vertx.core.net.PemTrustOptions().addCertPath(ca)));
        for (String url : urls.split(",")) {
            if (!url.isBlank()) {
                options.addConnectionString(plusKept(url.trim()));
            }
        }
        return options;
    }

    /**
     * The URL with each {@code +} of its user and password written {@code %2B}: Vert.x decodes them with
     * {@link java.net.URLDecoder}, which reads a {@code +} as a space (a form's rule, not a URL's), so a generated
     * password holding one ({@code openssl rand -base64}) was refused and the instance served on local state for good
     * (found by hunt25).
     */
    static String plusKept(String url) {
        int from = url.indexOf("://");
        int at = url.lastIndexOf('@');
        if (from < 0 || at <= from) {
            return url;
        }
        return url.substring(0, from + 3) + url.substring(from + 3, at).replace("+", "%2B") + url.substring(at);
    }

    /**
     * Whether the process serves the bundled demo catalog: no catalog file ({@code HEDGEROW_CONFIG} unset or blank).
     * Its one made-up org may be shown openly (metrics, the probe report); a catalog file's orgs may not.
     */
    public static boolean demoCatalog(Optional<String> configPath) {
        return configPath.filter(p -> !p.isBlank()).isEmpty();
    }

    /**
     * The catalog of {@code HEDGEROW_CONFIG}, or the demo's. An invalid one stops startup: its errors are logged once,
     * then Quarkus prints the one-line message of the {@link ConfigurationException} (with no stack trace, which
     * repeated the list inside it) and the process exits with status 1. (A {@code PreventFurtherStepsException}
     * would not do: Quarkus takes it as "start nothing more" and the process stays up, serving nothing.)
     */
    private LoadedCatalog loadCatalog() {
        boolean file = !demoCatalog(configPath);
        String source = file ? configPath.get() : "the bundled demo catalog";
        try {
            if (file) {
                return new CatalogLoader().load(Path.of(configPath.get()));
            }
            demo = DemoFleet.start();
            Map<String, String> env = new HashMap<>(System.getenv());
            env.putAll(demo.environment());
            LOG.log(System.Logger.Level.INFO, "No HEDGEROW_CONFIG: demo catalog on simulated providers {0}",
                    demo.environment());
            return new CatalogLoader(env::get).loadResource(CatalogLoader.DEMO_RESOURCE);
        } catch (CatalogException e) {
            LOG.log(System.Logger.Level.ERROR, source + ": " + e.getMessage());
            throw new ConfigurationException("Hedgerow stops: " + (file ? "the catalog " + source
                    + " (HEDGEROW_CONFIG)" : source) + " is invalid; its errors are listed above.");
        }
    }

    /** The longest the shutdown waits for state writes (a batch's flush, then every write still on its way). */
    private static final Duration WRITES_MAX = Duration.ofSeconds(2);

    /**
     * The process is asked to stop (SIGTERM, Ctrl-C): Quarkus' pre-shutdown phase ({@code
     * quarkus.shutdown.delay-enabled=true}, no delay set), the last moment the HTTP server still listens; by the
     * {@link ShutdownEvent} it has closed every connection. The requests in flight are drained ({@link #drain}), then
     * every state write they and earlier requests made (usage, ledger, audit events, learned models, leases) reaches
     * the store before the process goes.
     */
    void onShutdownSignal(@Observes ShutdownDelayInitiatedEvent ev) {
        drain();
        flushWrites();
    }

    /** Whether the lost ledger lines were logged: {@link #flushWrites} runs at the shutdown signal and at the stop. */
    private volatile boolean ledgerLossLogged;

    /**
     * Writes out what waits in the write batch, then waits for every call still on its way to the shared store (each
     * for at most {@link #WRITES_MAX}).
     */
    private void flushWrites() {
        BatchingStateStore b = batching;
        if (b != null) { // what waits in a batch is written out before the process goes
            try {
                b.flush().await().atMost(WRITES_MAX);
            } catch (RuntimeException e) {
                LOG.log(System.Logger.Level.WARNING, "batched state writes not flushed at shutdown: {0}", e.toString());
            }
        }
        ResilientStateStore s = shared;
        if (s != null) { // fire-and-forget writes (audit events, affinity, a ledger write) may still be on their way
            if (!awaitCalls(s, WRITES_MAX)) {
                LOG.log(System.Logger.Level.WARNING, "{0} state call(s) still unanswered at shutdown",
                        s.callsInFlight());
            }
            List<String> lost = s.pendingLedgerLines();
            if (!lost.isEmpty() && !ledgerLossLogged) {
                // said once: the pre-shutdown phase and the stop both flush
                ledgerLossLogged = true;
                LOG.log(System.Logger.Level.WARNING, "{0} usage ledger line(s) not confirmed by Redis at shutdown "
                        + "are lost: {1}", lost.size(), String.join("; ", lost));
            }
        }
    }

    /** The process stops: anything written since the pre-shutdown phase (or without one) goes out, then it closes. */
    void onStop(@Observes ShutdownEvent ev) {
        gate.close();
        flushWrites();
        if (core != null) {
            core.catalog().stop();
        }
        RequestLog.flushShared(); // lines of the last requests, before the process goes
        if (demo != null) { // its own Vert.x instance: Quarkus closes only the application's
            try {
                demo.close();
            } catch (RuntimeException e) {
                LOG.log(System.Logger.Level.WARNING, "demo simulators not stopped: {0}", e.toString());
            }
        }
        if (upstream != null) {
            upstream.close();
        }
    }
}
