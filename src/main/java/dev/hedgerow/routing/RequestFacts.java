package dev.hedgerow.routing;

import dev.hedgerow.api.ChatRequest;
import dev.hedgerow.api.EmbeddingsRequest;
import dev.hedgerow.api.ProviderPrefs;
import dev.hedgerow.catalog.Route;

import java.util.LinkedHashSet;
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
 * @param lastUserText  the last user message's text (semantic routing), or null
 * @param inputTokens   every token the route reads before it answers, which its latency is predicted by: the prompt's
 *                      ({@code promptTokens}) for a chat request, all the inputs' for an embeddings request
 */
public record RequestFacts(int promptTokens, Integer maxTokens, boolean stream, boolean reasoning, Set<String> needs,
                           Set<String> parameters, ProviderPrefs prefs, List<String> prefixHashes,
                           Map<String, String> headers, String lastUserText, int inputTokens) {

    /** A chat request's facts: the route reads its prompt ({@code inputTokens} is {@code promptTokens}). */
    public RequestFacts(int promptTokens, Integer maxTokens, boolean stream, boolean reasoning, Set<String> needs,
                        Set<String> parameters, ProviderPrefs prefs, List<String> prefixHashes,
                        Map<String, String> headers, String lastUserText) {
        this(promptTokens, maxTokens, stream, reasoning, needs, parameters, prefs, prefixHashes, headers,
                lastUserText, promptTokens);
    }

    /**
     * Whether {@code route}'s model thinks before its first visible token on this request: the request asks for
     * reasoning, or the route declares a model that reasons ({@code reasoning}, always; {@code reasoning_off}, unless
     * turned off) and the request does not turn reasoning off. Its first visible token is then predicted with its
     * thinking on top.
     */
    public boolean thinksOn(Route route) {
        if (reasoning) {
            return true;
        }
        return !needs.contains("reasoning_off")
                && (route.can("reasoning", stream) || route.can("reasoning_off", stream));
    }

    /**
     * The facts of a parsed chat request: the one place the gateway and the console's explain derive needs,
     * parameters, prompt size and prefix hashes, so an explanation routes exactly what the gateway would.
     *
     * @param headers the request's headers with lower-cased names, credentials removed (the gateway puts the client
     *                key's catalog name as {@code authorization})
     */
    public static RequestFacts of(ChatRequest chat, TokenCounter tokens, PrefixHasher prefixes,
                                  Map<String, String> headers) {
        return of(chat, tokens, prefixes, headers, true);
    }

    /**
     * @param hashPrefixes false skips the prefix hashing (a second tokenizer pass): only the auto strategy uses
     *                     prefix affinity
     */
    public static RequestFacts of(ChatRequest chat, TokenCounter tokens, PrefixHasher prefixes,
                                  Map<String, String> headers, boolean hashPrefixes) {
        Set<String> needs = new LinkedHashSet<>();
        if (chat.wantsTools()) {
            needs.add("tools");
        }
        if (chat.wantsJsonMode()) {
            needs.add("json_mode");
        }
        if (chat.hasImages()) {
            needs.add("images");
        }
        if (chat.wantsReasoningOff()) {
            needs.add("reasoning_off");
        }
        return new RequestFacts(tokens.countRequest(chat.body()), chat.maxTokens(), chat.stream(),
                chat.wantsReasoning(), needs, chat.parametersPresent(), chat.prefs(),
                hashPrefixes ? prefixes.hashRequest(chat.model(), chat.body()) : java.util.List.of(), headers,
                chat.lastUserText());
    }

    /**
     * The facts of a parsed embeddings request: no stream, no completion, no capability needs, no prefix affinity and
     * no text for the semantic strategy; its prompt is its longest input (each input is embedded on its own, so that
     * is what a route's context window must hold: a token-id input counts its length), its input every input's tokens
     * (a batch of a hundred takes longer than one, however long its longest), and its parameters are those
     * {@code provider.require_parameters} may demand ({@link EmbeddingsRequest#KNOWN_PARAMETERS}).
     *
     * @param headers the request's headers with lower-cased names, credentials removed (the gateway puts the client
     *                key's catalog name as {@code authorization})
     */
    public static RequestFacts of(EmbeddingsRequest req, TokenCounter tokens, Map<String, String> headers) {
        int longest = 0;
        long all = 0;
        for (int n : req.inputTokens(tokens.sharingOneBudget())) {
            longest = Math.max(longest, n);
            all += n;
        }
        return new RequestFacts(longest, null, false, false, Set.of(), req.parametersPresent(), req.prefs(),
                List.of(), headers, "", (int) Math.min(Integer.MAX_VALUE, all));
    }

    /** Tokens the context window must hold: prompt plus the requested (or a default) completion. */
    public long contextNeeded() {
        return (long) promptTokens + (maxTokens == null ? 0 : maxTokens);
    }
}
