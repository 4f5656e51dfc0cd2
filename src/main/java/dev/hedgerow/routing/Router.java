package dev.hedgerow.routing;

import dev.hedgerow.api.ApiError;
import dev.hedgerow.api.ProviderPrefs;
import dev.hedgerow.api.RequestException;
import dev.hedgerow.api.RetryAdvice;
import dev.hedgerow.catalog.GroupSettings;
import dev.hedgerow.catalog.Org;
import dev.hedgerow.catalog.Provider;
import dev.hedgerow.catalog.Route;
import dev.hedgerow.state.RouteFlags;
import dev.hedgerow.state.RouteSnapshot;
import dev.hedgerow.state.StateStore;
import io.smallrye.mutiny.Uni;

import java.time.InstantSource;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.LinkedHashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Set;
import java.util.function.Function;
import java.util.stream.Collectors;

/**
 * Filters an alias group's routes for one request and ranks the rest: preferences, capabilities, standing,
 * breaker state, headroom, then the group's balancer, then the request's soft preferences. All shared state is
 * read in one batched round trip (plus the rotation cursor). Thread-safe.
 */
public final class Router {
    /**
     * Route blob set by the prober's known-answer check (with a TTL, re-judged every round): a value starting with
     * {@code fail} excludes the route unless an operator's verdict ({@link #OPERATOR_VERIFICATION}) is set. The
     * operator's blob names are declared in {@link RouteFlags}.
     */
    public static final String VERIFICATION = RouteFlags.PROBER_VERIFICATION;
    /**
     * Route blob set by the console ({@code PUT /admin/routes/verification}), kept until the operator clears it
     * (which writes {@link RouteFlags#NO_VERDICT}): while it is set it is the route's verification, whatever the
     * prober judges.
     */
    public static final String OPERATOR_VERIFICATION = RouteFlags.OPERATOR_VERIFICATION;
    /** Route blob set by the console: any value but {@value #GOOD_STANDING} excludes the route. */
    public static final String STANDING = RouteFlags.STANDING;
    public static final String GOOD_STANDING = RouteFlags.GOOD_STANDING;

    private final StateStore store;
    private final InstantSource clock;
    private final Function<GroupSettings, Balancer> balancers;
    private final RouteModels models;
    private final Function<ExtrasQuery, Uni<Map<String, float[]>>> extras;
    /** Rotation positions of the candidate sets a request narrowed its group to ({@link #position}). */
    private final SubsetCursors subsetCursors = new SubsetCursors();

    /**
     * @param extras fetches per-request extras a strategy needs (the semantic strategy's embeddings, keyed by route
     *               id, the prompt under {@code ""}); returns an empty map when none are needed
     */
    public Router(StateStore store, InstantSource clock, Function<GroupSettings, Balancer> balancers,
                  RouteModels models, Function<ExtrasQuery, Uni<Map<String, float[]>>> extras) {
        this.store = store;
        this.clock = clock;
        this.balancers = balancers;
        this.models = models;
        this.extras = extras;
    }

    /**
     * Refuses a chat request for {@code alias} the org cannot route: no such group (404 model_not_found), or a group of
     * embeddings models, which answer no chat completions (404 not_a_chat_model; an alias is all embeddings routes or
     * none, a catalog rule). The gateway and the console's explain ask the same question here.
     */
    public static void requireChatAlias(Org org, String alias) {
        List<Route> routes = alias == null ? List.of() : org.routesOf(alias);
        if (routes.isEmpty()) {
            throw new RequestException(ApiError.modelNotFound(String.valueOf(alias)));
        }
        if (routes.get(0).embeddings()) {
            throw new RequestException(ApiError.notAChatModel(alias));
        }
    }

