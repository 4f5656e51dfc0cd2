package dev.hedgerow.catalog;

import dev.hedgerow.catalog.GroupSettings.Balancer;
import dev.hedgerow.catalog.GroupSettings.Breaker;
import dev.hedgerow.catalog.GroupSettings.DistanceMetric;
import dev.hedgerow.catalog.GroupSettings.LatencyStrategy;
import dev.hedgerow.catalog.GroupSettings.Retry;
import dev.hedgerow.catalog.GroupSettings.Slo;
import dev.hedgerow.catalog.GroupSettings.Timeouts;
import dev.hedgerow.catalog.GroupSettings.TokensCountStrategy;
import dev.hedgerow.catalog.YamlTree.MapNode;
import dev.hedgerow.catalog.YamlTree.Node;

import java.io.IOException;
import java.io.InputStream;
import java.net.URI;
import java.net.URISyntaxException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Set;
import java.util.function.BiPredicate;
import java.util.function.Function;
import java.util.regex.Pattern;

/**
 * Loads and validates {@code hedgerow.yaml} (DESIGN.md "Configuration") into {@link Org} records.
 *
 * <p>String values may reference the environment as {@code ${NAME}} or {@code ${NAME:-default}}; an unset
 * variable without a default is an error at the value's path. Client, admin and capacity keys are hashed to
 * SHA-256 hex as they are read: the plain secrets never reach the returned objects. Validation collects every
 * problem, each with its path ({@code orgs[0].routes[2].provider: unknown provider "fw"}), and throws one
 * {@link CatalogException} listing them all; unknown keys are errors at every level, so a typo cannot pass as a
 * silently ignored setting.
 *
 * <p>Thread-safe: a loader holds only its environment lookup; each load works on its own state.
 */
public final class CatalogLoader {
    /** The classpath resource of the bundled demo configuration, whose providers are simulators. */
    public static final String DEMO_RESOURCE = "hedgerow-demo.yaml";
    /** The environment variable naming the configuration file. */
    public static final String CONFIG_ENV = "HEDGEROW_CONFIG";
    public static final int DEFAULT_WEIGHT = 100;
    public static final int DEFAULT_PRIORITY = 1;
    /** 128 Ki tokens: the window of the open-weight models Hedgerow is mostly put in front of (Kimi K2, Qwen3). */
    public static final int DEFAULT_CONTEXT_WINDOW = 131_072;
    /**
     * Capabilities a route may declare, each also in a {@code :stream} or {@code :nonstream} form. {@code reasoning}
     * filters nothing: it says the model thinks before it answers (perhaps without streaming its reasoning), so its
     * silence before the first token is waited for as thinking.
     */
    public static final Set<String> CAPABILITIES = Set.of("tools", "json_mode", "images", "reasoning", "reasoning_off",
            "prefill");
    /** Upper bound on attempts and resumes: more only turns an outage into a retry storm. */
    static final int MAX_TRIES = 10;

    private static final Set<String> TOP_FIELDS = Set.of("revision", "orgs");
    private static final Set<String> ORG_FIELDS =
            Set.of("id", "keys", "admin_keys", "providers", "routes", "groups", "routing", "hedge_budget");
    private static final Set<String> KEY_FIELDS = Set.of("name", "key");
    private static final Set<String> PROVIDER_FIELDS =
            Set.of("id", "base_url", "api_key", "dialect", "metrics_url", "capacity_key");
    private static final Set<String> ROUTE_FIELDS = Set.of("id", "alias", "provider", "model", "weight", "priority",
            "context_window", "capabilities", "parameters", "price", "description", "tags", "embeddings");
    private static final Set<String> PRICE_FIELDS = Set.of("prompt_per_mtok", "completion_per_mtok");
    private static final Set<String> GROUP_FIELDS = Set.of("strategy", "algorithm", "resume_mid_stream", "hedging",
            "head_hold",
            "breaker", "retries", "max_attempts", "max_resumes", "failover_criteria", "max_retry_after_wait",
            "connect_timeout", "read_timeout", "write_timeout", "first_token_floor", "first_token_ceiling",
            "stall_floor", "request_timeout", "hash_on_header", "latency_strategy", "tokens_count_strategy",
            "usage_window",
            "embeddings_route", "distance_metric", "threshold", "slow_bar", "slo", "balancer", "judge");
    /**
     * Kong's {@code config.balancer} keys with no flat form on a group: a Kong config ported flat put them there and
     * was told "unknown field; did you mean "slo"?".
     */
    private static final Map<String, String> GROUP_PLACED = Map.of(
            "max_fails", "\"breaker\" (or Kong's \"balancer\")",
            "fail_timeout", "\"breaker\" (or Kong's \"balancer\")",
            "slots", "Kong's \"balancer\"");
    /** A group's {@code judge}: Kong's AI LLM as Judge settings, for {@code tokens_count_strategy: llm_accuracy}. */
    private static final Set<String> JUDGE_FIELDS = Set.of("route", "prompt", "sampling_rate", "message_countback",
            "ignore_system_prompts", "ignore_assistant_prompts", "ignore_tool_prompts", "max_tokens", "timeout");
    /** The most messages a judge is shown: beyond this a countback is a mistake (a prompt the judge cannot read). */
    static final int MAX_MESSAGE_COUNTBACK = 1000;
    /** The most tokens a judge may answer with: a score is a few tokens; more only buys the judge room to talk. */
    static final int MAX_JUDGE_TOKENS = 4096;
    /**
     * The longest {@code usage_window}: the state store keeps usage in one-minute buckets and a snapshot sums a
     * window's buckets in one Redis script, so a window of a month read 43,200 of them per route and blocked the Redis
     * every org shares for a second per snapshot, an admin key of any org enough to set it (found by review6).
     */
    static final Duration MAX_USAGE_WINDOW = Duration.ofHours(1);
    private static final Set<String> BREAKER_FIELDS = Set.of("max_fails", "fail_timeout");
    /**
     * Kong AI Gateway's {@code config.balancer}, accepted nested under a group's {@code balancer} as Kong writes
     * it: each is the same setting as its flat key on the group ({@code max_fails} and {@code fail_timeout}: as
     * its {@code breaker}'s), except {@code slots}, Kong's hash-ring size, which Hedgerow's rendezvous hashing has
     * no use for and only range-checks.
     */
    private static final Set<String> KONG_BALANCER_FIELDS = Set.of("algorithm", "retries", "failover_criteria",
            "connect_timeout", "read_timeout", "write_timeout", "hash_on_header", "latency_strategy",
            "tokens_count_strategy", "max_fails", "fail_timeout", "slots");
    /** Kong's hash-ring sizes (its {@code slots} bounds). */
    private static final int MIN_SLOTS = 10;
    private static final int MAX_SLOTS = 65_536;
    private static final Set<String> SLO_FIELDS =
            Set.of("decode_tokens_per_second", "first_token", "standard_prompt_max_tokens");
    private static final Set<String> ROUTING_FIELDS = Set.of("alias_header", "path_alias", "aliases");
    private static final Set<String> HEDGE_BUDGET_FIELDS = Set.of("ratio", "min_per_window", "window");

