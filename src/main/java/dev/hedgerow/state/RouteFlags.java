package dev.hedgerow.state;

import java.util.List;

/**
 * The operator's flags of a route: route blobs written without a TTL by the admin API and kept until an operator
 * changes them, which nothing in traffic rebuilds (as opposed to learnt models, which traffic relearns). A flag is
 * never deleted: setting it back writes its neutral value ({@value #GOOD_STANDING}, {@value #NO_VERDICT}), so a
 * route without the blob in a store that had it means the store lost it (a Redis restarted without its data), which
 * {@link ResilientStateStore} puts right from what it saw. This class holds the one declaration of their names.
 */
public final class RouteFlags {
    /** The route's standing: any value but {@value #GOOD_STANDING} excludes it from routing. */
    public static final String STANDING = "standing";
    public static final String GOOD_STANDING = "good";
    /**
     * The operator's verification verdict ({@code pass} or {@code fail:<why>}), in effect over the prober's while it
     * is set; {@value #NO_VERDICT} once the operator cleared it.
     */
    public static final String OPERATOR_VERIFICATION = "verification_operator";
    public static final String NO_VERDICT = "none";

    /**
     * The prober's verification verdict ({@code pass} or {@code fail:<why>}, with a TTL): no operator flag (never
     * written back), but held through an outage as the shared store last showed it ({@link ResilientStateStore}).
     */
    public static final String PROBER_VERIFICATION = "verification";

    /** Every flag's name. */
    public static final List<String> NAMES = List.of(STANDING, OPERATOR_VERIFICATION);

    /**
     * The blob holding the time a flag was set ({@link StateStore#putRouteFlag}), in milliseconds: after a data loss
     * the latest flag an instance saw is the one written back, not whichever instance wrote first (hunt14).
     */
    public static String stampName(String name) {
        return name + "@at";
    }

    /** A flag's stamp as a snapshot shows it ({@code null}: none, so 0: set before stamps, or never). */
    public static long stamp(String shown) {
        if (shown == null) {
            return 0;
        }
        try {
            return Long.parseLong(shown);
        } catch (NumberFormatException e) {
            return 0;
        }
    }

    private RouteFlags() {
    }
}