    /**
     * Refuses an embeddings request for {@code alias} the org cannot route: no such group (404 model_not_found), or a
     * group of chat models (404 not_an_embeddings_model), the mirror of {@link #requireChatAlias}.
     */
    public static void requireEmbeddingsAlias(Org org, String alias) {
        List<Route> routes = alias == null ? List.of() : org.routesOf(alias);
        if (routes.isEmpty()) {
            throw new RequestException(ApiError.modelNotFound(String.valueOf(alias)));
        }
        if (!routes.get(0).embeddings()) {
            throw new RequestException(ApiError.notAnEmbeddingsModel(alias));
        }
    }

    /** Plans a request for {@code alias}; the alias must have routes in {@code org}. */
    public Uni<RoutePlan> plan(Org org, String alias, RequestFacts facts) {
        return plan(org, alias, facts, null, null);
    }

    /**
     * @param cursor     the rotation position to rank at, or null to take the group's next one from the store
     * @param placements when not null, receives each candidate's placement by the auto strategy (explain)
     */
    private Uni<RoutePlan> plan(Org org, String alias, RequestFacts facts, Long cursor,
                                Map<String, String> placements) {
        GroupSettings settings = org.group(alias);
        List<Route> members = org.routesOf(alias);
        List<RoutePlan.Rejection> rejected = new ArrayList<>();

        RoutePlan.Blocked prefsBlock = applyPreferences(members, facts.prefs(), alias, rejected);
        if (prefsBlock != null) {
            return Uni.createFrom().item(prefsBlock);
        }
        List<Route> allowed = members.stream()
                .filter(r -> rejected.stream().noneMatch(x -> x.routeId().equals(r.id())))
                .collect(Collectors.toList());

        // operator pins and drains (catalog edits from the console) apply before anything else is weighed
        boolean pinActive = members.stream().anyMatch(Route::pinned);
        List<Route> operated = new ArrayList<>();
        for (Route r : allowed) {
            if (r.drained()) {
                rejected.add(new RoutePlan.Rejection(r.id(), "drained by an operator"));
            } else if (pinActive && !r.pinned()) {
                rejected.add(new RoutePlan.Rejection(r.id(), "another member is pinned"));
            } else {
                operated.add(r);
            }
        }
        if (operated.isEmpty()) {
            // they return when an operator acts: an SDK's retry within seconds would meet this same answer
            ApiError err = new ApiError(503, "server_error", "no_healthy_provider", "Every member of '" + alias
                    + "' this request may use is drained or held out by a pinned member.", null,
                    RetryAdvice.notSoon());
            return Uni.createFrom().item(new RoutePlan.Blocked(err, "no_healthy_provider", rejected));
        }

        List<Route> capable = new ArrayList<>();
        Map<String, List<Shortfall.Lack>> lacking = new LinkedHashMap<>();
        for (Route r : operated) {
            List<Shortfall.Lack> lacks = Shortfall.of(r, facts);
            if (lacks.isEmpty()) {
                capable.add(r);
            } else {
                lacking.put(r.id(), lacks);
                rejected.add(new RoutePlan.Rejection(r.id(), "lacks " + String.join(", ",
                        lacks.stream().map(Shortfall.Lack::describe).toList())));
            }
        }
        if (capable.isEmpty()) {
            ApiError tooLong = Shortfall.contextExceeded(alias, lacking, facts, operated.get(0).embeddings());
            if (tooLong != null) {
                return Uni.createFrom().item(new RoutePlan.Blocked(tooLong, tooLong.code(), rejected));
            }
            ApiError err = ApiError.invalidRequest("no_capable_provider", Shortfall.message(alias, lacking), null);
            return Uni.createFrom().item(new RoutePlan.Blocked(err, "no_capable_provider", rejected));
        }

        List<String> keys = capable.stream().map(r -> key(org, r)).toList();
        Uni<Map<String, float[]>> embeddings = extras.apply(new ExtrasQuery(org, alias, settings, facts, capable));
        // the request's preferences or needs took members out (capable within operated within allowed within members)
        boolean narrowed = allowed.size() < members.size() || capable.size() < operated.size();
        Uni<Long> position = cursor != null ? Uni.createFrom().item(cursor)
                : position(org, alias, settings, facts, capable, narrowed);
        java.util.function.ToLongFunction<String> rotation = cursor != null ? name -> cursor
                : ownRotations(org.id() + '\n' + alias + '\n');
        return Uni.combine().all()
                .unis(store.snapshot(keys, settings.balancer().usageWindow()), position,
                        affinity(org, settings, facts), embeddings)
                .asTuple()
                .map(t -> rank(org, alias, settings, facts, capable, t.getItem1(), t.getItem2(), rotation, rejected,
                        affinityRoutes(t.getItem3(), facts.prefixHashes()), t.getItem4(), placements));
    }