    // Org and provider ids end up in Redis keys and hash tags: lowercase, no braces, colons or spaces.
    private static final Pattern SLUG = Pattern.compile("[a-z0-9][a-z0-9._-]{0,63}");
    // Aliases are what clients put in "model" (OpenRouter style "vendor/model:variant" included).
    private static final Pattern ALIAS = Pattern.compile("[A-Za-z0-9][A-Za-z0-9._:/@+-]{0,127}");
    /** The key the usage ledger shows for usage billed before it recorded keys (audit.LedgerLine.NO_KEY). */
    private static final String NO_KEY_NAME = "-";
    /** The key the usage ledger bills the gateway's own judge calls under (audit.LedgerLine.JUDGE). */
    private static final String JUDGE_KEY_NAME = "@judge";
    private static final Pattern ROUTE_ID = Pattern.compile("[A-Za-z0-9][A-Za-z0-9._:/@+-]{0,191}");
    /**
     * What an alias or route id may not hold though its characters pass: a {@code .} or {@code ..} path segment, an
     * empty one, a trailing {@code /}. Such a name sits in admin paths ({@code /admin/groups/{alias}}), where a
     * client or browser that writes its {@code /} as is would have the segments resolved away to another endpoint.
     */
    private static final Pattern BAD_SEGMENT = Pattern.compile("(^|/)\\.{1,2}(/|$)|//|/$");
    private static final String NAME_RULE = "letters, digits and . _ : / @ + -, starting with a letter or digit, "
            + "no . or .. or empty segment between slashes, no trailing /";
    private static final Pattern PARAMETER = Pattern.compile("[a-z][a-z0-9_]{0,63}");
    /** A file revision: digits only, at most 18 (any such number ≥ 1 fits a long). */
    private static final Pattern REVISION = Pattern.compile("[0-9]{1,18}");
    private static final Pattern HEADER_TOKEN = Pattern.compile("[!#$%&'*+.^_`|~0-9A-Za-z-]{1,128}");

    /** An alias (or a routing rule's other name for one): {@link #ALIAS}, without a {@link #BAD_SEGMENT}. */
    static boolean validAlias(String name) {
        return ALIAS.matcher(name).matches() && !BAD_SEGMENT.matcher(name).find();
    }

    /** What is said of an alias {@link #validAlias} refuses. */
    public static String invalidAlias(String name) {
        return "invalid alias \"" + name + "\": " + NAME_RULE + ", at most 128";
    }

    /** A route id: {@link #ROUTE_ID}, without a {@link #BAD_SEGMENT}. */
    static boolean validRouteId(String id) {
        return ROUTE_ID.matcher(id).matches() && !BAD_SEGMENT.matcher(id).find();
    }

    private final Function<String, String> env;

    /** A loader reading {@code ${...}} references from the process environment. */
    public CatalogLoader() {
        this(System::getenv);
    }

    /** @param env looks up a variable; returns null when it is unset */
    public CatalogLoader(Function<String, String> env) {
        this.env = env;
    }

    /** The path of an alias's group inside an org, as errors name it: {@code groups.kimi3}, {@code groups["a b"]}. */
    public static String groupPath(String alias) {
        return YamlTree.key("groups", alias);
    }

    /** Loads the file named by {@code HEDGEROW_CONFIG}, or the bundled demo configuration when it is unset. */
    public LoadedCatalog loadConfigured() {
        String path = env.apply(CONFIG_ENV);
        return path == null || path.isBlank() ? loadResource(DEMO_RESOURCE) : load(Path.of(path));
    }

    public LoadedCatalog load(Path file) {
        String text;
        try {
            text = Files.readString(file, StandardCharsets.UTF_8);
        } catch (IOException e) {
            throw new CatalogException(List.of(new CatalogError("", "cannot read " + file + ": " + e)));
        }
        return parse(text);
    }

    /** Loads a configuration from the classpath (e.g. {@link #DEMO_RESOURCE}). */
    public LoadedCatalog loadResource(String name) {
        try (InputStream in = CatalogLoader.class.getClassLoader().getResourceAsStream(name)) {
            if (in == null) {
                throw new CatalogException(List.of(new CatalogError("", "no classpath resource " + name)));
            }
            return parse(new String(in.readAllBytes(), StandardCharsets.UTF_8));
        } catch (IOException e) {
            throw new CatalogException(List.of(new CatalogError("", "cannot read resource " + name + ": " + e)));
        }
    }

    /**
     * Parses and validates a configuration text.
     *
     * @throws CatalogException listing every problem found
     */
    public LoadedCatalog parse(String yamlText) {
        List<CatalogError> errors = new ArrayList<>();
        Node root = YamlTree.parse(yamlText, env, errors);
        List<Org> orgs = new ArrayList<>();
        long revision = LoadedCatalog.NO_REVISION;
        if (root == null) {
            if (errors.isEmpty()) {
                errors.add(new CatalogError("", "empty configuration: expected a mapping with \"orgs\""));
            }
        } else if (!(root instanceof MapNode)) {
            errors.add(new CatalogError("", "the document must be a mapping with \"orgs\"", root.line()));
        } else {
            ConfigMap top = ConfigMap.of(root, "", errors, TOP_FIELDS);
            revision = readRevision(top);
            new Reader(errors, ProviderUrls.metadataAllowed(env)).readOrgs(top, orgs);
        }
        if (!errors.isEmpty()) {
            List<CatalogError> sorted = new ArrayList<>(errors);
            // document order; errors with no line (whole-document ones) last
            sorted.sort(Comparator.comparingInt(e -> e.line() == 0 ? Integer.MAX_VALUE : e.line()));
            throw new CatalogException(sorted);
        }
        return new LoadedCatalog(orgs, sourceHash(yamlText), revision);
    }

