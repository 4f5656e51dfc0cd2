package dev.hedgerow.dispatch;

import dev.hedgerow.routing.Candidate;

import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;

/**
 * The routes whose provider refused the {@code stream_options} the gateway adds to a stream (older vLLM, some Azure
 * OpenAI API versions and proxies refuse a field they do not know with a 400): their streams are sent without it
 * from then on, and the gateway counts their usage itself. Learnt for the provider address and model the route
 * named then, so a route moved to another provider or model is asked again. Kept in this instance's memory, as the
 * prober keeps its probe variants: relearning it costs one refusal per route, answered at once and not billed.
 * Thread-safe.
 */
final class StreamOptionsRefusals {
    /** Route key to the fingerprint (provider address, model) it was learnt for. */
    private final Map<String, String> refused = new ConcurrentHashMap<>();

    /** Whether the candidate's provider refused {@code stream_options} for this route as it is now. */
    boolean refuses(Candidate c) {
        String learnt = refused.get(c.id());
        // a route that never refused (nearly all) costs one lookup, no string built
        return learnt != null && learnt.equals(fingerprint(c));
    }

    /** The candidate's provider refused {@code stream_options}. */
    void learn(Candidate c) {
        refused.put(c.id(), fingerprint(c));
    }

    private static String fingerprint(Candidate c) {
        return c.provider().id() + "\n" + c.provider().baseUrl() + "\n" + c.route().model();
    }
}