    /**
     * The rotation position a request ranks its candidates at. A request whose candidates are every member an operator
     * left in takes the group's shared cursor; one that {@code narrowed} them by its own preferences or needs
     * ({@code provider.only}, tools, a large prompt) walks a rotation of its own
     * candidate set: sharing the one cursor, requests that alternate between two sets took every other position, and
     * the narrower set landed on one member every time (found by hunt20: ignoring one of three equal members, all went
     * to one of the other two). One capable route ranks the same at every position: no round trip. Nor does a request
     * the group's cursor does not rank: a semantic group's (its balancer rotates each kind of request on its own,
     * {@link Balancer.BalanceContext#rotation}), a consistent-hashing request with its key (the cursor shares only the
     * requests without one; moved by the keyed ones too, a 3:1 pair went 50/50; found by hunt27).
     */
    private Uni<Long> position(Org org, String alias, GroupSettings settings, RequestFacts facts, List<Route> capable,
                               boolean narrowed) {
        if (capable.size() == 1 || settings.strategy() == dev.hedgerow.catalog.Strategy.SEMANTIC
                || settings.strategy() == dev.hedgerow.catalog.Strategy.CONSISTENT_HASHING
                && !facts.headers().getOrDefault(settings.balancer().hashOnHeader().toLowerCase(java.util.Locale.ROOT),
                "").isEmpty()) {
            return Uni.createFrom().item(0L);
        }
        if (!narrowed) {
            return store.nextCursor(org.id(), alias);
        }
        return Uni.createFrom().item(subsetCursors.next(org.id() + '\n' + alias + '\n'
                + capable.stream().map(Route::id).sorted().collect(Collectors.joining("\n"))));
    }

    /**
     * Per-instance rotation positions of narrowed candidate sets, each starting at random (instances out of step), the
     * least recently used forgotten past {@value #MAX}: a client can name many sets, and each needs only to rotate.
     * Thread-safe.
     */
    static final class SubsetCursors {
        static final int MAX = 4096;
        private final Map<String, long[]> positions = new LinkedHashMap<>(64, 0.75f, true) {
            @Override
            protected boolean removeEldestEntry(Map.Entry<String, long[]> eldest) {
                return size() > MAX;
            }
        };

        synchronized long next(String set) {
            long[] p = positions.computeIfAbsent(set,
                    k -> new long[] {java.util.concurrent.ThreadLocalRandom.current().nextInt(1 << 16)});
            return p[0]++;
        }
    }

    /**
     * A request's rotations of the group's own ({@link Balancer.BalanceContext#rotation}), on this instance's
     * {@link SubsetCursors} under {@code prefix} (the org and alias): each is moved at most once a request, whatever
     * number of times the balancer asks for it (a HashMap makes its table at the first put: only the semantic balancer
     * asks, so other requests pay for the empty map alone).
     */
    private java.util.function.ToLongFunction<String> ownRotations(String prefix) {
        Map<String, Long> taken = new java.util.HashMap<>(4);
        return name -> taken.computeIfAbsent(name, n -> subsetCursors.next(prefix + n));
    }

    /** Prefix affinity is the auto strategy's; a store failure only loses the preference. */
    private Uni<Map<String, List<String>>> affinity(Org org, GroupSettings settings, RequestFacts facts) {
        return settings.strategy() == dev.hedgerow.catalog.Strategy.AUTO && !facts.prefixHashes().isEmpty()
                ? store.affinity(org.id(), facts.prefixHashes()).onFailure().recoverWithItem(Map.of())
                : Uni.createFrom().item(Map.of());
    }