    /** The file's {@code revision}: a whole number ≥ 1 (an environment reference included), or none. */
    private static long readRevision(ConfigMap top) {
        if (top == null || !top.has("revision")) {
            return LoadedCatalog.NO_REVISION;
        }
        String s = top.string("revision");
        if (s != null && REVISION.matcher(s).matches() && Long.parseLong(s) >= 1) {
            return Long.parseLong(s);
        }
        Node n = top.node("revision");
        // a list, a mapping or an unresolvable ${...} has its error already
        if (s != null || n instanceof YamlTree.Scalar sc && sc.kind() != YamlTree.Scalar.Kind.INVALID) {
            top.error("revision", "must be a whole number from 1 up, raised with every change of the file (got "
                    + (s == null ? "an empty value" : "\"" + s + "\"") + ")");
        }
        return LoadedCatalog.NO_REVISION;
    }

    /**
     * The text with every resolvable {@code ${...}} reference substituted (unresolvable ones are left as written),
     * comments included. Used for the source hash, never for parsing.
     */
    public String substitute(String yamlText) {
        return EnvSubstitution.apply(yamlText, env).text();
    }

    /** SHA-256 hex of the substituted text: changes when the file or a variable it references changes. */
    public String sourceHash(String yamlText) {
        return CatalogCodec.sourceHash(substitute(yamlText));
    }

    /** One load's walk over the tree; holds the error list and cross-org indexes. */
    private static final class Reader {
        private final List<CatalogError> errors;
        private final Map<String, String> orgIdPaths = new HashMap<>();
        // secret hash -> path of the first key with it; client and admin keys share one namespace
        private final Map<String, String> secretPaths = new HashMap<>();
        private final List<String[]> capacityKeys = new ArrayList<>(); // {hash, path}

        private final boolean allowMetadataUrls;

        Reader(List<CatalogError> errors, boolean allowMetadataUrls) {
            this.allowMetadataUrls = allowMetadataUrls;
            this.errors = errors;
        }

        void readOrgs(ConfigMap top, List<Org> out) {
            if (top == null) {
                return;
            }
            if (!top.has("orgs")) {
                top.error("orgs", "required: at least one org");
                return;
            }
            List<Node> items = top.list("orgs");
            if (items.isEmpty() && top.node("orgs") instanceof YamlTree.ListNode) {
                top.error("orgs", "at least one org is required");
            }
            for (int i = 0; i < items.size(); i++) {
                Org org = readOrg(items.get(i), YamlTree.index("orgs", i));
                if (org != null) {
                    out.add(org);
                }
            }
            for (String[] ck : capacityKeys) {
                String other = secretPaths.get(ck[0]);
                if (other != null) {
                    errors.add(new CatalogError(ck[1], "this secret is also the key at " + other
                            + "; a capacity key must differ from client and admin keys", 0));
                }
            }
        }

        private Org readOrg(Node node, String path) {
            ConfigMap o = ConfigMap.of(node, path, errors, ORG_FIELDS);
            if (o == null) {
                return null;
            }
            String id = o.requiredString("id");
            if (id != null) {
                if (!SLUG.matcher(id).matches()) {
                    o.error("id", "invalid org id \"" + id + "\": " + slugRule());
                }
                String first = orgIdPaths.putIfAbsent(id, o.path("id"));
                if (first != null) {
                    o.error("id", "duplicate org id \"" + id + "\" (also " + first + ")");
                }
            }
            List<ApiKey> keys = readKeys(o, "keys", "key", true, true);
            List<ApiKey> adminKeys = readKeys(o, "admin_keys", "admin", false, false);

            Map<String, Provider> providers = new LinkedHashMap<>();
            // ids and aliases written in the file, valid or not: a route naming a provider that is declared but
            // broken gets no second error, nor does a group whose routes are all broken
            Set<String> declaredProviders = new LinkedHashSet<>();
            Set<String> declaredAliases = new LinkedHashSet<>();
            requireNonEmptyList(o, "providers");
            List<Node> providerNodes = o.list("providers");
            for (int i = 0; i < providerNodes.size(); i++) {
                String pPath = YamlTree.index(o.path("providers"), i);
                ConfigMap pm = ConfigMap.of(providerNodes.get(i), pPath, errors, PROVIDER_FIELDS);
                if (pm != null && pm.string("id") != null) {
                    declaredProviders.add(pm.string("id"));
                }
                Provider p = pm == null ? null : readProvider(pm);
                if (p != null && providers.putIfAbsent(p.id(), p) != null) {
                    pm.error("id", "duplicate provider id \"" + p.id() + "\"");
                }
            }

            requireNonEmptyList(o, "routes");
            List<Node> routeNodes = o.list("routes");
            List<Route> routes = new ArrayList<>();
            Map<Route, ConfigMap> routeMaps = new HashMap<>();
            Map<String, String> routeIdPaths = new HashMap<>();
            for (int i = 0; i < routeNodes.size(); i++) {
                String rPath = YamlTree.index(o.path("routes"), i);
                ConfigMap rm = ConfigMap.of(routeNodes.get(i), rPath, errors, ROUTE_FIELDS);
                if (rm != null && rm.string("alias") != null) {
                    declaredAliases.add(rm.string("alias"));
                }
                Route r = rm == null ? null : readRoute(rm, providers, declaredProviders);
                if (r == null) {
                    continue;
                }
                String first = routeIdPaths.putIfAbsent(r.id(), rPath);
                if (first != null) {
                    rm.error(rm.has("id") ? "id" : "alias", "duplicate route id \"" + r.id() + "\" (also " + first
                            + ")" + (rm.has("id") ? "" : "; give one of them an explicit id"));
                    continue;
                }
                routes.add(r);
                routeMaps.put(r, rm);
            }
            checkAliases(routes, routeMaps);

            Map<String, GroupSettings> groups = new LinkedHashMap<>();
            ConfigMap gm = o.has("groups") ? ConfigMap.of(o.node("groups"), o.path("groups"), errors,
                    groupKeys(o.node("groups"))) : null;
            if (gm != null) {
                for (String alias : ((MapNode) o.node("groups")).entries().keySet()) {
                    GroupSettings g = readGroup(gm, alias, routes, routeMaps);
                    if (!declaredAliases.contains(alias)) {
                        gm.error(alias, "no route has alias \"" + alias + "\"");
                    } else if (g != null) {
                        groups.put(alias, g);
                    }
                }
            }

            RoutingRules routing = readRouting(o, declaredAliases);
            HedgeBudget hedgeBudget = readHedgeBudget(o);
            if (id == null) {
                return null;
            }
            return new Org(id, keys, adminKeys, List.copyOf(providers.values()), routes, groups, routing,
                    hedgeBudget);
        }

