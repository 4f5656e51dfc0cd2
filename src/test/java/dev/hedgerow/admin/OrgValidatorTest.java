package dev.hedgerow.admin;

import dev.hedgerow.catalog.CatalogError;
import dev.hedgerow.catalog.CatalogLoader;
import dev.hedgerow.catalog.GroupSettings;
import dev.hedgerow.catalog.GroupYaml;
import dev.hedgerow.catalog.HedgeBudget;
import dev.hedgerow.catalog.Org;
import dev.hedgerow.catalog.Provider;
import dev.hedgerow.catalog.Route;
import dev.hedgerow.catalog.Strategy;
import org.junit.jupiter.api.Test;

import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** Admin edits are validated with the file loader's own rules, paths relative to the org. */
class OrgValidatorTest {

    static List<Org> demo() {
        return new CatalogLoader(name -> name.startsWith("SIM_") ? "http://127.0.0.1:9/v1" : null)
                .loadResource(CatalogLoader.DEMO_RESOURCE).orgs();
    }

    @Test
    void everyOrgTheLoaderAcceptsIsValid() {
        for (Org o : demo()) {
            assertEquals(List.of(), OrgValidator.validate(o));
        }
        for (Org o : new CatalogLoader(name -> "secret-" + name).load(Path.of("src/test/resources/catalog/valid-full.yaml"))
                .orgs()) {
            assertEquals(List.of(), OrgValidator.validate(o), o.id());
        }
    }

    @Test
    void refusesEveryWeightOfAnAliasAtZeroWithItsPath() {
        Org o = demo().get(0);
        List<Route> routes = new ArrayList<>();
        for (Route r : o.routes()) {
            routes.add(r.alias().equals("kimi3") ? withWeight(r, 0) : r);
        }
        List<CatalogError> errors = OrgValidator.validate(copy(o, routes, o.groups()));
        assertEquals(1, errors.size(), errors.toString());
        assertEquals("routes[0].weight", errors.get(0).path());
        assertTrue(errors.get(0).message().contains("weight 0"), errors.get(0).message());
    }

    @Test
    void refusesTheSemanticStrategyWithoutAnEmbeddingsRoute() {
        Org o = demo().get(0);
        Map<String, GroupSettings> groups = new HashMap<>(o.groups());
        groups.put("kimi3", o.group("kimi3").withStrategy(Strategy.SEMANTIC));
        List<CatalogError> errors = OrgValidator.validate(copy(o, o.routes(), groups));
        assertTrue(errors.stream().anyMatch(e -> e.path().equals("groups.kimi3.embeddings_route")), errors.toString());
    }

    @Test
    void refusesAProviderUrlAtACloudMetadataAddressLikeTheFile() {
        Org o = demo().get(0);
        List<Provider> providers = new ArrayList<>(o.providers());
        Provider p = providers.get(0);
        providers.set(0, new Provider(p.id(), "http://169.254.169.254/latest", p.apiKey(), p.dialect(),
                p.metricsUrl(), p.capacityKeyHash()));
        Org edited = new Org(o.id(), o.keys(), o.adminKeys(), providers, o.routes(), o.groups(), o.routing(), o.hedgeBudget());
        List<CatalogError> errors = OrgValidator.validate(edited);
        assertEquals(1, errors.size(), errors.toString());
        assertEquals("providers[0].base_url", errors.get(0).path());
        assertTrue(errors.get(0).message().contains("metadata"), errors.get(0).message());
    }

    @Test
    void refusesTwoPinsInOneAlias() {
        Org o = demo().get(0);
        List<Route> routes = new ArrayList<>();
        for (Route r : o.routes()) {
            routes.add(r.alias().equals("kimi3") ? tagged(r, Route.PINNED) : r);
        }
        List<CatalogError> errors = OrgValidator.validate(copy(o, routes, o.groups()));
        assertTrue(errors.stream().anyMatch(e -> e.message().contains("more than one pinned")), errors.toString());
    }

    @Test
    void refusesDrainingEveryMember() {
        Org o = demo().get(0);
        List<Route> routes = o.routes().stream().map(r -> r.alias().equals("fast") ? tagged(r, Route.DRAINED) : r)
                .toList();
        List<CatalogError> errors = OrgValidator.validate(copy(o, routes, o.groups()));
        assertTrue(errors.stream().anyMatch(e -> e.message().contains("every member of alias \"fast\" is drained")),
                errors.toString());
    }

    @Test
    void theDocumentCarriesTheHedgeBudget() {
        Org o = demo().get(0);
        Org budgeted = new Org(o.id(), o.keys(), o.adminKeys(), o.providers(), o.routes(), o.groups(), o.routing(),
                new HedgeBudget(0.02, 0, Duration.ofSeconds(90)));
        Org back = new CatalogLoader(name -> null).parse(OrgValidator.document(budgeted).toString()).orgs().get(0);
        assertEquals(budgeted.hedgeBudget(), back.hedgeBudget());
    }

    @Test
    void theDocumentCarriesEveryGroupSetting() {
        // what is validated is what is stored: a group setting the document left out would be judged at its default
        for (Org o : new CatalogLoader(name -> "secret-" + name).load(Path.of("src/test/resources/catalog/valid-full.yaml"))
                .orgs()) {
            Org back = new CatalogLoader(name -> null).parse(OrgValidator.document(o).toString()).orgs().get(0);
            assertEquals(o.groups(), back.groups(), o.id());
        }
    }

    @Test
    void theDocumentCarriesTheRoutingRules() {
        // an edit is judged with the org's other names for its aliases, so a name can never come to shadow an alias
        for (Org o : new CatalogLoader(name -> "secret-" + name).load(Path.of("src/test/resources/catalog/valid-full.yaml"))
                .orgs()) {
            Org back = new CatalogLoader(name -> null).parse(OrgValidator.document(o).toString()).orgs().get(0);
            assertEquals(o.routing(), back.routing(), o.id());
        }
    }

    @Test
    void writesDurationsTheLoaderReadsBack() {
        assertEquals("1500ms", GroupYaml.duration(Duration.ofMillis(1500)));
        assertEquals("0.25ms", GroupYaml.duration(Duration.ofNanos(250_000)));
        assertEquals("45s", GroupYaml.duration(Duration.ofSeconds(45)));
        assertEquals("90s", GroupYaml.duration(Duration.ofSeconds(90)));
        assertEquals("10m", GroupYaml.duration(Duration.ofMinutes(10)));
        assertEquals("2h", GroupYaml.duration(Duration.ofHours(2)));
        assertEquals("0s", GroupYaml.duration(Duration.ZERO));
    }

    static Org copy(Org o, List<Route> routes, Map<String, GroupSettings> groups) {
        return new Org(o.id(), o.keys(), o.adminKeys(), o.providers(), routes, groups, o.routing(), o.hedgeBudget());
    }

    static Route withWeight(Route r, int w) {
        return new Route(r.id(), r.alias(), r.provider(), r.model(), w, r.priority(), r.contextWindow(),
                r.capabilities(), r.parameters(), r.price(), r.description(), r.tags(), r.embeddings());
    }

    static Route tagged(Route r, String tag) {
        List<String> tags = new ArrayList<>(r.tags());
        tags.add(tag);
        return new Route(r.id(), r.alias(), r.provider(), r.model(), r.weight(), r.priority(), r.contextWindow(),
                r.capabilities(), r.parameters(), r.price(), r.description(), tags, r.embeddings());
    }
}
