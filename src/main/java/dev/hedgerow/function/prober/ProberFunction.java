package dev.hedgerow.function.prober;

import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.hedgerow.api.ApiError;
import dev.hedgerow.function.JsonReplies;
import dev.hedgerow.function.BearerToken;
import dev.hedgerow.function.HedgerowApp;
import dev.hedgerow.function.VertxScheduler;
import dev.hedgerow.prober.Prober;
import dev.hedgerow.prober.ProberConfig;
import dev.hedgerow.prober.RoundReport;
import dev.hedgerow.runtime.Hedgerow;
import dev.hedgerow.time.Ticker;
import io.micrometer.core.instrument.MeterRegistry;
import io.quarkus.runtime.ShutdownDelayInitiatedEvent;
import io.quarkus.runtime.ShutdownEvent;
import io.quarkus.runtime.StartupEvent;
import io.quarkus.runtime.configuration.ConfigurationException;
import io.vertx.core.Vertx;
import io.vertx.core.http.HttpMethod;
import io.vertx.core.http.HttpServerResponse;
import io.vertx.ext.web.Router;
import io.vertx.ext.web.RoutingContext;
import jakarta.annotation.PostConstruct;
import jakarta.annotation.Priority;
import jakarta.enterprise.context.ApplicationScoped;
import jakarta.enterprise.event.Observes;
import jakarta.inject.Inject;
import jakarta.interceptor.Interceptor;
import org.eclipse.microprofile.config.inject.ConfigProperty;

import java.time.Duration;
import java.util.Optional;
import java.util.UUID;
import java.util.concurrent.atomic.AtomicBoolean;

/**
 * The prober function's edge: {@code POST /prober/run} runs one probe round (what an EventBridge schedule or a
 * Knative PingSource triggers) and answers its report; with {@code hedgerow.prober.interval} above zero an
 * in-process timer also runs a round at that interval (scripts/run). Both only when this process serves the
 * prober function. Whoever asks, a round starts at least {@code hedgerow.prober.min-interval} after the last one
 * started anywhere in the fleet (each round is paid upstream requests); one asked for sooner is answered
 * {@code ran: false} at once. Rounds are counted in {@code hedgerow_prober_rounds_total{result="ran"|"skipped"}}.
 *
 * <p>The full report names every org's routes, their failures and verdicts, and the prober's URL is often public (on
 * Knative it takes capacity reports; a schedule's call carries no {@code Authorization}). So only a caller with the
 * bearer token {@code hedgerow.prober.token} gets it; a caller without any {@code Authorization} gets the round run
 * and only its {@linkplain RoundReport#toSummaryNode() counts}; a wrong token gets 401. With no token set, a process
 * serving a catalog file answers everyone the counts (403 {@code prober_token_not_set} to a caller presenting a
 * token, which cannot be checked), as {@link dev.hedgerow.function.MetricsGuard} keeps metrics closed there; the
 * bundled demo (no {@code HEDGEROW_CONFIG}, one made-up org) answers everyone the full report.
 *
 * <p>On SIGTERM the timer stops before the drain begins ({@link #onShutdownSignal}): a round already running may
 * finish, no new one starts during the grace period.
 *
 * <p>A route that passed its known-answer check is checked again after {@code hedgerow.prober.verify-every} (10
 * minutes), one without a passing verdict every round.
 */
@ApplicationScoped
public class ProberFunction {
    private static final System.Logger LOG = System.getLogger("dev.hedgerow.prober");

    @Inject
    HedgerowApp app;

    @Inject
    Vertx vertx;

    @ConfigProperty(name = "hedgerow.prober.interval", defaultValue = "15s")
    Duration interval;

    @ConfigProperty(name = "hedgerow.prober.concurrency", defaultValue = "4")
    int concurrency;

    @ConfigProperty(name = "hedgerow.prober.timeout", defaultValue = "10s")
    Duration timeout;

    @ConfigProperty(name = "hedgerow.prober.token")
    Optional<String> token;

    @ConfigProperty(name = "hedgerow.prober.min-interval", defaultValue = "10s")
    Duration minInterval;

    @ConfigProperty(name = "hedgerow.config")
    Optional<String> configPath;

    /** How long a passing known-answer check holds before a round checks the route again ({@code 0s}: every round). */
    @ConfigProperty(name = "hedgerow.prober.verify-every", defaultValue = "10m")
    Duration verifyEvery;

    @Inject
    MeterRegistry meters;

    private volatile Prober prober;
    private volatile VertxMetricsSource metrics;
    private final AtomicBoolean running = new AtomicBoolean();
    private volatile long timerId = -1;
    /** Set when the process is asked to stop: the timer starts no round from then on. */
    private volatile boolean stopping;

    /** The prober token ({@code hedgerow.prober.token}), hashed once. */
    private BearerToken expected;

    @PostConstruct
    void init() {
        expected = BearerToken.of(token);
    }

    void mount(@Observes Router router) {
        if (app.functions().has("prober")) {
            router.post("/prober/run").handler(this::run);
            JsonReplies.methodNotAllowed(router, HttpMethod.POST, "/prober/run");
        }
    }

