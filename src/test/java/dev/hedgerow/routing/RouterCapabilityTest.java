package dev.hedgerow.routing;

import dev.hedgerow.api.ProviderPrefs;
import dev.hedgerow.catalog.Route;
import org.junit.jupiter.api.Test;

import java.util.List;
import java.util.Map;
import java.util.Set;

import static org.junit.jupiter.api.Assertions.assertEquals;

class RouterCapabilityTest {
    static final ProviderPrefs REQUIRE = new ProviderPrefs(List.of(), List.of(), List.of(), true, true, null, null,
            null);

    static Route route(Set<String> caps, Set<String> params, int context) {
        return new Route("r", "a", "p", "m", 1, 1, context, caps, params, Route.Price.FREE, null, null);
    }

    static RequestFacts facts(boolean stream, Set<String> needs, Set<String> params, ProviderPrefs prefs,
                              int promptTokens, Integer maxTokens) {
        return new RequestFacts(promptTokens, maxTokens, stream, false, needs, params, prefs, List.of(), Map.of(),
                "x");
    }

    @Test
    void transportSpecificToolsCountOnlyForTheirTransport() {
        Route r = route(Set.of("tools:stream"), Set.of(), 0);
        assertEquals(List.of(), Router.lacks(r, facts(true, Set.of("tools"), Set.of(), ProviderPrefs.NONE, 10, null)));
        assertEquals(List.of("tools (non-streaming)"),
                Router.lacks(r, facts(false, Set.of("tools"), Set.of(), ProviderPrefs.NONE, 10, null)));
    }

    @Test
    void jsonModeWithoutTransportSuffixServesBoth() {
        Route r = route(Set.of("json_mode"), Set.of(), 0);
        assertEquals(List.of(), Router.lacks(r, facts(true, Set.of("json_mode"), Set.of(), ProviderPrefs.NONE, 1, null)));
        assertEquals(List.of(), Router.lacks(r, facts(false, Set.of("json_mode"), Set.of(), ProviderPrefs.NONE, 1, null)));
    }

    @Test
    void imagesAndReasoningOffAreNamedWithoutTransport() {
        Route r = route(Set.of("tools"), Set.of(), 0);
        assertEquals(List.of("images", "reasoning_off"), Router.lacks(r,
                facts(true, new java.util.LinkedHashSet<>(List.of("images", "reasoning_off")), Set.of(),
                        ProviderPrefs.NONE, 1, null)));
    }

    @Test
    void demandedParametersMustAllBeHonouredOnlyWhenRequired() {
        Route r = route(Set.of(), Set.of("temperature"), 0);
        Set<String> carried = new java.util.LinkedHashSet<>(List.of("temperature", "seed", "max_tokens"));
        assertEquals(List.of("parameter seed"), Router.lacks(r, facts(true, Set.of(), carried, REQUIRE, 1, 10)));
        assertEquals(List.of(), Router.lacks(r, facts(true, Set.of(), carried, ProviderPrefs.NONE, 1, 10)));
    }

    @Test
    void theContextWindowMustHoldPromptPlusRequestedCompletion() {
        Route r = route(Set.of(), Set.of(), 4096);
        assertEquals(List.of(), Router.lacks(r, facts(true, Set.of(), Set.of(), ProviderPrefs.NONE, 3000, 1096)));
        assertEquals(List.of("context window (4097 tokens needed, 4096 available)"),
                Router.lacks(r, facts(true, Set.of(), Set.of(), ProviderPrefs.NONE, 3000, 1097)));
    }
}