        /** A mapping's own keys are all allowed (group names are aliases, checked against routes instead). */
        private static Set<String> groupKeys(Node node) {
            return node instanceof MapNode m ? m.entries().keySet() : Set.of();
        }

        private void requireNonEmptyList(ConfigMap o, String key) {
            if (!o.has(key)) {
                o.error(key, "required: at least one entry");
            } else if (o.node(key) instanceof YamlTree.ListNode l && l.items().isEmpty()) {
                o.error(key, "at least one entry is required");
            }
        }

        /** @param billed client keys, whose names the usage ledger records: any name but {@link #NO_KEY_NAME} */
        private List<ApiKey> readKeys(ConfigMap o, String field, String defaultNamePrefix, boolean required,
                                      boolean billed) {
            if (required) {
                requireNonEmptyList(o, field);
            }
            List<ApiKey> out = new ArrayList<>();
            Set<String> names = new LinkedHashSet<>();
            List<Node> items = o.list(field);
            for (int i = 0; i < items.size(); i++) {
                ConfigMap k = ConfigMap.of(items.get(i), YamlTree.index(o.path(field), i), errors, KEY_FIELDS);
                if (k == null) {
                    continue;
                }
                String name = k.string("name");
                if (name == null) {
                    name = defaultNamePrefix + "-" + (i + 1);
                }
                if (billed && NO_KEY_NAME.equals(name)) {
                    k.error("name", "the key name \"-\" is reserved: usage billed before keys were recorded shows "
                            + "under it");
                } else if (billed && JUDGE_KEY_NAME.equals(name)) {
                    k.error("name", "the key name \"" + JUDGE_KEY_NAME + "\" is reserved: the gateway's own judge calls "
                            + "(tokens_count_strategy llm_accuracy) are billed under it");
                } else if (!names.add(name)) {
                    k.error("name", "duplicate key name \"" + name + "\"");
                }
                String hash = secretHash(k, "key", true);
                if (hash == null) {
                    continue;
                }
                String first = secretPaths.putIfAbsent(hash, k.path("key"));
                if (first != null) {
                    k.error("key", "this secret is already used at " + first
                            + "; a key must belong to exactly one org and one role");
                }
                out.add(new ApiKey(name, hash));
            }
            return out;
        }

        /** Hashes the secret at once; the plain text is dropped with the YAML tree. */
        private String secretHash(ConfigMap m, String key, boolean required) {
            String secret = required ? m.requiredString(key) : m.string(key);
            return secret == null ? null : Keys.sha256Hex(secret);
        }

        private Provider readProvider(ConfigMap p) {
            String id = p.requiredString("id");
            if (id != null && !SLUG.matcher(id).matches()) {
                p.error("id", "invalid provider id \"" + id + "\": " + slugRule());
            }
            String baseUrl = url(p, "base_url", true);
            String apiKey = p.string("api_key");
            Dialect dialect = enumValue(p, "dialect", "dialect", Dialect.class, Dialect.OPENAI);
            String metricsUrl = url(p, "metrics_url", false);
            String capacityKeyHash = secretHash(p, "capacity_key", false);
            if (capacityKeyHash != null) {
                capacityKeys.add(new String[] {capacityKeyHash, p.path("capacity_key")});
            }
            if (id == null || baseUrl == null) {
                return null;
            }
            return new Provider(id, baseUrl, apiKey, dialect, metricsUrl, capacityKeyHash);
        }

        /** An absolute http(s) URL with a host and no credentials, query or fragment; trailing '/' removed. */
        private String url(ConfigMap m, String key, boolean required) {
            String s = required ? m.requiredString(key) : m.string(key);
            if (s == null) {
                return null;
            }
            URI u;
            try {
                u = new URI(s);
            } catch (URISyntaxException e) {
                m.error(key, "not a valid URL: " + e.getReason());
                return null;
            }
            String scheme = u.getScheme() == null ? "" : u.getScheme().toLowerCase(Locale.ROOT);
            if (!scheme.equals("http") && !scheme.equals("https")) {
                m.error(key, "must be an absolute http:// or https:// URL");
                return null;
            }
            if (u.getRawUserInfo() != null) {
                // never print the URL: its user-info is a credential
                m.error(key, "must not contain credentials (user:password@); put the key in api_key");
                return null;
            }
            if (u.getHost() == null || u.getHost().isEmpty()) {
                m.error(key, "has no host");
                return null;
            }
            if (u.getRawQuery() != null || u.getRawFragment() != null) {
                m.error(key, "must not have a query or fragment");
                return null;
            }
            String metadata = ProviderUrls.metadataReason(u.getHost());
            if (metadata != null && !allowMetadataUrls) {
                m.error(key, "points at " + metadata + "; refused so that a catalog cannot reach the machine's cloud "
                        + "credentials (set " + ProviderUrls.ALLOW_ENV + "=true if you really mean it)");
                return null;
            }
            return s.replaceAll("/+$", "");
        }

        private Route readRoute(ConfigMap r, Map<String, Provider> providers, Set<String> declaredProviders) {
            String alias = r.requiredString("alias");
            if (alias != null && !validAlias(alias)) {
                r.error("alias", invalidAlias(alias));
                alias = null;
            }
            String provider = r.requiredString("provider");
            if (provider != null && !providers.containsKey(provider)) {
                if (!declaredProviders.contains(provider)) {
                    r.error("provider", "unknown provider \"" + provider + "\"" + (declaredProviders.isEmpty() ? ""
                            : " (declared: " + String.join(", ", declaredProviders) + ")"));
                }
                provider = null;
            }
            String model = r.requiredString("model");
            String id = r.string("id");
            if (id != null && !validRouteId(id)) {
                r.error("id", "invalid route id \"" + id + "\": " + NAME_RULE + ", at most 192");
            }
            int weight = r.integer("weight", DEFAULT_WEIGHT, 0);
            int priority = r.integer("priority", DEFAULT_PRIORITY, 0);
            int contextWindow = r.integer("context_window", DEFAULT_CONTEXT_WINDOW, 1);
            Set<String> capabilities = new LinkedHashSet<>();
            List<String> caps = r.strings("capabilities");
            for (int i = 0; i < caps.size(); i++) {
                String c = caps.get(i);
                String base = c.endsWith(":stream") ? c.substring(0, c.length() - 7)
                        : c.endsWith(":nonstream") ? c.substring(0, c.length() - 10) : c;
                if (!CAPABILITIES.contains(base)) {
                    errors.add(new CatalogError(YamlTree.index(r.path("capabilities"), i), "unknown capability \""
                            + c + "\" (allowed: " + String.join(", ", sorted(CAPABILITIES))
                            + ", each optionally with :stream or :nonstream)", r.line("capabilities")));
                } else {
                    capabilities.add(c);
                }
            }
            Set<String> parameters = new LinkedHashSet<>();
            List<String> params = r.strings("parameters");
            for (int i = 0; i < params.size(); i++) {
                if (PARAMETER.matcher(params.get(i)).matches()) {
                    parameters.add(params.get(i));
                } else {
                    errors.add(new CatalogError(YamlTree.index(r.path("parameters"), i), "invalid parameter name \""
                            + params.get(i) + "\" (lowercase letters, digits and _)", r.line("parameters")));
                }
            }
            Route.Price price = Route.Price.FREE;
            ConfigMap pm = r.map("price", PRICE_FIELDS);
            if (pm != null) {
                price = new Route.Price(price(pm, "prompt_per_mtok"), price(pm, "completion_per_mtok"));
            }
            String description = r.string("description");
            List<String> tags = r.strings("tags");
            boolean embeddings = r.bool("embeddings", false);
            if (alias == null || provider == null || model == null || (id != null && !validRouteId(id))) {
                return null;
            }
            return new Route(id != null ? id : alias + "-" + provider, alias, provider, model, weight, priority,
                    contextWindow, capabilities, parameters, price, description, tags, embeddings);
        }

