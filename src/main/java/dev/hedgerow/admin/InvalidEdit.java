package dev.hedgerow.admin;

import dev.hedgerow.catalog.CatalogError;

import java.util.List;
import java.util.Optional;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Collectors;

/**
 * An admin edit the catalog rules refuse; carries every error with its path and, for an error inside a route
 * ({@code routes[2].weight}), that route's id, since an admin knows a member by its id, not by its index in the
 * org's route list. Immutable.
 */
public final class InvalidEdit extends RuntimeException {
    private static final Pattern ROUTE_PATH = Pattern.compile("^routes\\[(\\d+)]");

    private final List<CatalogError> errors;
    private final List<Optional<String>> routes;

    /** @param routeIds the ids of the edited org's routes, in catalog order (what {@code routes[i]} indexes) */
    public InvalidEdit(List<CatalogError> errors, List<String> routeIds) {
        this(List.copyOf(errors), routesOf(errors, routeIds), true);
    }

    private InvalidEdit(List<CatalogError> errors, List<Optional<String>> routes, boolean resolved) {
        super(message(errors, routes), null, false, false);
        this.errors = errors;
        this.routes = routes;
    }

    private static List<Optional<String>> routesOf(List<CatalogError> errors, List<String> routeIds) {
        return errors.stream().map(e -> routeOf(e.path(), routeIds)).toList();
    }

    private static String message(List<CatalogError> errors, List<Optional<String>> routes) {
        StringBuilder b = new StringBuilder("The edit was not saved: ");
        for (int i = 0; i < errors.size(); i++) {
            CatalogError e = errors.get(i);
            b.append(i == 0 ? "" : "; ").append(routes.get(i).map(r -> e.path() + " (route " + r + "): "
                    + e.message()).orElseGet(e::toString));
        }
        return b.toString();
    }

    private static Optional<String> routeOf(String path, List<String> routeIds) {
        Matcher m = ROUTE_PATH.matcher(path);
        if (!m.find()) {
            return Optional.empty();
        }
        int i = Integer.parseInt(m.group(1));
        return i < routeIds.size() ? Optional.of(routeIds.get(i)) : Optional.empty();
    }

    /** The id of the route the i-th error is about, if it is about one. */
    public Optional<String> route(int i) {
        return routes.get(i);
    }

    public List<CatalogError> errors() {
        return errors;
    }
}