    /** Explanations rank at a fixed, non-exploring rotation position and leave the group's cursor alone. */
    static final long EXPLAIN_CURSOR = 1;

    /**
     * Explains how a request with these facts would be routed, without sending it or moving the group's rotation:
     * every route of the group with each filter's verdict (preferences, operator pins and drains, capabilities,
     * standing, health, headroom; all are evaluated, not just the first that failed), its predicted TTFT for this
     * prompt, SLO standing, headroom, affinity and final rank. Ties and exploration are resolved at rotation
     * position {@value #EXPLAIN_CURSOR}.
     */
    public Uni<Explanation> explain(Org org, String alias, RequestFacts facts) {
        GroupSettings settings = org.group(alias);
        List<Route> members = org.routesOf(alias);
        Map<String, String> placements = new java.util.concurrent.ConcurrentHashMap<>();
        List<String> keys = members.stream().map(r -> key(org, r)).toList();
        return Uni.combine().all()
                .unis(plan(org, alias, facts, EXPLAIN_CURSOR, placements),
                        store.snapshot(keys, settings.balancer().usageWindow()), affinity(org, settings, facts))
                .asTuple()
                .map(t -> explanation(org, alias, settings, facts, members, t.getItem1(), t.getItem2(),
                        affinityRoutes(t.getItem3(), facts.prefixHashes()), placements));
    }

    private Explanation explanation(Org org, String alias, GroupSettings settings, RequestFacts facts,
                                    List<Route> members, RoutePlan plan, Map<String, RouteSnapshot> states,
                                    Set<String> affinityKeys, Map<String, String> placements) {
        List<RoutePlan.Rejection> prefRejections = new ArrayList<>();
        RoutePlan.Blocked prefsBlock = applyPreferences(members, facts.prefs(), alias, prefRejections);
        List<Candidate> ranked = plan instanceof RoutePlan.Ready r ? r.candidates() : List.of();
        boolean pinActive = members.stream().anyMatch(Route::pinned);
        List<Explanation.RouteView> views = new ArrayList<>();
        for (Route r : members) {
            String key = key(org, r);
            RouteSnapshot s = states.getOrDefault(key, RouteSnapshot.empty(key));
            List<Explanation.Check> checks = new ArrayList<>();
            String pref = prefsBlock != null ? prefsBlock.error().message() : prefRejections.stream()
                    .filter(x -> x.routeId().equals(r.id())).map(RoutePlan.Rejection::reason).findFirst()
                    .orElse(cutAsFallback(plan, r) ? A_FALLBACK : null);
            checks.add(new Explanation.Check("preferences", pref == null, pref == null ? "allowed" : pref));
            String operator = r.drained() ? "drained by an operator"
                    : pinActive && !r.pinned() ? "another member is pinned" : null;
            checks.add(new Explanation.Check("operator", operator == null, operator != null ? operator
                    : r.pinned() ? "pinned: takes all of the alias's traffic" : "takes traffic"));
            List<String> lacks = lacks(r, facts);
            checks.add(new Explanation.Check("capabilities", lacks.isEmpty(),
                    lacks.isEmpty() ? "can serve this request" : "lacks " + String.join(", ", lacks)));
            String standing = standing(s);
            checks.add(new Explanation.Check("standing", standing == null,
                    standing == null ? "in good standing" : standing));
            String health = health(s, settings.breaker().threshold());
            checks.add(new Explanation.Check("health", health == null, health == null
                    ? (tripped(s.fails(), settings.breaker().threshold()) ? "half-open: may serve as the probe"
                    : "healthy")
                    : health));
            java.util.Optional<CapacityReport> cap = models.capacity(s);
            String shortage = cap.map(CapacityReport::shortage).orElse(null);
            checks.add(new Explanation.Check("headroom", shortage == null, cap.isEmpty() ? "no fresh report"
                    : shortage == null ? "queue " + cap.get().queueDepth() + "/" + cap.get().maxQueue()
                    + ", memory pressure " + cap.get().memoryPressure()
                    : shortage + ": passed over while others have headroom"));
            int rank = 0;
            for (int i = 0; i < ranked.size(); i++) {
                if (ranked.get(i).id().equals(key)) {
                    rank = i + 1;
                }
            }
            views.add(new Explanation.RouteView(r.id(), r.provider(), r.model(), rank, checks,
                    models.ttft(s, facts, facts.thinksOn(r)),
                    models.sloStatus(s, settings.slo()).name().toLowerCase(Locale.ROOT), models.decodeSpeed(s),
                    cap.orElse(null), affinityKeys.contains(key), rank > 0 ? placements.get(r.id()) : null,
                    Explanation.Accuracy.of(models.accuracyScores(s))));
        }
        String outcome = plan instanceof RoutePlan.Blocked b ? b.error().code() : "ready";
        String error = plan instanceof RoutePlan.Blocked b ? b.error().message() : null;
        return new Explanation(alias, settings.strategy().wireName(), facts.promptTokens(), facts.contextNeeded(),
                facts.stream(), facts.needs(), outcome, error, EXPLAIN_CURSOR, views);
    }

