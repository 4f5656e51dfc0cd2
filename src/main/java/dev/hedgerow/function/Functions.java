package dev.hedgerow.function;

import java.util.Locale;
import java.util.Set;

/** Which function edges this process serves: {@code HEDGEROW_FUNCTION=gateway|prober|console|all} (a list works). */
public record Functions(Set<String> enabled) {

    public static Functions parse(String value) {
        if (value == null || value.isBlank() || value.trim().equalsIgnoreCase("all")) {
            return new Functions(Set.of("gateway", "prober", "console"));
        }
        Set<String> out = new java.util.HashSet<>();
        for (String s : value.split(",")) {
            String f = s.trim().toLowerCase(Locale.ROOT);
            if (!Set.of("gateway", "prober", "console").contains(f)) {
                throw new IllegalArgumentException("HEDGEROW_FUNCTION: unknown function '" + f
                        + "' (gateway, prober, console or all)");
            }
            out.add(f);
        }
        return new Functions(Set.copyOf(out));
    }

    public boolean has(String function) {
        return enabled.contains(function);
    }

    /** The HTTP edges this process answers, for an unknown path's 404 (health and metrics answer everywhere). */
    public String edges() {
        java.util.List<String> out = new java.util.ArrayList<>();
        if (has("gateway")) {
            out.add("POST /v1/chat/completions, POST /v1/embeddings, GET /v1/models, GET /v1/models/{model}");
        }
        if (has("prober")) {
            out.add("POST /prober/run, POST /v1/capacity");
        }
        if (has("console")) {
            out.add("/admin/..., /console/");
        }
        return String.join(", ", out);
    }
}
