package dev.hedgerow.catalog;

import org.junit.jupiter.api.Test;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * README's configuration examples are what a new user copies first: they load as written, and the values the
 * full example gives (its comments call them the defaults) are the loader's defaults.
 */
class ReadmeExamplesTest {
    private static final Map<String, String> ENV = Map.of("ACME_KEY", "acme-client-secret",
            "ACME_ADMIN_KEY", "acme-admin-secret", "FIREWORKS_API_KEY", "fw-upstream-secret");

    /** The README's ```yaml blocks, in order. */
    static List<String> yamlBlocks() throws IOException {
        List<String> blocks = new ArrayList<>();
        StringBuilder block = null;
        for (String line : Files.readAllLines(Path.of("README.md"))) {
            if (block == null && line.equals("```yaml")) {
                block = new StringBuilder();
            } else if (block != null && line.equals("```")) {
                blocks.add(block.toString());
                block = null;
            } else if (block != null) {
                block.append(line).append('\n');
            }
        }
        return blocks;
    }

    static Org load(String yaml) {
        return new CatalogLoader(ENV::get).parse(yaml).orgs().get(0);
    }

    /** It named an embeddings_route no route had, so the file failed to load. */
    @Test
    void theFullExampleLoadsWithEachGroupSettingAtItsDefault() throws IOException {
        Org acme = load(yamlBlocks().get(0));
        GroupSettings d = GroupSettings.defaults();
        GroupSettings.Balancer db = d.balancer();
        GroupSettings expected = new GroupSettings(d.strategy(), d.resumeMidStream(), d.hedging(), d.breaker(),
                d.retry(), d.timeouts(), new GroupSettings.Balancer(db.hashOnHeader(), db.latencyStrategy(),
                db.tokensCountStrategy(), db.usageWindow(), "embed", db.distanceMetric(), db.threshold(),
                db.slowBar(), null), d.slo(), d.headHold());
        assertEquals(expected, acme.group("kimi3"));
        assertEquals(HedgeBudget.defaults(), acme.hedgeBudget());
        Route chat = acme.routes().get(0);
        assertEquals(List.of(CatalogLoader.DEFAULT_WEIGHT, CatalogLoader.DEFAULT_PRIORITY,
                CatalogLoader.DEFAULT_CONTEXT_WINDOW), List.of(chat.weight(), chat.priority(), chat.contextWindow()));
        assertTrue(acme.routes().stream().anyMatch(r -> r.id().equals("embed") && r.embeddings()));
    }

    @Test
    void kongsBalancerExampleLoadsInPlaceOfTheFullExamplesGroups() throws IOException {
        List<String> blocks = yamlBlocks();
        String full = blocks.get(0);
        String kong = full.substring(0, full.indexOf("    groups:\n")) + blocks.get(1);
        GroupSettings g = load(kong).group("kimi3");
        assertEquals(Strategy.CONSISTENT_HASHING, g.strategy());
        assertEquals(new GroupSettings.Breaker(3, Duration.ofSeconds(10)), g.breaker());
        assertEquals(4, g.retry().maxAttempts());
        assertEquals(Duration.ofMinutes(1), g.timeouts().connect());
        assertEquals("X-Session", g.balancer().hashOnHeader());
    }

    @Test
    void theRequestTimeoutExampleLoadsInPlaceOfTheFullExamplesGroups() throws IOException {
        String full = yamlBlocks().get(0);
        String example = yamlBlocks().stream().filter(b -> b.contains("request_timeout: 3s")).findFirst()
                .orElseThrow();
        GroupSettings g = load(full.substring(0, full.indexOf("    groups:\n")) + "    groups:\n" + example)
                .group("kimi3");
        assertEquals(Duration.ofSeconds(3), g.timeouts().request());
        assertEquals(List.of(Duration.ofSeconds(1), Duration.ofSeconds(1), Duration.ofSeconds(1)),
                List.of(g.timeouts().connect(), g.timeouts().read(), g.timeouts().write()));
    }

    @Test
    void theJudgedAccuracyExampleLoadsWithKongsDefaults() throws IOException {
        String example = yamlBlocks().stream().filter(b -> b.contains("tokens_count_strategy: llm-accuracy"))
                .findFirst().orElseThrow();
        GroupSettings g = load(example).group("kimi3");
        assertEquals(Strategy.LOWEST_USAGE, g.strategy());
        assertEquals(GroupSettings.TokensCountStrategy.LLM_ACCURACY, g.balancer().tokensCountStrategy());
        GroupSettings.Judge j = g.balancer().judge();
        GroupSettings.Judge d = GroupSettings.Judge.defaults("grader");
        assertEquals(new GroupSettings.Judge("grader", j.prompt(), d.samplingRate(), d.messageCountback(),
                d.ignoreSystemPrompts(), d.ignoreAssistantPrompts(), d.ignoreToolPrompts(), d.maxTokens(),
                d.timeout()), j, "every other value the example gives is the default");
    }
}