    /** The plan ranked the route, then left it out as a fallback the request does not allow. */
    private static boolean cutAsFallback(RoutePlan plan, Route r) {
        return plan instanceof RoutePlan.Ready ready && ready.rejected().stream()
                .anyMatch(x -> x.routeId().equals(r.id()) && A_FALLBACK.equals(x.reason()));
    }

    /** Why breaker state keeps the route out right now (cooldown, Retry-After hold, probe in flight), or null. */
    private static String health(RouteSnapshot s, int maxFails) {
        if (s.coolingDown()) {
            return "cooling down (" + s.cooldownRemainingMillis() + " ms left)";
        }
        if (s.retryAfterMillis() > 0) {
            return "retry-after hold (" + s.retryAfterMillis() + " ms left)";
        }
        if (tripped(s.fails(), maxFails) && s.probeTaken()) {
            return "half-open probe in flight";
        }
        return null;
    }

    /**
     * The breaker's threshold (Kong's passive health check, nginx's max_fails): a failure count at {@code threshold}
     * ({@link GroupSettings.Breaker#threshold}) has opened the breaker; once its cooldown is over the route is
     * half-open, and serves as the fleet's one probe.
     */
    public static boolean tripped(long fails, int threshold) {
        return fails >= threshold;
    }

    /**
     * How long breaker state keeps a route out, from now: until both its cooldown and its provider's Retry-After hold
     * have ended (a cooldown still running counts at least 1 ms); 0 when neither runs. The router's wait for a route
     * it leaves out, and the dispatcher's for a route its own failures kept from serving.
     */
    public static long backInMillis(boolean coolingDown, long cooldownRemainingMillis, long retryAfterMillis) {
        return Math.max(coolingDown ? Math.max(1, cooldownRemainingMillis) : 0, Math.max(0, retryAfterMillis));
    }

    /** The store key of a route: route ids are unique per org only. */
    public static String key(Org org, Route r) {
        return org.id() + "/" + r.id();
    }

    /**
     * Whether {@code planned}, a member of its alias when a request of {@code org} was planned, is one the catalog
     * {@code now} lets the request take: still in that alias with the same provider and model, not drained, and not
     * held out by another member's pin (the filters {@link #plan} applies first).
     */
    public static boolean stillRouted(dev.hedgerow.catalog.Catalog now, Org org, Route planned) {
        Org current = now.org(org.id()).orElse(null);
        Route r = current == null ? null : current.route(planned.id()).orElse(null);
        if (r == null || !r.alias().equals(planned.alias()) || !r.provider().equals(planned.provider())
                || !r.model().equals(planned.model()) || r.drained()) {
            return false;
        }
        return r.pinned() || current.routesOf(r.alias()).stream().noneMatch(Route::pinned);
    }