        /**
         * A price per million tokens: from 0 to {@value Route.Price#MAX_PER_MTOK}, in any unit. A price of 1e308 was
         * taken, and the cost of four requests overflowed to Infinity, which the usage API answered with a 500 for as
         * long as the ledger kept that day (found by hunt19).
         */
        private double price(ConfigMap m, String key) {
            double v = nonNegative(m, key);
            if (v > Route.Price.MAX_PER_MTOK) {
                m.error(key, "must be at most " + (long) Route.Price.MAX_PER_MTOK + " per million tokens (got "
                        + m.string(key) + ")");
                return 0;
            }
            return v;
        }

        private double nonNegative(ConfigMap m, String key) {
            double v = m.number(key, 0);
            if (v < 0) {
                m.error(key, "must be ≥ 0");
                return 0;
            }
            return v;
        }

        /** Per alias: not every weight 0, and chat and embeddings routes not mixed. */
        private void checkAliases(List<Route> routes, Map<Route, ConfigMap> maps) {
            Map<String, List<Route>> byAlias = new LinkedHashMap<>();
            routes.forEach(r -> byAlias.computeIfAbsent(r.alias(), a -> new ArrayList<>()).add(r));
            byAlias.forEach((alias, rs) -> {
                if (rs.stream().allMatch(r -> r.weight() == 0)) {
                    maps.get(rs.get(0)).error("weight", "every route of alias \"" + alias
                            + "\" has weight 0; at least one must be > 0");
                }
                boolean embeddings = rs.get(0).embeddings();
                rs.stream().filter(r -> r.embeddings() != embeddings).findFirst().ifPresent(r ->
                        maps.get(r).error("embeddings", "alias \"" + alias
                                + "\" mixes embeddings and chat routes; give the embeddings model its own alias"));
                pinsAndDrains(alias, rs, maps);
            });
        }

        /**
         * The rules of the tags pin and drain set ({@link Route#PINNED}, {@link Route#DRAINED}), whether the admin API
         * set them or the file wrote them: at most one pinned member, not drained, and at least one member not
         * drained. A file breaking them left its alias refusing every request, and every admin edit of the org refused
         * for the file's problems, the undrain that would mend it included.
         */
        private void pinsAndDrains(String alias, List<Route> rs, Map<Route, ConfigMap> maps) {
            List<Route> pinned = rs.stream().filter(Route::pinned).toList();
            if (pinned.size() > 1) {
                maps.get(pinned.get(1)).error("tags", "alias \"" + alias
                        + "\" has more than one pinned member; pin exactly one");
            }
            pinned.stream().filter(Route::drained).forEach(r ->
                    maps.get(r).error("tags", "a pinned member cannot be drained"));
            if (rs.stream().allMatch(Route::drained)) {
                maps.get(rs.get(0)).error("tags", "every member of alias \"" + alias
                        + "\" is drained; at least one must take traffic");
            }
        }

