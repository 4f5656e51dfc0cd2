package dev.hedgerow.catalog;

import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;

/**
 * One tenant: its client and admin keys (as hashes), providers, routes and alias groups, where a request may name
 * its alias, and its shared hedge budget. Immutable.
 * Aliases resolve only inside their org: another org's alias can never shadow or leak into this one.
 */
public record Org(String id, List<ApiKey> keys, List<ApiKey> adminKeys, List<Provider> providers, List<Route> routes,
                  Map<String, GroupSettings> groups, RoutingRules routing, HedgeBudget hedgeBudget) {
    private static final GroupSettings DEFAULT_GROUP = GroupSettings.defaults();

    public Org {
        keys = List.copyOf(keys);
        adminKeys = List.copyOf(adminKeys);
        providers = List.copyOf(providers);
        routes = List.copyOf(routes);
        groups = Map.copyOf(groups);
        routing = routing == null ? RoutingRules.defaults() : routing;
        hedgeBudget = hedgeBudget == null ? HedgeBudget.defaults() : hedgeBudget;
    }

    /** An org with the default routing rules and hedge budget. */
    public Org(String id, List<ApiKey> keys, List<ApiKey> adminKeys, List<Provider> providers, List<Route> routes,
               Map<String, GroupSettings> groups) {
        this(id, keys, adminKeys, providers, routes, groups, RoutingRules.defaults(), HedgeBudget.defaults());
    }

    /** This org with other routes and groups (an admin edit); everything else is kept. */
    public Org withRoutesAndGroups(List<Route> newRoutes, Map<String, GroupSettings> newGroups) {
        return new Org(id, keys, adminKeys, providers, newRoutes, newGroups, routing, hedgeBudget);
    }

    public Optional<Provider> provider(String providerId) {
        return providers.stream().filter(p -> p.id().equals(providerId)).findFirst();
    }

    public Optional<Route> route(String routeId) {
        return routes.stream().filter(r -> r.id().equals(routeId)).findFirst();
    }

    /** The routes of an alias, in declaration order; empty when the alias is not this org's. */
    public List<Route> routesOf(String alias) {
        List<Route> out = new ArrayList<>();
        for (Route r : routes) {
            if (r.alias().equals(alias)) {
                out.add(r);
            }
        }
        return out;
    }

    /** Every alias with at least one route, in declaration order. */
    public List<String> aliases() {
        Map<String, Boolean> seen = new LinkedHashMap<>();
        routes.forEach(r -> seen.put(r.alias(), true));
        return List.copyOf(seen.keySet());
    }

    /** The group's settings, or the defaults when the alias has routes but no explicit group entry. */
    public GroupSettings group(String alias) {
        GroupSettings g = groups.get(alias);
        return g != null ? g : DEFAULT_GROUP; // not getOrDefault: that would build the defaults on every call
    }
}
