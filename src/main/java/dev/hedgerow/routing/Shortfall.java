package dev.hedgerow.routing;

import dev.hedgerow.api.ApiError;
import dev.hedgerow.catalog.Route;

import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * What keeps routes from serving a request (the capability filter's verdicts), and the {@code no_capable_provider}
 * message that says each distinct reason once with the routes it applies to: a prompt too large for every window of
 * ten routes is one reason, not ten. Stateless; thread-safe.
 */
final class Shortfall {
    /** Routes named in a reason's scope before the rest are only counted. */
    static final int NAMED = 3;

    private Shortfall() {
    }

    /**
     * One thing a route lacks: a capability or demanded parameter ({@code need}), or a context window of
     * {@code available} tokens where {@code needed} are needed ({@code need} is then {@link #CONTEXT_WINDOW}).
     */
    record Lack(String need, long needed, long available) {
        static final String CONTEXT_WINDOW = "context window";

        static Lack of(String need) {
            return new Lack(need, 0, 0);
        }

        static Lack window(long needed, long available) {
            return new Lack(CONTEXT_WINDOW, needed, available);
        }

        boolean isWindow() {
            return need.equals(CONTEXT_WINDOW);
        }

        /** As one route's rejection states it. */
        String describe() {
            return isWindow() ? CONTEXT_WINDOW + " (" + needed + " tokens needed, " + available + " available)" : need;
        }
    }

    /** What {@code r} lacks to serve a request with these facts, in the order the filter checks them. */
    static List<Lack> of(Route r, RequestFacts f) {
        List<Lack> out = new ArrayList<>();
        String transport = f.stream() ? " (streaming)" : " (non-streaming)";
        for (String need : f.needs()) {
            if (!r.can(need, f.stream())) {
                out.add(Lack.of(need.equals("images") || need.equals("reasoning_off") ? need : need + transport));
            }
        }
        if (f.prefs().requireParameters()) {
            for (String p : f.parameters()) {
                if (!r.parameters().contains(p) && !p.equals("max_tokens") && !p.equals("max_completion_tokens")) {
                    out.add(Lack.of("parameter " + p));
                }
            }
        }
        if (r.contextWindow() > 0 && f.contextNeeded() > r.contextWindow()) {
            out.add(Lack.window(f.contextNeeded(), r.contextWindow()));
        }
        return out;
    }

    /**
     * The refusal when no route can serve: each distinct reason once, in the order first met, with its scope, e.g.
     * {@code missing tools (streaming) on 4 of 10 routes (a, b, c and 1 more); context window (9000 tokens needed,
     * at most 8192 available) on all 10 routes}. A window reason gives the largest window of its routes, the one a
     * prompt must fit to be served.
     *
     * @param lacking every route the request was judged against (in group order) and what it lacks, none empty
     */
    static String message(String alias, Map<String, List<Lack>> lacking) {
        Map<String, List<String>> routesByNeed = new LinkedHashMap<>();
        long needed = 0;
        long largest = Long.MIN_VALUE;
        long smallest = Long.MAX_VALUE;
        for (Map.Entry<String, List<Lack>> e : lacking.entrySet()) {
            for (Lack l : e.getValue()) {
                routesByNeed.computeIfAbsent(l.need(), k -> new ArrayList<>()).add(e.getKey());
                if (l.isWindow()) {
                    needed = l.needed(); // one request: the same for every route
                    largest = Math.max(largest, l.available());
                    smallest = Math.min(smallest, l.available());
                }
            }
        }
        List<String> reasons = new ArrayList<>();
        for (Map.Entry<String, List<String>> e : routesByNeed.entrySet()) {
            String what = !e.getKey().equals(Lack.CONTEXT_WINDOW) ? e.getKey() : Lack.CONTEXT_WINDOW + " ("
                    + needed + " tokens needed, " + (largest != smallest ? "at most " : "") + largest + " available)";
            reasons.add(what + " on " + scope(e.getValue(), lacking.size()));
        }
        return "No provider of '" + alias + "' can serve this request: missing " + String.join("; ", reasons) + ".";
    }

    /**
     * OpenAI's refusal of a request too long for the model ({@code context_length_exceeded}, param {@code messages},
     * or {@code input} for embeddings, in its words: "This model's maximum context length is ...") when what every
     * route lacks is only its context window, the largest of them being the one to fit; null otherwise. Clients key
     * on that code to trim a conversation and retry (LiteLLM's ContextWindowExceededError, agent frameworks), and a
     * provider's own overflow reaches them so; the gateway's count gave them {@code no_capable_provider} (found by
     * hunt23).
     */
    static ApiError contextExceeded(String alias, Map<String, List<Lack>> lacking, RequestFacts f,
                                    boolean embeddings) {
        long largest = 0;
        for (List<Lack> lacks : lacking.values()) {
            if (lacks.stream().anyMatch(l -> !l.isWindow())) {
                return null;
            }
            for (Lack l : lacks) {
                largest = Math.max(largest, l.available());
            }
        }
        String message = "This model's maximum context length is " + largest + " tokens. However, you requested "
                + f.contextNeeded() + " tokens" + (embeddings ? " in the input" : " (" + f.promptTokens()
                + " in the messages, " + (f.maxTokens() == null ? 0 : f.maxTokens()) + " in the completion)")
                + ". Please reduce the length of the " + (embeddings ? "input" : "messages or completion")
                + " (no route of '" + alias + "' has a larger context window).";
        return ApiError.invalidRequest("context_length_exceeded", message, embeddings ? "input" : "messages");
    }

    /**
     * The routes a reason applies to, out of {@code total} judged: the one route by name, {@code both routes},
     * {@code all 10 routes}, up to {@value #NAMED} names, or a count with the first names.
     */
    static String scope(List<String> routes, int total) {
        int n = routes.size();
        if (n == total && total == 2) {
            return "both routes";
        }
        if (n == total && total > 2) {
            return "all " + total + " routes";
        }
        if (n <= NAMED) {
            return names(routes);
        }
        return n + " of " + total + " routes (" + String.join(", ", routes.subList(0, NAMED)) + " and "
                + (n - NAMED) + " more)";
    }

    /** {@code a}, {@code a and b}, {@code a, b and c}. */
    private static String names(List<String> routes) {
        if (routes.size() == 1) {
            return routes.get(0);
        }
        return String.join(", ", routes.subList(0, routes.size() - 1)) + " and " + routes.get(routes.size() - 1);
    }
}