        private GroupSettings readGroup(ConfigMap groups, String alias, List<Route> routes,
                                        Map<Route, ConfigMap> routeMaps) {
            Node node = groups.node(alias);
            if (node instanceof YamlTree.Scalar s && s.isNull()) {
                return GroupSettings.defaults();
            }
            ConfigMap g = ConfigMap.of(node, groups.path(alias), errors, GROUP_FIELDS, GROUP_PLACED);
            if (g == null) {
                return null;
            }
            GroupSettings d = GroupSettings.defaults();
            // Kong's config.balancer as Kong writes it; every setting in it is also a flat key (or breaker's)
            ConfigMap kb = g.map("balancer", KONG_BALANCER_FIELDS);
            Strategy strategy = readStrategy(g, kb, d.strategy());
            boolean resume = g.bool("resume_mid_stream", d.resumeMidStream());
            boolean hedging = g.bool("hedging", d.hedging());
            Duration headHold = g.durationOrOff("head_hold", d.headHold());

            Breaker defaultBreaker = d.breaker();
            ConfigMap bm = g.map("breaker", BREAKER_FIELDS);
            Integer maxFails = kong(g, bm, kb, "max_fails", m -> m.integer("max_fails", 1, 0));
            Duration failTimeout = kongTimeout(g, bm, kb, "fail_timeout");
            Breaker breaker = new Breaker(maxFails != null ? maxFails : defaultBreaker.maxFails(),
                    failTimeout != null ? failTimeout : defaultBreaker.failTimeout());
            if (kb != null && kb.has("slots")) {
                int slots = kb.integer("slots", MIN_SLOTS, MIN_SLOTS);
                if (slots > MAX_SLOTS) {
                    kb.error("slots", "must be ≤ " + MAX_SLOTS + " (got " + slots + ")");
                }
            }

            Retry dr = d.retry();
            int maxAttempts = dr.maxAttempts();
            Integer retries = kong(g, g, kb, "retries", m -> m.integer("retries", 0, 0));
            ConfigMap retriesAt = kb != null && kb.has("retries") ? kb : g;
            if (retriesAt.has("retries") && g.has("max_attempts")) {
                g.error("max_attempts", "give retries or max_attempts, not both (retries = max_attempts - 1)");
            } else if (retries != null) {
                // retries + 1 without overflow: anything past the bound is refused below
                maxAttempts = Math.min(retries, MAX_TRIES) + 1;
            } else if (g.has("max_attempts")) {
                maxAttempts = g.integer("max_attempts", maxAttempts, 1);
            }
            if (maxAttempts > MAX_TRIES) {
                // the bound in the unit written: "at most 10 attempts" read as allowing the retries: 10 it refused
                // (found by hunt22)
                if (retries != null) {
                    retriesAt.error("retries", "must be ≤ " + (MAX_TRIES - 1) + " (at most " + MAX_TRIES
                            + " attempts), got " + retries);
                } else {
                    g.error("max_attempts", "must be ≤ " + MAX_TRIES + ", got " + maxAttempts);
                }
                maxAttempts = dr.maxAttempts();
            }
            int maxResumes = g.integer("max_resumes", dr.maxResumes(), 0);
            if (maxResumes > MAX_TRIES) {
                g.error("max_resumes", "must be ≤ " + MAX_TRIES);
                maxResumes = dr.maxResumes();
            }
            Set<FailoverCriterion> criteria = kong(g, g, kb, "failover_criteria", this::failoverCriteria);
            if (criteria == null) {
                criteria = dr.failoverCriteria();
            }
            Duration maxRetryAfterWait = g.duration("max_retry_after_wait", dr.maxRetryAfterWait(), true);
            Retry retry = new Retry(maxAttempts, maxResumes, criteria, maxRetryAfterWait);

            Timeouts dt = d.timeouts();
            Duration connect = kongTimeout(g, g, kb, "connect_timeout");
            Duration read = kongTimeout(g, g, kb, "read_timeout");
            Duration write = kongTimeout(g, g, kb, "write_timeout");
            Timeouts timeouts = new Timeouts(connect != null ? connect : dt.connect(),
                    read != null ? read : dt.read(), write != null ? write : dt.write(),
                    g.duration("first_token_floor", dt.firstTokenFloor(), false),
                    g.duration("first_token_ceiling", dt.firstTokenCeiling(), false),
                    g.duration("stall_floor", dt.stallFloor(), false),
                    g.durationWithUnitOrOff("request_timeout", dt.request()));
            if (timeouts.firstTokenFloor().compareTo(timeouts.firstTokenCeiling()) > 0) {
                g.error(g.has("first_token_floor") ? "first_token_floor" : "first_token_ceiling",
                        "first_token_floor must not exceed first_token_ceiling");
            }

            Balancer db = d.balancer();
            String hashOnHeader = kong(g, g, kb, "hash_on_header", m -> header(m, "hash_on_header"),
                    String::equalsIgnoreCase);
            LatencyStrategy latency = kong(g, g, kb, "latency_strategy", m -> enumValue(m, "latency_strategy",
                    "latency_strategy", LatencyStrategy.class, null));
            if (latency == null) {
                latency = db.latencyStrategy();
            }
            TokensCountStrategy tokens = kong(g, g, kb, "tokens_count_strategy", this::tokensCountStrategy);
            if (tokens == null) {
                tokens = db.tokensCountStrategy();
            }
            Duration usageWindow = g.duration("usage_window", db.usageWindow(), false);
            if (usageWindow.compareTo(MAX_USAGE_WINDOW) > 0) {
                g.error("usage_window", "at most 1h (usage is kept per minute, and every request's routing sums the "
                        + "window's minutes)");
                usageWindow = db.usageWindow();
            } else if (usageWindow.compareTo(Duration.ofMinutes(1)) < 0) {
                // it was taken, and summed a whole minute's usage (found by hunt9)
                g.error("usage_window", "at least 1m (usage is kept per minute)");
                usageWindow = db.usageWindow();
            }
            String embeddingsRoute = g.string("embeddings_route");
            if (embeddingsRoute != null) {
                Route er = routes.stream().filter(r -> r.id().equals(embeddingsRoute)).findFirst().orElse(null);
                if (er == null) {
                    g.error("embeddings_route", "unknown route \"" + embeddingsRoute + "\" (not a route of this org)");
                } else if (!er.embeddings()) {
                    g.error("embeddings_route", "route \"" + embeddingsRoute
                            + "\" is not an embeddings route (mark it embeddings: true)");
                }
            } else if (strategy == Strategy.SEMANTIC) {
                g.error("embeddings_route", "required by strategy semantic: the id of an embeddings route");
            }
            if (strategy == Strategy.SEMANTIC) {
                for (Route r : routes) {
                    if (r.alias().equals(alias) && !r.embeddings() && r.description() == null) {
                        routeMaps.get(r).error("description", "required: group \"" + alias
                                + "\" uses strategy semantic, which matches prompts against descriptions");
                    }
                }
            }
            DistanceMetric metric = enumValue(g, "distance_metric", "distance_metric", DistanceMetric.class,
                    db.distanceMetric());
            double threshold = g.number("threshold", metric.defaultThreshold());
            if (metric == DistanceMetric.COSINE && (threshold < 0 || threshold > 1)) {
                g.error("threshold", "must be between 0 and 1 (got " + threshold + "): a cosine similarity; with "
                        + "distance_metric: euclidean it is a distance ≥ 0");
                threshold = metric.defaultThreshold();
            } else if (metric == DistanceMetric.EUCLIDEAN && threshold < 0) {
                g.error("threshold", "must be ≥ 0 (got " + threshold + "): with distance_metric: euclidean it is "
                        + "the greatest distance of a match");
                threshold = metric.defaultThreshold();
            }
            double slowBar = g.number("slow_bar", db.slowBar());
            if (!(slowBar >= 1)) {
                // a bar under 1 was taken and read as 1: no route is slower than less than the fastest (hunt10)
                g.error("slow_bar", "must be ≥ 1, a multiple of the fastest route's predicted time (got " + slowBar
                        + ")");
                slowBar = db.slowBar();
            }
            if (tokens == TokensCountStrategy.LLM_ACCURACY
                    && routes.stream().anyMatch(r -> r.alias().equals(alias) && r.embeddings())) {
                // nothing would be judged: a judge scores chat answers (it loaded and never judged; found by hunt9)
                (kb != null && kb.has("tokens_count_strategy") ? kb : g).error("tokens_count_strategy",
                        "llm_accuracy scores chat answers, and alias " + alias + " serves embeddings");
            }
            GroupSettings.Judge judge = readJudge(g, kb, strategy, tokens, routes);
            Balancer balancer = new Balancer(hashOnHeader != null ? hashOnHeader : db.hashOnHeader(), latency,
                    tokens, usageWindow, embeddingsRoute, metric, threshold, slowBar, judge);

            Slo slo = d.slo();
            ConfigMap sm = g.map("slo", SLO_FIELDS);
            if (sm != null) {
                double tps = sm.number("decode_tokens_per_second", slo.decodeTokensPerSecond());
                if (tps <= 0) {
                    sm.error("decode_tokens_per_second", "must be > 0");
                    tps = slo.decodeTokensPerSecond();
                }
                slo = new Slo(tps, sm.duration("first_token", slo.firstToken(), false),
                        sm.integer("standard_prompt_max_tokens", slo.standardPromptMaxTokens(), 1));
            }
            return new GroupSettings(strategy, resume, hedging, breaker, retry, timeouts, balancer, slo, headHold);
        }