    /** The routes that served the longest prefix any route served (none if no route served one). */
    private static Set<String> affinityRoutes(Map<String, List<String>> byHash, List<String> hashes) {
        for (int i = hashes.size() - 1; i >= 0; i--) {
            List<String> routes = byHash.get(hashes.get(i));
            if (routes != null && !routes.isEmpty()) {
                return Set.copyOf(routes);
            }
        }
        return Set.of();
    }

    /** What a strategy may need fetched before ranking (semantic: prompt and description embeddings). */
    public record ExtrasQuery(Org org, String alias, GroupSettings settings, RequestFacts facts, List<Route> routes) {
    }

    private RoutePlan rank(Org org, String alias, GroupSettings settings, RequestFacts facts, List<Route> capable,
                           Map<String, RouteSnapshot> states, long cursor,
                           java.util.function.ToLongFunction<String> rotation, List<RoutePlan.Rejection> rejected,
                           Set<String> affinity, Map<String, float[]> embeddings, Map<String, String> placements) {
        List<Candidate> healthy = new ArrayList<>();
        List<Candidate> lowHeadroom = new ArrayList<>();
        long minCooldown = RoutePlan.NEVER;
        int maxFails = settings.breaker().threshold();
        for (Route r : capable) {
            String key = key(org, r);
            RouteSnapshot s = states.getOrDefault(key, RouteSnapshot.empty(key));
            Provider p = org.provider(r.provider()).orElseThrow();
            String standing = standing(s);
            if (standing != null) {
                rejected.add(new RoutePlan.Rejection(r.id(), standing));
                continue;
            }
            if (s.heldOut()) {
                minCooldown = Math.min(minCooldown,
                        backInMillis(s.coolingDown(), s.cooldownRemainingMillis(), s.retryAfterMillis()));
                rejected.add(new RoutePlan.Rejection(r.id(), s.coolingDown() ? "cooling down" : "retry-after hold"));
                continue;
            }
            boolean halfOpen = tripped(s.fails(), maxFails);
            if (halfOpen && s.probeTaken()) {
                minCooldown = Math.min(minCooldown, 1000);
                rejected.add(new RoutePlan.Rejection(r.id(), "half-open probe in flight"));
                continue;
            }
            Candidate c = new Candidate(key, r, p, s, halfOpen, models.ttft(s, facts, facts.thinksOn(r)));
            if (models.hasHeadroom(s)) {
                healthy.add(c);
            } else {
                lowHeadroom.add(c);
            }
        }
        if (healthy.isEmpty() && lowHeadroom.isEmpty()) {
            // a time is known only for routes out on breaker state; routes held out by their standing alone (an
            // operator's suspension, a failed verification) return when someone acts, so no retry is asked for
            RetryAdvice retry = minCooldown == RoutePlan.NEVER ? RetryAdvice.notSoon() : RetryAdvice.after(minCooldown);
            return new RoutePlan.Blocked(noHealthy(alias, capable, rejected, retry), "no_healthy_provider",
                    rejected);
        }
        Balancer.BalanceContext ctx = new Balancer.BalanceContext(facts, cursor, settings, clock.millis(), affinity,
                embeddings, rotation);
        Balancer balancer = balancers.apply(settings);
        // the request's soft preferences reorder each part, never across them: a route without real headroom is
        // passed over while others have it, whatever the sort, but still serves as a last resort
        List<Candidate> ordered = new ArrayList<>(applySoftPreferences(order(balancer, healthy, ctx, placements),
                facts.prefs()));
        ordered.addAll(applySoftPreferences(order(balancer, lowHeadroom, ctx, placements), facts.prefs()));
        List<Candidate> offered = withoutFallbacks(ordered, facts.prefs(), rejected);
        // a route cut as a fallback is healthy: the next request's plan may offer it at once
        long othersBackIn = offered.size() < ordered.size() ? 0 : minCooldown;
        return new RoutePlan.Ready(List.copyOf(offered), cursor, rejected, othersBackIn);
    }

