package dev.hedgerow.api;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ObjectNode;

import java.util.Iterator;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.function.UnaryOperator;

/**
 * Type and range checks of the chat completions parameters the OpenAI API defines, as OpenAI itself answers them
 * (400, the parameter named). A request that would be refused by a strict provider is refused before any route is
 * tried, so a lax one (many OpenAI-compatible servers ignore what they do not know) cannot quietly answer it, and
 * a mistyped value never costs an upstream call, a hedge or a failover. {@code null} means "not set", as upstream.
 * Fields outside this list pass through unchecked.
 */
final class RequestParameters {
    /** OpenAI's limit on {@code n}. */
    static final int MAX_CHOICES = 128;
    private static final Set<String> TOOL_CHOICES = Set.of("none", "auto", "required");
    private static final Set<String> RESPONSE_FORMATS = Set.of("text", "json_object", "json_schema");

    private RequestParameters() {
    }

    /**
     * The alias a request is for: {@code override} (the path's or header's), else the body's {@code model}, which must
     * then be a non-empty string; {@code alias} maps a name the routing rules give an alias to that alias.
     */
    static String model(ObjectNode body, String override, UnaryOperator<String> alias) {
        if (override != null) {
            return alias.apply(override);
        }
        JsonNode m = body.get("model");
        if (m == null || m.isNull()) {
            throw new RequestException(ApiError.invalidRequest("'model' is required.", "model"));
        }
        if (!m.isTextual() || m.asText().isBlank()) {
            throw new RequestException(ApiError.invalidRequest("'model' must be a non-empty string.", "model"));
        }
        return alias.apply(m.asText());
    }

    /**
     * A fresh copy of {@code body} for one upstream attempt: the Hedgerow-only fields
     * ({@link ChatRequest#HEDGEROW_FIELDS}) removed and {@code model} set to the route's upstream model. Unknown
     * fields stay.
     */
    static ObjectNode upstreamBody(ObjectNode body, String upstreamModel) {
        ObjectNode copy = body.deepCopy();
        Iterator<String> it = copy.fieldNames();
        while (it.hasNext()) {
            if (ChatRequest.HEDGEROW_FIELDS.contains(it.next())) {
                it.remove();
            }
        }
        copy.put("model", upstreamModel);
        return copy;
    }

    /** The parameters of {@code known} that {@code body} sets (not null), in {@code known}'s order. */
    static Set<String> present(ObjectNode body, List<String> known) {
        Set<String> out = new LinkedHashSet<>();
        for (String p : known) {
            if (body.hasNonNull(p)) {
                out.add(p);
            }
        }
        return out;
    }

    /**
     * Checks every parameter this class knows; returns the number of choices asked for ({@code n}, 1 when unset). A
     * stream of several choices is served as OpenAI serves it (their chunks interleave, each carrying its index).
     */
    static int validate(ObjectNode body) {
        number(body, "temperature", 0, 2);
        number(body, "top_p", 0, 1);
        number(body, "presence_penalty", -2, 2);
        number(body, "frequency_penalty", -2, 2);
        number(body, "min_p", 0, 1);
        number(body, "repetition_penalty", 0, Double.MAX_VALUE);
        integer(body, "seed", Long.MIN_VALUE, Long.MAX_VALUE);
        integer(body, "top_k", -1, Integer.MAX_VALUE);
        integer(body, "top_logprobs", 0, 20);
        Long n = integer(body, "n", 1, MAX_CHOICES);
        bool(body, "logprobs");
        bool(body, "parallel_tool_calls");
        bool(body, "store");
        text(body, "user");
        text(body, "reasoning_effort");
        text(body, "service_tier");
        stop(body);
        logitBias(body);
        tools(body);
        functions(body);
        toolChoice(body);
        responseFormat(body);
        JsonNode md = present(body, "metadata");
        if (md != null && (!md.isObject() || !allText(md))) {
            throw wrong("metadata", "an object of string values");
        }
        JsonNode so = present(body, "stream_options");
        if (so != null && so.isObject()) {
            bool((ObjectNode) so, "include_usage", "stream_options.include_usage");
        }
        return n == null ? 1 : n.intValue();
    }

    private static JsonNode present(ObjectNode body, String field) {
        JsonNode v = body.get(field);
        return v == null || v.isNull() ? null : v;
    }