    void onStart(@Observes StartupEvent ev) {
        if (!app.functions().has("prober")) {
            return;
        }
        try {
            config(); // a bad setting stops startup rather than failing every round with a 500
        } catch (IllegalArgumentException e) {
            throw new ConfigurationException("Hedgerow stops: invalid prober settings (hedgerow.prober.concurrency "
                    + concurrency + ", timeout " + timeout + ", min-interval " + minInterval + ", verify-every " + verifyEvery
                    + "): " + e.getMessage());
        }
        if (!interval.isZero() && !interval.isNegative()) {
            timerId = vertx.setPeriodic(interval.toMillis(), id -> {
                if (stopping) { // a firing already queued when the timer was cancelled
                    return;
                }
                round().subscribe().with(r -> { }, t -> LOG.log(System.Logger.Level.WARNING,
                        "probe round failed: " + t));
            });
            LOG.log(System.Logger.Level.INFO, "prober: a round every {0}", interval);
            if (interval.compareTo(minInterval) < 0) {
                LOG.log(System.Logger.Level.WARNING, "prober: a round every {0} but at least {1} between rounds "
                        + "(hedgerow.prober.min-interval): some of the timer''s rounds will be skipped",
                        interval, minInterval);
            }
        }
        if (!expected.set() && !HedgerowApp.demoCatalog(configPath)) {
            LOG.log(System.Logger.Level.INFO, "/prober/run answers only a round's counts until "
                    + "HEDGEROW_PROBER_TOKEN is set; the full report then needs it as a bearer token");
        }
    }

    private ProberConfig config() {
        return ProberConfig.defaults().withConcurrency(concurrency).withProbeTimeout(timeout)
                .withMinInterval(minInterval).withVerifyEvery(verifyEvery);
    }

    /**
     * The process is asked to stop (SIGTERM): the timer stops before {@link HedgerowApp}'s drain (this observer's
     * priority runs it first), which may last the whole grace period while requests finish; a round started during it
     * would send paid probes whose results no one reads. A round already running may finish.
     */
    void onShutdownSignal(@Observes @Priority(Interceptor.Priority.APPLICATION) ShutdownDelayInitiatedEvent ev) {
        stopTimer();
    }

    void onStop(@Observes ShutdownEvent ev) {
        stopTimer();
        if (metrics != null) {
            metrics.close();
        }
    }

    private void stopTimer() {
        stopping = true;
        long id = timerId;
        if (id >= 0) {
            vertx.cancelTimer(id);
            timerId = -1;
            LOG.log(System.Logger.Level.INFO, "prober: the process stops, no new probe round starts");
        }
    }

    /** One round, unless this instance is still running the previous one; counted by whether it ran. */
    private io.smallrye.mutiny.Uni<RoundReport> round() {
        // deferred: a round that throws as it is built ends as a failed round, and still frees the flag (thrown
        // before its Uni existed, it left every later round "still running"; hunt28)
        io.smallrye.mutiny.Uni<RoundReport> round = running.compareAndSet(false, true)
                ? io.smallrye.mutiny.Uni.createFrom().deferred(() -> prober().runRound())
                        .eventually(() -> running.set(false))
                : io.smallrye.mutiny.Uni.createFrom().item(
                        RoundReport.skipped("the previous round on this instance is still running"));
        return round.invoke(r -> meters.counter("hedgerow_prober_rounds", "result", r.ran() ? "ran" : "skipped")
                .increment());
    }

    private void run(RoutingContext ctx) {
        HttpServerResponse resp = ctx.response();
        String authorization = ctx.request().getHeader("authorization");
        boolean anonymous = authorization == null || authorization.isBlank();
        boolean full;
        if (expected.set()) {
            full = !anonymous && expected.presentedBy(authorization);
            if (!anonymous && !full) {
                JsonReplies.error(resp, ApiError.unauthorized("the prober token (HEDGEROW_PROBER_TOKEN)"));
                return;
            }
        } else if (HedgerowApp.demoCatalog(configPath)) {
            full = true;
        } else if (!anonymous) {
            JsonReplies.error(resp, new ApiError(403, "permission_error", "prober_token_not_set",
                    "The full probe report names every organization's routes, so this deployment serves it only with "
                            + "a token: set HEDGEROW_PROBER_TOKEN and call with 'Authorization: Bearer <token>'. "
                            + "Without Authorization, a round runs and its counts are answered.", null, null));
            return;
        } else {
            full = false;
        }
        round().subscribe().with(r -> JsonReplies.json(resp, 200, full ? r.toNode() : summary(r, expected.set())),
                t -> JsonReplies.error(resp, new ApiError(500, "server_error", "probe_round_failed",
                        "The probe round failed: " + t.getClass().getSimpleName(), null, null)));
    }

    /** The counts of a round, and where its full report is to be had. */
    private static ObjectNode summary(RoundReport r, boolean tokenSet) {
        return r.toSummaryNode().put("details", tokenSet
                ? "withheld: the per-route report is answered only with the prober token (HEDGEROW_PROBER_TOKEN)"
                : "withheld: the per-route report needs a prober token, and this deployment sets none "
                        + "(HEDGEROW_PROBER_TOKEN)");
    }

    private synchronized Prober prober() {
        if (prober == null) {
            Hedgerow core = app.core();
            metrics = new VertxMetricsSource(vertx, dev.hedgerow.catalog.ProviderUrls.metadataAllowed(System::getenv)
                    ? ip -> null : dev.hedgerow.catalog.ProviderUrls::metadataReason);
            prober = new Prober(new Prober.Deps(core.store(), () -> core.catalog().current(), core.models(),
                    core.upstream(), metrics, new VertxScheduler(vertx), Ticker.system(), core.clock(),
                    core.tokens()::countInput, "hedgerow-" + UUID.randomUUID()), config());
        }
        return prober;
    }
}
