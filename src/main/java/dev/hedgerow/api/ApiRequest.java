package dev.hedgerow.api;

import com.fasterxml.jackson.databind.node.ObjectNode;

/**
 * A validated request the gateway dispatches upstream: a chat completion or an embeddings request. What dispatch
 * needs of either: the alias, the client's provider preferences, the transport, the completion limit, and each
 * attempt's own body for the route's model (Hedgerow-only fields stripped) at the provider's path. Immutable.
 */
public sealed interface ApiRequest permits ChatRequest, EmbeddingsRequest {

    /** The alias the request is for. */
    String model();

    ProviderPrefs prefs();

    /** True when the client asked for a stream (SSE); an embeddings request never does. */
    boolean stream();

    /** The requested completion limit, or null (always null for embeddings, which generate no tokens). */
    Integer maxTokens();

    /** The client asked for the usage chunk of a stream ({@code stream_options.include_usage}). */
    default boolean includeUsage() {
        return false;
    }

    /** The number of choices the answer is to hold ({@code n}); 1 for embeddings. */
    default int choices() {
        return 1;
    }

    /**
     * A fresh copy of the body for one upstream attempt: Hedgerow-only fields removed and {@code model} set to the
     * route's upstream model name.
     */
    ObjectNode upstreamBody(String upstreamModel);

    /** The provider's path under its base URL: {@code /chat/completions} or {@code /embeddings}. */
    String upstreamPath();
}
