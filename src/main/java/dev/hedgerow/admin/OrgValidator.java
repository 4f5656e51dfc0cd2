package dev.hedgerow.admin;

import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.core.SerializableString;
import com.fasterxml.jackson.core.io.CharacterEscapes;
import com.fasterxml.jackson.core.json.JsonWriteFeature;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectWriter;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.JsonNodeFactory;
import com.fasterxml.jackson.databind.node.ObjectNode;
import com.fasterxml.jackson.databind.node.TextNode;
import dev.hedgerow.api.Json;
import dev.hedgerow.catalog.ApiKey;
import dev.hedgerow.catalog.CatalogError;
import dev.hedgerow.catalog.CatalogException;
import dev.hedgerow.catalog.CatalogLoader;
import dev.hedgerow.catalog.GroupSettings;
import dev.hedgerow.catalog.GroupYaml;
import dev.hedgerow.catalog.Org;
import dev.hedgerow.catalog.Provider;
import dev.hedgerow.catalog.ProviderUrls;
import dev.hedgerow.catalog.Route;

import java.util.ArrayList;
import java.util.Iterator;
import java.util.List;
import java.util.Map;

/**
 * Validates an edited org with exactly the rules that load {@code hedgerow.yaml}: the org is written back as a
 * one-org configuration document (JSON is YAML) and read by {@link CatalogLoader}, so an admin edit can never
 * store what the file loader would refuse, and every error carries the same path ({@code routes[2].weight}).
 * Keys are held only as hashes, so each is written as a distinct stand-in secret (keys are not editable here).
 * The loader's rules include those of pins and drains (the tags the admin API sets). Stateless; thread-safe.
 */
public final class OrgValidator {
    // the file's one environment switch that changes a rule: the metadata-URL opt-in (without it, an org loaded
    // with the opt-in could never be edited); nothing else is resolved, values are written literally
    private static final ObjectWriter ASCII = Json.MAPPER.writer().with(JsonWriteFeature.ESCAPE_NON_ASCII)
            .with(new CharacterEscapes() { // and DEL, which ESCAPE_NON_ASCII leaves raw
                private final int[] ascii = withDel();

                @Override
                public int[] getEscapeCodesForAscii() {
                    return ascii;
                }

                @Override
                public SerializableString getEscapeSequence(int ch) {
                    return null;
                }
            });
    private static final CatalogLoader LOADER = new CatalogLoader(name -> ProviderUrls.ALLOW_ENV.equals(name)
            ? System.getenv(name) : null);

    private OrgValidator() {
    }

    /**
     * Every problem of the org (empty = valid), paths relative to the org. The loader reads every value stripped of
     * the spaces around it (as a YAML scalar is read), so an alias an edit gave with spaces around it ({@code
     * "kimi3 "}, stored as given) is judged here: it made a second group beside {@code kimi3} that looked the same,
     * and that no group edit could reach (found by hunt13).
     */
    public static List<CatalogError> validate(Org org) {
        List<CatalogError> out = new ArrayList<>();
        for (int i = 0; i < org.routes().size(); i++) {
            String alias = org.routes().get(i).alias();
            if (!alias.equals(alias.strip())) {
                out.add(new CatalogError("routes[" + i + "].alias", CatalogLoader.invalidAlias(alias)));
            }
        }
        try {
            LOADER.parse(yaml(document(org)));
        } catch (CatalogException e) {
            out.addAll(relative(e));
        }
        return out;
    }

    /**
     * The settings of {@code alias}'s group once {@code edit} (the group's keys as {@code hedgerow.yaml} writes them,
     * see {@link GroupYaml#edited}) is applied to them, read by the file loader from the whole org as a document: the
     * loader's own rules judge every value, its unknown keys and its bearing on the rest of the org (a semantic
     * group's descriptions).
     *
     * @throws InvalidEdit with every problem, paths relative to the org ({@code groups.duo.breaker.max_fails})
     */
    public static GroupSettings editedGroup(Org org, String alias, ObjectNode edit) {
        ObjectNode doc = document(org);
        ObjectNode groups = (ObjectNode) doc.get("orgs").get(0).get("groups");
        groups.set(esc(alias), literal(GroupYaml.edited(GroupYaml.write(org.group(alias)), edit)));
        try {
            return LOADER.parse(yaml(doc)).orgs().get(0).group(alias);
        } catch (CatalogException e) {
            throw new InvalidEdit(relative(e), org.routes().stream().map(Route::id).toList(),
                    CatalogLoader.groupPath(alias));
        }
    }

    /**
     * The document as the loader reads it: JSON, which is YAML, with every character past ASCII written as an escape.
     * YAML refuses some characters JSON writes raw (DEL, the C1 controls) anywhere in its stream, so an edit holding
     * one was refused as "not valid YAML" naming no field; escaped, it reaches the loader's own judgement of the field
     * (found by hunt21).
     */
    private static String yaml(ObjectNode doc) {
        try {
            return ASCII.writeValueAsString(doc);
        } catch (JsonProcessingException e) {
            throw new IllegalStateException("a tree of plain nodes always serializes", e);
        }
    }