    private static void number(ObjectNode body, String field, double min, double max) {
        JsonNode v = present(body, field);
        if (v == null) {
            return;
        }
        if (!v.isNumber() || !Double.isFinite(v.doubleValue()) || v.doubleValue() < min || v.doubleValue() > max) {
            throw wrong(field, max == Double.MAX_VALUE ? "a number of at least " + fmt(min)
                    : "a number between " + fmt(min) + " and " + fmt(max));
        }
    }

    /**
     * The integer {@code field} holds, or null when it is absent or null; anything else (a fraction, a string, a
     * number outside {@code min..max}, inclusive) is refused with the range it must lie in: a bare "positive
     * integer" misleads for 2^31, which is one but does not fit.
     */
    static Long integer(ObjectNode body, String field, long min, long max) {
        JsonNode v = present(body, field);
        if (v == null) {
            return null;
        }
        if (!v.isIntegralNumber() || !v.canConvertToLong() || v.longValue() < min || v.longValue() > max) {
            throw wrong(field, "an integer from " + min + " to " + max);
        }
        return v.longValue();
    }

    private static void bool(ObjectNode body, String field) {
        bool(body, field, field);
    }

    private static void bool(ObjectNode body, String field, String param) {
        JsonNode v = present(body, field);
        if (v != null && !v.isBoolean()) {
            throw wrong(param, "a boolean");
        }
    }

    private static void text(ObjectNode body, String field) {
        JsonNode v = present(body, field);
        if (v != null && !v.isTextual()) {
            throw wrong(field, "a string");
        }
    }

    private static void stop(ObjectNode body) {
        JsonNode v = present(body, "stop");
        if (v == null || v.isTextual()) {
            return;
        }
        if (v.isArray() && allText(v)) {
            return;
        }
        throw wrong("stop", "a string or an array of strings");
    }

    /**
     * {@code tool_choice}: {@code none}, {@code auto} or {@code required}, or an object with a string {@code type}.
     * What no answer could honour is refused, as OpenAI refuses it and a lax provider would answer without a call:
     * {@code required} or a named function with no {@code tools}, or naming a function {@code tools} does not hold.
     * {@code none} and {@code auto} without tools ask for nothing and pass.
     */
    private static void toolChoice(ObjectNode body) {
        JsonNode tc = present(body, "tool_choice");
        if (tc == null) {
            return;
        }
        if (tc.isTextual() ? !TOOL_CHOICES.contains(tc.asText()) : !tc.path("type").isTextual()) {
            throw wrong("tool_choice", "'none', 'auto', 'required' or an object with a string 'type'");
        }
        JsonNode tools = present(body, "tools");
        boolean noTools = tools == null || tools.isEmpty();
        if (tc.isTextual() && tc.asText().equals("required") && noTools) {
            throw new RequestException(ApiError.invalidRequest("'tool_choice' is 'required' but the request has no "
                    + "'tools' to call.", "tool_choice"));
        }
        if (tc.isObject() && tc.get("type").asText().equals("function")) {
            JsonNode name = tc.path("function").path("name");
            if (!name.isTextual()) {
                throw wrong("tool_choice.function.name", "a string");
            }
            boolean declared = false;
            for (JsonNode t : noTools ? List.<JsonNode>of() : tools) {
                declared |= name.asText().equals(t.path("function").path("name").asText(null));
            }
            if (!declared) {
                throw new RequestException(ApiError.invalidRequest("'tool_choice' names the function '"
                        + name.asText() + "', which 'tools' does not declare.", "tool_choice"));
            }
        }
    }