    private static List<Candidate> order(Balancer balancer, List<Candidate> cs, Balancer.BalanceContext ctx,
                                         Map<String, String> placements) {
        if (placements != null && balancer instanceof AutoBalancer auto) {
            List<AutoBalancer.Placed> placed = auto.place(cs, ctx);
            placed.forEach(p -> placements.put(p.candidate().route().id(),
                    p.placement().name().toLowerCase(Locale.ROOT)));
            return placed.stream().map(AutoBalancer.Placed::candidate).toList();
        }
        return balancer.order(cs, ctx);
    }

    /** 503 naming why each capable route cannot take the request now, with {@code retry}'s advice. */
    private static ApiError noHealthy(String alias, List<Route> capable, List<RoutePlan.Rejection> rejected,
                                      RetryAdvice retry) {
        Set<String> ids = capable.stream().map(Route::id).collect(Collectors.toSet());
        String why = rejected.stream().filter(x -> ids.contains(x.routeId()))
                .map(x -> x.routeId() + ": " + x.reason()).collect(Collectors.joining("; "));
        return ApiError.noHealthyProvider(alias, why, retry);
    }

    /** Why the route's standing excludes it (failing verification, operator not in good standing), or null. */
    public static String standing(RouteSnapshot s) {
        if (failingVerification(s)) {
            return "failing verification";
        }
        if (suspended(s)) {
            return "operator not in good standing";
        }
        return null;
    }

    /** The route's verification failed: the operator's verdict while one is set, else the prober's last. */
    public static boolean failingVerification(RouteSnapshot s) {
        return verification(s).map(v -> v.trim().toLowerCase(Locale.ROOT).startsWith("fail")).orElse(false);
    }

    /** The verification in effect: the operator's verdict while one is set, else the prober's last (or none). */
    public static java.util.Optional<String> verification(RouteSnapshot s) {
        java.util.Optional<String> operator = operatorVerification(s);
        return operator.isPresent() ? operator : s.blob(VERIFICATION);
    }

    /** The operator's verdict, when one is set (not cleared: {@link RouteFlags#NO_VERDICT}). */
    public static java.util.Optional<String> operatorVerification(RouteSnapshot s) {
        return s.blob(OPERATOR_VERIFICATION).filter(v -> !v.equals(RouteFlags.NO_VERDICT));
    }

    /** An operator set the route's standing to anything but {@value #GOOD_STANDING} (the router excludes it). */
    public static boolean suspended(RouteSnapshot s) {
        return s.blob(STANDING).map(v -> !v.trim().equalsIgnoreCase(GOOD_STANDING)).orElse(false);
    }

    /** Why a member is left out when the request allows no fallbacks and its {@code order} does not name it. */
    static final String NOT_ORDERED = "not in provider.order (provider.allow_fallbacks is false)";
    /** Why a ranked candidate after the first is left out when the request allows no fallbacks and has no order. */
    static final String A_FALLBACK = "a fallback (provider.allow_fallbacks is false: the first choice alone serves)";

