package dev.hedgerow.prober;

import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.JsonNodeFactory;
import com.fasterxml.jackson.databind.node.ObjectNode;

import java.util.List;

/**
 * What one probe round did. {@code ran} is false, with {@code note} saying why, when another instance held the round
 * lock (rounds never overlap across the fleet) or the last round anywhere started less than the minimum interval ago
 * ({@link ProberConfig#minInterval()}). {@code note} never names an org, alias, route or model: the
 * {@linkplain #toSummaryNode() summary} an anonymous caller gets carries it. Immutable.
 */
public record RoundReport(boolean ran, String note, List<RouteResult> routes, List<ScrapeResult> scrapes) {

    public static RoundReport skipped(String why) {
        return new RoundReport(false, why, List.of(), List.of());
    }

    /**
     * The answer of {@code POST /prober/run}, snake_case as every Hedgerow answer: {@code ran}, {@code note},
     * {@code routes[]} ({@code org}, {@code route}, {@code action}, {@code outcome}, {@code ttft_ms},
     * {@code tokens_per_second}, {@code latency_ms}, {@code verification}; null where not measured or judged) and
     * {@code scrapes[]}
     * ({@code org}, {@code provider}, {@code routes}, {@code outcome}). Written as a tree, not bound by reflection.
     */
    public ObjectNode toNode() {
        ObjectNode out = JsonNodeFactory.instance.objectNode();
        out.put("ran", ran);
        out.put("note", note);
        ArrayNode routeNodes = out.putArray("routes");
        for (RouteResult r : routes) {
            routeNodes.addObject().put("org", r.org()).put("route", r.route()).put("action", r.action())
                    .put("outcome", r.outcome()).put("ttft_ms", r.ttftMs())
                    .put("tokens_per_second", r.tokensPerSecond()).put("latency_ms", r.latencyMs())
                    .put("verification", r.verification());
        }
        ArrayNode scrapeNodes = out.putArray("scrapes");
        for (ScrapeResult s : scrapes) {
            ObjectNode n = scrapeNodes.addObject().put("org", s.org()).put("provider", s.provider());
            s.routes().forEach(n.putArray("routes")::add);
            n.put("outcome", s.outcome());
        }
        return out;
    }

    /**
     * What an anonymous caller of {@code POST /prober/run} may see: {@code ran}, {@code note} and {@code counts}
     * ({@code routes}, then how many of them were {@code ok}, {@code slow}, {@code failed}, {@code refused} or
     * {@code skipped}, {@code verification_failed}, {@code scrapes} and {@code scrapes_failed}). No org, alias, route
     * or model id and no error text: on a public prober URL the full report ({@link #toNode()}) would show every
     * tenant's routes and their failures to anyone.
     */
    public ObjectNode toSummaryNode() {
        ObjectNode out = JsonNodeFactory.instance.objectNode();
        out.put("ran", ran);
        out.put("note", note);
        int ok = 0;
        int slow = 0;
        int failed = 0;
        int refused = 0;
        int skipped = 0;
        int unverified = 0;
        for (RouteResult r : routes) {
            String outcome = r.outcome() == null ? "" : r.outcome();
            if ("skipped".equals(r.action())) {
                skipped++;
            } else if (outcome.equals("ok")) {
                ok++;
            } else if (outcome.startsWith("slow")) {
                slow++;
            } else if (outcome.startsWith("refused")) {
                refused++;
            } else {
                failed++;
            }
            if (r.verification() != null && !r.verification().equals("pass")) {
                unverified++;
            }
        }
        int scrapesFailed = (int) scrapes.stream().filter(s -> s.outcome() == null || s.outcome().startsWith("failed"))
                .count();
        out.putObject("counts").put("routes", routes.size()).put("ok", ok).put("slow", slow).put("failed", failed)
                .put("refused", refused).put("skipped", skipped).put("verification_failed", unverified)
                .put("scrapes", scrapes.size()).put("scrapes_failed", scrapesFailed);
        return out;
    }

    /**
     * One route's probe, a chat route's or an embeddings route's alike.
     *
     * @param action          {@code probe}, {@code half_open_probe}, or {@code skipped}
     * @param outcome         {@code ok}, {@code slow: <how>} (still serving when the probe's time ran out: no breaker
     *                        verdict), {@code failed: <why>}, {@code refused: <why>}, or why it was skipped
     * @param ttftMs          the chat probe's time to first token (null for an embeddings route: it has none)
     * @param tokensPerSecond the chat probe's decode speed (null for an embeddings route, or too few tokens)
     * @param latencyMs       the time to the whole answer of a probe that answered: a chat probe's end to end, an
     *                        embeddings probe's latency (what is learnt of it)
     * @param verification    the verdict written ({@code pass} / {@code fail:<why>}), or null when not judged
     */
    public record RouteResult(String org, String route, String action, String outcome, Long ttftMs,
                              Double tokensPerSecond, Long latencyMs, String verification) {
    }

    /** One provider's metrics scrape: the routes it fed, or why it failed. */
    public record ScrapeResult(String org, String provider, List<String> routes, String outcome) {
    }
}