    private static int[] withDel() {
        int[] codes = CharacterEscapes.standardAsciiEscapesForJSON();
        codes[0x7F] = CharacterEscapes.ESCAPE_STANDARD;
        return codes;
    }

    private static List<CatalogError> relative(CatalogException e) {
        List<CatalogError> out = new ArrayList<>();
        for (CatalogError err : e.errors()) {
            String path = err.path().startsWith("orgs[0].") ? err.path().substring("orgs[0].".length())
                    : err.path().equals("orgs[0]") ? "" : err.path();
            out.add(new CatalogError(path, err.message()));
        }
        return out;
    }

    /** The org as a configuration document with one org. */
    static ObjectNode document(Org org) {
        ObjectNode root = JsonNodeFactory.instance.objectNode();
        ObjectNode o = root.putArray("orgs").addObject();
        o.put("id", esc(org.id()));
        keys(o.putArray("keys"), org.keys(), org.id() + "-client-");
        keys(o.putArray("admin_keys"), org.adminKeys(), org.id() + "-admin-");
        ArrayNode providers = o.putArray("providers");
        int c = 0;
        for (Provider p : org.providers()) {
            ObjectNode n = providers.addObject();
            n.put("id", esc(p.id()));
            n.put("base_url", esc(p.baseUrl()));
            if (p.apiKey() != null) {
                n.put("api_key", esc(p.apiKey()));
            }
            n.put("dialect", p.dialect().wireName());
            if (p.metricsUrl() != null) {
                n.put("metrics_url", esc(p.metricsUrl()));
            }
            if (p.capacityKeyHash() != null) {
                n.put("capacity_key", "hr-validate-" + org.id() + "-capacity-" + c++);
            }
        }
        ArrayNode routes = o.putArray("routes");
        for (Route r : org.routes()) {
            ObjectNode n = routes.addObject();
            n.put("id", esc(r.id()));
            n.put("alias", esc(r.alias()));
            n.put("provider", esc(r.provider()));
            n.put("model", esc(r.model()));
            n.put("weight", r.weight());
            n.put("priority", r.priority());
            n.put("context_window", r.contextWindow());
            r.capabilities().stream().sorted().forEach(n.putArray("capabilities")::add);
            r.parameters().stream().sorted().forEach(n.putArray("parameters")::add);
            n.putObject("price").put("prompt_per_mtok", r.price().promptPerMtok())
                    .put("completion_per_mtok", r.price().completionPerMtok());
            if (r.description() != null) {
                n.put("description", esc(r.description()));
            }
            ArrayNode tags = n.putArray("tags");
            r.tags().forEach(t -> tags.add(esc(t)));
            n.put("embeddings", r.embeddings());
        }
        ObjectNode groups = o.putObject("groups");
        org.groups().forEach((alias, g) -> groups.set(esc(alias), literal(GroupYaml.write(g))));
        ObjectNode routing = o.putObject("routing");
        if (org.routing().aliasHeader() != null) {
            routing.put("alias_header", esc(org.routing().aliasHeader()));
        }
        routing.put("path_alias", org.routing().pathAlias());
        if (!org.routing().names().isEmpty()) {
            ObjectNode names = routing.putObject("aliases");
            org.routing().namesByAlias().forEach((alias, list) -> {
                ArrayNode escaped = names.putArray(esc(alias));
                list.forEach(n -> escaped.add(esc(n)));
            });
        }
        o.putObject("hedge_budget").put("ratio", org.hedgeBudget().ratio())
                .put("min_per_window", org.hedgeBudget().minPerWindow())
                .put("window", GroupYaml.duration(org.hedgeBudget().window()));
        return root;
    }

    private static void keys(ArrayNode out, List<ApiKey> keys, String prefix) {
        for (int i = 0; i < keys.size(); i++) {
            out.addObject().put("name", esc(keys.get(i).name())).put("key", "hr-validate-" + prefix + i);
        }
    }

    /** Every string in the mapping made literal ({@link #esc}), nested ones included. */
    private static ObjectNode literal(ObjectNode n) {
        for (Iterator<Map.Entry<String, JsonNode>> it = n.fields(); it.hasNext(); ) {
            Map.Entry<String, JsonNode> e = it.next();
            if (e.getValue().isTextual()) {
                e.setValue(TextNode.valueOf(esc(e.getValue().asText())));
            } else if (e.getValue() instanceof ObjectNode o) {
                literal(o);
            } else if (e.getValue() instanceof ArrayNode a) {
                for (int i = 0; i < a.size(); i++) {
                    if (a.get(i).isTextual()) {
                        a.set(i, TextNode.valueOf(esc(a.get(i).asText())));
                    }
                }
            }
        }
        return n;
    }

    /** Values are never environment references: a literal {@code ${} is written {@code $${}. */
    private static String esc(String s) {
        return s == null ? null : s.replace("${", "$${");
    }
}