    /**
     * The legacy spelling of tools, as {@link #tools} and {@link #toolChoice} judge the current one: {@code functions}
     * an array of objects each with a string {@code name}; {@code function_call} {@code none}, {@code auto} (which
     * ask for nothing and pass, as tool_choice's do) or {@code {"name": ...}} naming one of {@code functions}. A
     * forced call no answer could honour went upstream, and a lax provider answered it with plain text (found by
     * hunt23; hunt13 fixed tool_choice).
     */
    private static void functions(ObjectNode body) {
        arrayOfObjects(body, "functions");
        JsonNode functions = present(body, "functions");
        for (int i = 0; functions != null && i < functions.size(); i++) {
            if (!functions.get(i).path("name").isTextual()) {
                throw wrong("functions[" + i + "].name", "a string, the function's name");
            }
        }
        JsonNode fc = present(body, "function_call");
        if (fc == null) {
            return;
        }
        boolean keyword = fc.isTextual() && (fc.asText().equals("none") || fc.asText().equals("auto"));
        if (keyword) {
            return;   // asks for nothing, with or without functions (as tool_choice's none and auto)
        }
        if (!fc.path("name").isTextual()) {
            throw wrong("function_call", "'none', 'auto' or an object with a string 'name'");
        }
        boolean declared = false;
        for (JsonNode f : functions == null ? List.<JsonNode>of() : functions) {
            declared |= fc.get("name").asText().equals(f.path("name").asText(null));
        }
        if (!declared) {
            throw new RequestException(ApiError.invalidRequest("'function_call' names the function '"
                    + fc.get("name").asText() + "', which 'functions' does not declare.", "function_call"));
        }
    }

    /** {@code response_format}: {@code text}, {@code json_object}, or {@code json_schema} with its schema object. */
    private static void responseFormat(ObjectNode body) {
        JsonNode rf = present(body, "response_format");
        if (rf == null) {
            return;
        }
        JsonNode type = rf.path("type");
        if (!type.isTextual() || !RESPONSE_FORMATS.contains(type.asText())) {
            throw wrong("response_format", "an object whose 'type' is 'text', 'json_object' or 'json_schema'");
        }
        if (type.asText().equals("json_schema") && !(rf.path("json_schema").isObject()
                && rf.path("json_schema").path("name").isTextual())) {
            throw wrong("response_format.json_schema", "an object with a string 'name'");
        }
    }

    private static boolean allText(JsonNode node) {
        for (JsonNode v : node) {
            if (!v.isTextual()) {
                return false;
            }
        }
        return true;
    }

    private static void logitBias(ObjectNode body) {
        JsonNode v = present(body, "logit_bias");
        if (v == null) {
            return;
        }
        if (!v.isObject()) {
            throw wrong("logit_bias", "an object mapping token ids to numbers between -100 and 100");
        }
        Iterator<Map.Entry<String, JsonNode>> it = v.fields();
        while (it.hasNext()) {
            Map.Entry<String, JsonNode> e = it.next();
            JsonNode b = e.getValue();
            if (!b.isNumber() || b.doubleValue() < -100 || b.doubleValue() > 100) {
                throw wrong("logit_bias", "an object mapping token ids to numbers between -100 and 100 ('"
                        + e.getKey() + "' is not)");
            }
        }
    }

    private static void arrayOfObjects(ObjectNode body, String field) {
        arrayOfObjects(present(body, field), field);
    }

    /** {@code v} (null: absent) is an array of objects, else 400 naming {@code param} (a body field or a path). */
    static void arrayOfObjects(JsonNode v, String param) {
        if (v == null || v.isNull()) {
            return;
        }
        boolean ok = v.isArray();
        for (int i = 0; ok && i < v.size(); i++) {
            ok = v.get(i).isObject();
        }
        if (!ok) {
            throw wrong(param, "an array of objects");
        }
    }

    /**
     * {@code tools}: an array of objects, each function tool ({@code type} "function", or none) with a
     * {@code function} object holding a string {@code name}, as OpenAI requires: a tool without a name cannot be
     * called, and went upstream (found by hunt13). A tool of another type passes (a provider's own kind).
     */
    private static void tools(ObjectNode body) {
        arrayOfObjects(body, "tools");
        JsonNode tools = present(body, "tools");
        for (int i = 0; tools != null && i < tools.size(); i++) {
            JsonNode t = tools.get(i);
            JsonNode type = t.get("type");
            if (type != null && !type.isTextual()) {
                throw wrong("tools[" + i + "].type", "a string");
            }
            if ((type == null || type.asText().equals("function")) && !t.path("function").path("name").isTextual()) {
                throw wrong("tools[" + i + "].function.name", "a string, the function's name");
            }
        }
    }

    private static RequestException wrong(String param, String what) {
        return new RequestException(ApiError.invalidRequest("'" + param + "' must be " + what + ".", param));
    }

    private static String fmt(double d) {
        return d == Math.rint(d) ? Long.toString((long) d) : Double.toString(d);
    }
}