    /**
     * Strict preferences ({@code only}, {@code ignore}, {@code max_price}, and {@code order} when
     * {@code allow_fallbacks} is false: as on OpenRouter, the providers it names and no other); returns a block or
     * null.
     */
    static RoutePlan.Blocked applyPreferences(List<Route> members, ProviderPrefs prefs, String alias,
                                              List<RoutePlan.Rejection> rejected) {
        Set<String> slugs = members.stream().map(r -> r.provider().toLowerCase(Locale.ROOT))
                .collect(Collectors.toCollection(LinkedHashSet::new));
        for (String s : prefs.only()) {
            if (!slugs.contains(s)) {
                ApiError e = ApiError.invalidRequest("provider_not_in_group",
                        "Provider '" + s + "' in provider.only is not a member of '" + alias + "' (members: "
                                + String.join(", ", slugs) + ").", "provider.only");
                return new RoutePlan.Blocked(e, "provider_not_in_group", rejected);
            }
        }
        int kept = 0;
        for (Route r : members) {
            String slug = r.provider().toLowerCase(Locale.ROOT);
            if (!prefs.only().isEmpty() && !prefs.only().contains(slug)) {
                rejected.add(new RoutePlan.Rejection(r.id(), "not in provider.only"));
            } else if (prefs.ignore().contains(slug)) {
                rejected.add(new RoutePlan.Rejection(r.id(), "in provider.ignore"));
            } else if (orderedOnly(prefs) && !prefs.order().contains(slug)) {
                rejected.add(new RoutePlan.Rejection(r.id(), NOT_ORDERED));
            } else if (prefs.maxPromptPrice() != null && r.price().promptPerMtok() > prefs.maxPromptPrice()
                    || prefs.maxCompletionPrice() != null && r.price().completionPerMtok() > prefs.maxCompletionPrice()) {
                rejected.add(new RoutePlan.Rejection(r.id(), "above provider.max_price"));
            } else {
                kept++;
            }
        }
        if (kept == 0) {
            String why = orderedOnly(prefs) ? " (with provider.allow_fallbacks false, only the providers "
                    + "provider.order names may serve: " + String.join(", ", prefs.order()) + "; members: "
                    + String.join(", ", slugs) + ")" : "";
            ApiError e = ApiError.invalidRequest("provider_excluded_all",
                    "The provider preferences exclude every member of '" + alias + "'" + why + ".", "provider");
            return new RoutePlan.Blocked(e, "provider_excluded_all", rejected);
        }
        return null;
    }

    /** The request allows no fallbacks and names an order: only the providers the order names may serve it. */
    private static boolean orderedOnly(ProviderPrefs prefs) {
        return !prefs.allowFallbacks() && !prefs.order().isEmpty();
    }

    /**
     * {@code allow_fallbacks: false} without an {@code order}: the first choice alone (with an order, the strict
     * filter already kept only the providers it names). The rest are recorded as left out, for explain.
     */
    private static List<Candidate> withoutFallbacks(List<Candidate> ordered, ProviderPrefs prefs,
                                                    List<RoutePlan.Rejection> rejected) {
        if (prefs.allowFallbacks() || !prefs.order().isEmpty() || ordered.size() <= 1) {
            return ordered;
        }
        ordered.subList(1, ordered.size()).forEach(c -> rejected.add(new RoutePlan.Rejection(c.route().id(),
                A_FALLBACK)));
        return List.of(ordered.get(0));
    }

    /** What the route lacks to serve this request (empty = capable). */
    static List<String> lacks(Route r, RequestFacts f) {
        return Shortfall.of(r, f).stream().map(Shortfall.Lack::describe).toList();
    }

    /**
     * Soft preferences: {@code sort} then {@code order}; never excludes (with {@code allow_fallbacks: false} the
     * strict filter, {@link #applyPreferences}, already left out every provider the order does not name).
     */
    private List<Candidate> applySoftPreferences(List<Candidate> ordered, ProviderPrefs prefs) {
        List<Candidate> out = new ArrayList<>(ordered);
        if (prefs.sort() != null) {
            Comparator<Candidate> cmp = switch (prefs.sort()) {
                case LATENCY -> Comparator.comparingDouble(c -> c.estimate().meanMs());
                case THROUGHPUT -> Comparator.comparingDouble(c -> -models.decodeSpeed(c.state()));
                case PRICE -> Comparator.comparingDouble(c -> c.route().price().promptPerMtok()
                        + c.route().price().completionPerMtok());
            };
            out.sort(cmp);
        }
        if (!prefs.order().isEmpty()) {
            out.sort(Comparator.comparingInt(c -> {
                int i = prefs.order().indexOf(c.route().provider().toLowerCase(Locale.ROOT));
                return i < 0 ? Integer.MAX_VALUE : i;
            }));
        }
        return out;
    }
}