        /** @param aliases the aliases the org's routes declare (the only ones a name may stand for) */
        private RoutingRules readRouting(ConfigMap o, Set<String> aliases) {
            ConfigMap rm = o.map("routing", ROUTING_FIELDS);
            if (rm == null) {
                return RoutingRules.defaults();
            }
            String header = rm.string("alias_header");
            if (header != null && !HEADER_TOKEN.matcher(header).matches()) {
                rm.error("alias_header", "invalid header name \"" + header + "\"");
                header = null;
            }
            return new RoutingRules(header, rm.bool("path_alias", RoutingRules.defaults().pathAlias()),
                    aliasNames(rm, aliases));
        }

        /**
         * {@code routing.aliases}: per alias, more names a request may give for it (Kong's
         * {@code config.route.model.values}), e.g. {@code kimi3: [kimi-k2, moonshot/kimi-k2]}. A name is spelled as
         * an alias, is no alias of a route itself (it would be ambiguous), and stands for one alias only.
         */
        private Map<String, String> aliasNames(ConfigMap rm, Set<String> aliases) {
            if (!rm.has("aliases")) {
                return Map.of();
            }
            ConfigMap am = ConfigMap.of(rm.node("aliases"), rm.path("aliases"), errors, groupKeys(rm.node("aliases")));
            if (am == null) {
                return Map.of();
            }
            Map<String, String> names = new LinkedHashMap<>();
            for (String alias : ((MapNode) rm.node("aliases")).entries().keySet()) {
                if (!aliases.contains(alias)) {
                    am.error(alias, "no route has alias \"" + alias + "\"");
                    continue;
                }
                // one name, or a list of them; each item reported at its own path and line
                Node written = am.node(alias);
                List<Node> items = written instanceof YamlTree.ListNode l ? l.items() : List.of(written);
                for (int i = 0; i < items.size(); i++) {
                    String at = written instanceof YamlTree.ListNode ? YamlTree.index(am.path(alias), i)
                            : am.path(alias);
                    Node item = items.get(i);
                    String name = item instanceof YamlTree.Scalar sc && !sc.isNull() && !sc.text().isBlank()
                            ? sc.text().strip() : null;
                    String problem = name == null ? "must be a name, or a list of names"
                            : !validAlias(name) ? "invalid name \"" + name + "\": " + NAME_RULE + ", at most 128"
                            : aliases.contains(name) ? "\"" + name + "\" is an alias of routes itself; a name may "
                            + "only stand for another alias"
                            : names.containsKey(name) ? "\"" + name + "\" already stands for alias \""
                            + names.get(name) + "\"" : null;
                    if (problem != null) {
                        errors.add(new CatalogError(at, problem, item == null ? am.line(alias) : item.line()));
                    } else {
                        names.put(name, alias);
                    }
                }
            }
            return names;
        }

        private HedgeBudget readHedgeBudget(ConfigMap o) {
            HedgeBudget d = HedgeBudget.defaults();
            ConfigMap hm = o.map("hedge_budget", HEDGE_BUDGET_FIELDS);
            if (hm == null) {
                return d;
            }
            double ratio = hm.number("ratio", d.ratio());
            if (!(ratio >= 0 && ratio <= 1)) {
                hm.error("ratio", "must be between 0 and 1 (hedges per request; 0.05 = 5 %), got " + ratio);
                ratio = d.ratio();
            }
            return new HedgeBudget(ratio, hm.integer("min_per_window", d.minPerWindow(), 0),
                    hm.duration("window", d.window(), false));
        }

        /**
         * {@code strategy}, or Kong's name for it, {@code algorithm} ({@code config.balancer.algorithm}, flat or
         * under {@code balancer}); both may be given only when they name the same strategy.
         */
        private Strategy readStrategy(ConfigMap g, ConfigMap kb, Strategy def) {
            Strategy strategy = enumValue(g, "strategy", "strategy", Strategy.class, null);
            Strategy algorithm = kong(g, g, kb, "algorithm",
                    m -> enumValue(m, "algorithm", "algorithm", Strategy.class, null));
            if (strategy != null && algorithm != null && strategy != algorithm) {
                ConfigMap at = kb != null && kb.has("algorithm") ? kb : g;
                at.error("algorithm", "\"" + at.string("algorithm") + "\" (" + algorithm.wireName()
                        + ") differs from strategy \"" + g.string("strategy") + "\" (" + strategy.wireName()
                        + "); algorithm is Kong's name for strategy: give one of them");
            }
            return strategy != null ? strategy : algorithm != null ? algorithm : def;
        }

        /**
         * A setting of Kong's {@code config.balancer}, read where Hedgerow keeps it ({@code flat}: the group, or its
         * breaker) and under the group's {@code balancer} ({@code nested}, as Kong writes it). Given in both places
         * it must be the same value, else an error at the nested one. Null when neither gives it, when it is
         * unreadable (its error recorded by {@code read}) or contradicted: the caller takes the default, and the
         * load fails on the error anyway.
         */
        private <T> T kong(ConfigMap g, ConfigMap flat, ConfigMap nested, String key, Function<ConfigMap, T> read) {
            return kong(g, flat, nested, key, read, Object::equals);
        }

        /** As above, {@code same} deciding whether the two forms agree (header names: whatever their case). */
        private <T> T kong(ConfigMap g, ConfigMap flat, ConfigMap nested, String key, Function<ConfigMap, T> read,
                           BiPredicate<T, T> same) {
            T here = flat != null && flat.has(key) ? readOrNull(flat, read) : null;
            T there = nested != null && nested.has(key) ? readOrNull(nested, read) : null;
            if (here != null && there != null && !same.test(here, there)) {
                String flatName = flat.path(key).substring(g.path().length() + 1);
                nested.error(key, nested.shown(key) + " differs from " + flatName + " " + flat.shown(key)
                        + "; balancer." + key + " is the same setting, as Kong writes it: give one of them");
                return null;
            }
            return there != null ? there : here;
        }

