package dev.hedgerow.admin;

import dev.hedgerow.catalog.CatalogError;

import java.util.List;
import java.util.Optional;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * An admin edit the catalog rules refuse; carries every error with its path and, for an error inside a route
 * ({@code routes[2].weight}), that route's id, since an admin knows a member by its id, not by its index in the
 * org's route list; for an error inside the edited group's settings ({@code groups.duo.breaker.max_fails}), the
 * field of the edit's body it is about ({@code breaker.max_fails}). Immutable.
 */
public final class InvalidEdit extends RuntimeException {
    private static final Pattern ROUTE_PATH = Pattern.compile("^routes\\[(\\d+)]");
    /** A route's weight or priority, which an edit's body gives by name (a move) or per member (a group edit). */
    private static final Pattern MEMBER_FIELD = Pattern.compile("^routes\\[\\d+]\\.(weight|priority)$");

    private final List<CatalogError> errors;
    private final List<Optional<String>> routes;
    private final List<Optional<String>> params;

    /** @param routeIds the ids of the edited org's routes, in catalog order (what {@code routes[i]} indexes) */
    public InvalidEdit(List<CatalogError> errors, List<String> routeIds) {
        this(errors, routeIds, null);
    }

    /**
     * @param groupPath the path of the group whose settings the edit's body gives ({@code groups.duo}); an error below
     *                  it names its field relative to it. Null when the edit gives no group settings.
     */
    public InvalidEdit(List<CatalogError> errors, List<String> routeIds, String groupPath) {
        this(List.copyOf(errors), errors.stream().map(e -> routeOf(e.path(), routeIds)).toList(),
                errors.stream().map(e -> paramOf(e.path(), groupPath)
                        .or(() -> memberField(e.path()).map(f -> "members"))).toList());
    }

    /**
     * An edit whose body has one field the whole result hangs on (a route's new {@code alias}): every error, wherever
     * in the org the rules found it, is about that field.
     */
    public static InvalidEdit about(String param, List<CatalogError> errors, List<String> routeIds) {
        return new InvalidEdit(List.copyOf(errors), errors.stream().map(e -> routeOf(e.path(), routeIds)).toList(),
                errors.stream().map(e -> memberField(e.path()).or(() -> Optional.of(param))).toList());
    }

    /**
     * {@code weight} or {@code priority} when the error is about a route's (a move's {@code "weight": -1}, a group
     * edit whose members all weigh 0): the field of the body it is about, which an answer named {@code alias}, or
     * nothing (found by hunt5).
     */
    private static Optional<String> memberField(String path) {
        Matcher m = MEMBER_FIELD.matcher(path);
        return m.matches() ? Optional.of(m.group(1)) : Optional.empty();
    }

    private InvalidEdit(List<CatalogError> errors, List<Optional<String>> routes, List<Optional<String>> params) {
        super(message(errors, routes), null, false, false);
        int shown = Math.min(errors.size(), MAX_LISTED);
        this.errors = errors.subList(0, shown);
        this.routes = routes.subList(0, shown);
        this.params = params.subList(0, shown);
    }

    /** The problems an answer lists (and its message names): an edit of thousands of unknown fields is told of these. */
    static final int MAX_LISTED = 20;

    private static String message(List<CatalogError> errors, List<Optional<String>> routes) {
        StringBuilder b = new StringBuilder("The edit was not saved: ");
        for (int i = 0; i < Math.min(errors.size(), MAX_LISTED); i++) {
            CatalogError e = errors.get(i);
            b.append(i == 0 ? "" : "; ").append(routes.get(i).map(r -> e.path() + " (route " + r + "): "
                    + e.message()).orElseGet(e::toString));
        }
        if (errors.size() > MAX_LISTED) {
            b.append("; and ").append(errors.size() - MAX_LISTED).append(" more problems");
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

    private static Optional<String> paramOf(String path, String groupPath) {
        if (groupPath == null || !path.startsWith(groupPath) || path.length() == groupPath.length()) {
            return Optional.empty();
        }
        char next = path.charAt(groupPath.length());
        if (next == '.') {
            return Optional.of(path.substring(groupPath.length() + 1));
        }
        // a key that is not a plain name: groups.duo["odd key"]
        return next == '[' ? Optional.of(path.substring(groupPath.length())) : Optional.empty();
    }

    /** The id of the route the i-th error is about, if it is about one. */
    public Optional<String> route(int i) {
        return routes.get(i);
    }

    /** The field of the edit's body the i-th error is about ({@code breaker.max_fails}), if it is about one. */
    public Optional<String> param(int i) {
        return params.get(i);
    }

    public List<CatalogError> errors() {
        return errors;
    }
}
