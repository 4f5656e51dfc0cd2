package dev.hedgerow.routing;

import dev.hedgerow.api.ProviderPrefs;

import java.util.List;
import java.util.Map;
import java.util.Set;

/**
 * What routing needs to know about one request, computed once at the edge of the core.
 *
 * @param needs         capabilities the request needs in its transport (tools, json_mode, images, reasoning_off)
 * @param parameters    known parameters the request carries (checked only when {@code prefs.requireParameters})
 * @param prefixHashes  chained hashes of the prompt's leading token blocks (prefix-cache affinity)
 * @param headers       request headers, lower-cased names (consistent hashing, routing rules)
 */
public record RequestFacts(int promptTokens, Integer maxTokens, boolean stream, boolean reasoning, Set<String> needs,
                           Set<String> parameters, ProviderPrefs prefs, List<String> prefixHashes,
                           Map<String, String> headers, String promptText, String lastUserText) {

    /** Tokens the context window must hold: prompt plus the requested (or a default) completion. */
    public long contextNeeded() {
        return (long) promptTokens + (maxTokens == null ? 0 : maxTokens);
    }
}