        private Duration kongTimeout(ConfigMap g, ConfigMap flat, ConfigMap nested, String key) {
            return kong(g, flat, nested, key, m -> m.timeout(key, null));
        }

        /** What {@code read} returns, or null when it recorded an error (its default is no value). */
        private <T> T readOrNull(ConfigMap m, Function<ConfigMap, T> read) {
            int before = errors.size();
            T v = read.apply(m);
            return errors.size() > before ? null : v;
        }

        private Set<FailoverCriterion> failoverCriteria(ConfigMap m) {
            Set<FailoverCriterion> criteria = new java.util.HashSet<>();
            List<String> names = m.strings("failover_criteria");
            for (int i = 0; i < names.size(); i++) {
                FailoverCriterion c = FailoverCriterion.find(names.get(i));
                if (c == null) {
                    errors.add(new CatalogError(YamlTree.index(m.path("failover_criteria"), i),
                            "unknown failover criterion \"" + names.get(i) + "\" (allowed: "
                                    + FailoverCriterion.allowed() + ")", m.line("failover_criteria")));
                } else {
                    criteria.add(c);
                }
            }
            return criteria;
        }

        private String header(ConfigMap m, String key) {
            String h = m.string(key);
            if (h != null && !HEADER_TOKEN.matcher(h).matches()) {
                m.error(key, "invalid header name \"" + h + "\"");
                return null;
            }
            return h;
        }

        private TokensCountStrategy tokensCountStrategy(ConfigMap m) {
            return enumValue(m, "tokens_count_strategy", "tokens_count_strategy", TokensCountStrategy.class, null);
        }

        /**
         * The group's {@code judge}: required by {@code tokens_count_strategy: llm_accuracy} under strategy
         * {@code lowest_usage}, refused anywhere else (a judge nobody's ranking reads would only cost calls). Its
         * {@code route} is a chat route of this org, called directly; {@code timeout} is read as Kong's timeouts are
         * (a bare number is milliseconds). Null when the group has none (or it has errors, recorded).
         */
        private GroupSettings.Judge readJudge(ConfigMap g, ConfigMap kb, Strategy strategy,
                                              TokensCountStrategy tokens, List<Route> routes) {
            boolean accuracy = tokens == TokensCountStrategy.LLM_ACCURACY;
            if (accuracy && strategy != Strategy.LOWEST_USAGE) {
                ConfigMap at = kb != null && kb.has("tokens_count_strategy") ? kb : g;
                at.error("tokens_count_strategy", "llm_accuracy ranks members by a judge's "
                        + "scores under strategy lowest_usage only (this group's strategy is "
                        + strategy.wireName() + ")");
            }
            if (!g.has("judge")) {
                if (accuracy && strategy == Strategy.LOWEST_USAGE) {
                    g.error("judge", "required by tokens_count_strategy llm_accuracy: a mapping with at least "
                            + "route (the id of a chat route of this org that scores answers)");
                }
                return null;
            }
            if (!accuracy || strategy != Strategy.LOWEST_USAGE) {
                g.error("judge", "only for strategy lowest_usage with tokens_count_strategy llm_accuracy (this "
                        + "group's: " + strategy.wireName() + ", " + tokens.wireName() + ")");
                return null;
            }
            ConfigMap j = g.map("judge", JUDGE_FIELDS);
            if (j == null) {
                return null;
            }
            int before = errors.size();
            String route = j.requiredString("route");
            if (route != null) {
                Route jr = routes.stream().filter(r -> r.id().equals(route)).findFirst().orElse(null);
                if (jr == null) {
                    j.error("route", "unknown route \"" + route + "\" (not a route of this org)");
                } else if (jr.embeddings()) {
                    j.error("route", "route \"" + route + "\" is an embeddings route; a judge must be a chat route");
                }
            }
            GroupSettings.Judge d = GroupSettings.Judge.defaults(route);
            String prompt = d.prompt();
            if (j.has("prompt")) {
                String p = j.string("prompt");
                if (p == null || p.isBlank()) {
                    j.error("prompt", "must be a non-empty text (leave it out for Kong's default)");
                } else {
                    prompt = p;
                }
            }
            double rate = j.number("sampling_rate", d.samplingRate());
            if (!(rate >= 0 && rate <= 1)) {
                j.error("sampling_rate", "must be between 0 and 1 (the share of answers judged), got " + rate);
            }
            int countback = j.integer("message_countback", d.messageCountback(), 1);
            if (countback > MAX_MESSAGE_COUNTBACK) {
                j.error("message_countback", "must be ≤ " + MAX_MESSAGE_COUNTBACK + " (got " + countback + ")");
            }
            boolean ignoreSystem = j.bool("ignore_system_prompts", d.ignoreSystemPrompts());
            boolean ignoreAssistant = j.bool("ignore_assistant_prompts", d.ignoreAssistantPrompts());
            boolean ignoreTool = j.bool("ignore_tool_prompts", d.ignoreToolPrompts());
            int maxTokens = j.integer("max_tokens", d.maxTokens(), 1);
            if (maxTokens > MAX_JUDGE_TOKENS) {
                j.error("max_tokens", "must be ≤ " + MAX_JUDGE_TOKENS + " (got " + maxTokens + ")");
            }
            Duration timeout = j.timeout("timeout", d.timeout());
            if (errors.size() > before) {
                return null;
            }
            return new GroupSettings.Judge(route, prompt, rate, countback, ignoreSystem, ignoreAssistant, ignoreTool,
                    maxTokens, timeout);
        }

        private <E extends Enum<E>> E enumValue(ConfigMap m, String key, String noun, Class<E> type, E def) {
            String s = m.string(key);
            if (s == null) {
                return def;
            }
            E e = WireNames.find(type, s);
            if (e == null) {
                m.error(key, "unknown " + noun + " \"" + s + "\" (allowed: " + WireNames.allowed(type) + ")");
                return def;
            }
            return e;
        }

        private static String slugRule() {
            return "lowercase letters, digits and . _ -, starting with a letter or digit, at most 64";
        }
    }

    private static List<String> sorted(Set<String> s) {
        return s.stream().sorted().toList();
    }
}
