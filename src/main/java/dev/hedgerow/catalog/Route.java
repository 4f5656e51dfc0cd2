package dev.hedgerow.catalog;

import java.util.List;
import java.util.Set;

/**
 * One upstream model on one provider, under an alias. Health, latency models, leases and usage are kept per
 * route (not per provider). Immutable.
 *
 * @param capabilities what the route can do: {@code tools, json_mode, images, reasoning_off, prefill} and the
 *                     transport-specific forms {@code tools:stream}, {@code json_mode:nonstream}, ...; and
 *                     {@code reasoning}, what the model does (it thinks before answering, perhaps silently)
 * @param parameters   request parameters the route honours (for {@code provider.require_parameters})
 * @param embeddings   true for an embeddings model (used by the semantic strategy), never a chat candidate
 */
public record Route(String id, String alias, String provider, String model, int weight, int priority,
                    int contextWindow, Set<String> capabilities, Set<String> parameters, Price price,
                    String description, List<String> tags, boolean embeddings) {
    /** Reserved tag: an operator drained this member; it takes no traffic and keeps its weight for undrain. */
    public static final String DRAINED = "hedgerow:drained";
    /** Reserved tag: an operator pinned this member; while set, no other member of its alias takes traffic. */
    public static final String PINNED = "hedgerow:pinned";

    public Route {
        capabilities = Set.copyOf(capabilities);
        parameters = Set.copyOf(parameters);
        tags = tags == null ? List.of() : List.copyOf(tags);
    }

    /** A chat route (not an embeddings one). */
    public Route(String id, String alias, String provider, String model, int weight, int priority,
                 int contextWindow, Set<String> capabilities, Set<String> parameters, Price price,
                 String description, List<String> tags) {
        this(id, alias, provider, model, weight, priority, contextWindow, capabilities, parameters, price,
                description, tags, false);
    }

    public boolean drained() {
        return tags.contains(DRAINED);
    }

    public boolean pinned() {
        return tags.contains(PINNED);
    }

    /** True when the route declares the capability for every transport or for the one asked for. */
    public boolean can(String capability, boolean stream) {
        return capabilities.contains(capability)
                || capabilities.contains(capability + (stream ? ":stream" : ":nonstream"));
    }

    public record Price(double promptPerMtok, double completionPerMtok) {
        public static final Price FREE = new Price(0, 0);
        /**
         * The most a catalog file may price a million tokens at, in any unit (a thousand times the dearest model's
         * price in Indonesian rupiah): a request's cost then stays finite whatever tokens it reports.
         */
        public static final double MAX_PER_MTOK = 1e9;

        public double cost(long promptTokens, long completionTokens) {
            return (promptTokens * promptPerMtok + completionTokens * completionPerMtok) / 1_000_000d;
        }
    }
}
