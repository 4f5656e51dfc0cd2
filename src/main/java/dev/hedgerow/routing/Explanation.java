package dev.hedgerow.routing;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.JsonNodeFactory;
import com.fasterxml.jackson.databind.node.NullNode;
import com.fasterxml.jackson.databind.node.ObjectNode;

import java.util.List;
import java.util.Set;

/**
 * Why a request would go where it goes ({@link Router#explain}): every route of the alias group with each filter
 * it passed or failed, its predicted first token for this prompt, its SLO standing, headroom, prefix affinity and
 * its final rank. The console's admin endpoint returns {@link #toNode()}. Immutable.
 *
 * @param outcome {@code ready}, or the code of the error the request would get ({@code no_capable_provider}, ...)
 * @param error   that error's message, or null when ready
 * @param cursor  the rotation position the ranking was computed at (ties and exploration depend on it)
 */
public record Explanation(String alias, String strategy, int promptTokens, long contextNeeded, boolean stream,
                         Set<String> needs, String outcome, String error, long cursor, List<RouteView> routes) {

    public Explanation {
        needs = Set.copyOf(needs);
        routes = List.copyOf(routes);
    }

    /** One filter's verdict on one route; {@code detail} says what was found. */
    public record Check(String filter, boolean passed, String detail) {
    }

    /**
     * One route as the router saw it.
     *
     * @param rank      1 = tried first; 0 = not a candidate (a hard filter failed)
     * @param placement the auto strategy's reason for its place ({@code explore}, {@code affinity}, {@code fast},
     *                  {@code slow_bar}), or null for other strategies and non-candidates
     * @param slo       {@code meets}, {@code below} or {@code unknown} (not yet measured)
     * @param capacity  the operator's fresh capacity report, or null when none
     * @param affinity  this route recently served the prompt's longest served prefix (with any others that did)
     * @param accuracy  the judge's scores of its answers, or null when it was never scored
     */
    public record RouteView(String routeId, String provider, String model, int rank, List<Check> checks,
                            TtftEstimate predicted, String slo, double decodeTokensPerSecond,
                            CapacityReport capacity, boolean affinity, String placement, Accuracy accuracy) {
        public RouteView {
            checks = List.copyOf(checks);
        }

        public boolean eligible() {
            return rank > 0;
        }
    }

    /** A route's judged accuracy: the decayed mean score (1..100) of {@code samples} judged answers. */
    public record Accuracy(double score, long samples) {
        /** The accuracy a route's judge scores give, or null when it was never scored. */
        public static Accuracy of(Ewma scores) {
            return scores.isMeasured() ? new Accuracy(scores.value(), scores.count()) : null;
        }

        /** {@code accuracy} as the admin API shows it: {@code {score, samples}}, or JSON null for none. */
        public static JsonNode toNode(Accuracy accuracy) {
            return accuracy == null ? NullNode.getInstance() : JsonNodeFactory.instance.objectNode()
                    .put("score", Math.round(accuracy.score * 10) / 10.0).put("samples", accuracy.samples);
        }
    }

    public ObjectNode toNode() {
        ObjectNode n = JsonNodeFactory.instance.objectNode();
        n.put("alias", alias);
        n.put("strategy", strategy);
        n.put("prompt_tokens", promptTokens);
        n.put("context_needed", contextNeeded);
        n.put("stream", stream);
        ArrayNode nd = n.putArray("needs");
        needs.stream().sorted().forEach(nd::add);
        n.put("outcome", outcome);
        if (error == null) {
            n.putNull("error");
        } else {
            n.put("error", error);
        }
        n.put("cursor", cursor);
        ArrayNode rs = n.putArray("routes");
        for (RouteView r : routes) {
            ObjectNode o = rs.addObject();
            o.put("route", r.routeId());
            o.put("provider", r.provider());
            o.put("model", r.model());
            o.put("rank", r.rank());
            o.put("eligible", r.eligible());
            ArrayNode cs = o.putArray("checks");
            for (Check c : r.checks()) {
                cs.addObject().put("filter", c.filter()).put("passed", c.passed()).put("detail", c.detail());
            }
            ObjectNode p = o.putObject("predicted_ttft_ms");
            p.put("mean", Math.round(r.predicted().meanMs()));
            p.put("p90", Math.round(r.predicted().p90Ms()));
            p.put("measured", r.predicted().measured());
            o.put("slo", r.slo());
            o.put("decode_tokens_per_second", r.decodeTokensPerSecond());
            if (r.capacity() == null) {
                o.putNull("capacity");
            } else {
                o.set("capacity", r.capacity().toNode());
            }
            o.put("affinity", r.affinity());
            if (r.placement() == null) {
                o.putNull("placement");
            } else {
                o.put("placement", r.placement());
            }
            o.set("accuracy", Accuracy.toNode(r.accuracy()));
        }
        return n;
    }
}
