package dev.hedgerow.catalog;

import com.fasterxml.jackson.core.JsonParser;
import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.core.JsonToken;
import com.fasterxml.jackson.core.StreamReadFeature;
import com.fasterxml.jackson.dataformat.yaml.YAMLFactory;
import com.fasterxml.jackson.dataformat.yaml.YAMLParser;
import org.yaml.snakeyaml.error.Mark;
import org.yaml.snakeyaml.error.MarkedYAMLException;

import java.io.IOException;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.function.Function;
import java.util.regex.Pattern;

/**
 * A YAML document as a small tree that keeps each scalar's source text and line, built from Jackson's YAML token
 * stream. Jackson's own tree would turn {@code 0123} into 83 and forget lines; here every scalar stays text until
 * the schema says what it is. String scalars have {@code ${...}} substituted as they are read, so an unset
 * variable is reported at its path. Thread-safe (immutable factory, no shared state).
 */
final class YamlTree {
    private static final YAMLFactory FACTORY = YAMLFactory.builder()
            .disable(StreamReadFeature.INCLUDE_SOURCE_IN_LOCATION) // error messages must not echo secrets
            .build();
    private static final Pattern PLAIN_KEY = Pattern.compile("[A-Za-z_][A-Za-z0-9_-]*");

    private YamlTree() {
    }

    sealed interface Node permits MapNode, ListNode, Scalar {
        int line();
    }

    /** A mapping; {@code keyLines} gives the line of each key. */
    record MapNode(Map<String, Node> entries, Map<String, Integer> keyLines, int line) implements Node {
    }

    record ListNode(List<Node> items, int line) implements Node {
    }

    /** A scalar's text after substitution; {@code kind} is what YAML's own resolution made of it. */
    record Scalar(String text, Kind kind, int line) implements Node {
        /** INVALID: a node already reported as an error, so reading it adds no second one. */
        enum Kind { STRING, NUMBER, TRUE, FALSE, NULL, INVALID }

        boolean isNull() {
            return kind == Kind.NULL;
        }
    }

    /** {@code parent.key}, or {@code parent["odd key"]} when the key is not a plain name. */
    static String key(String parent, String key) {
        if (!PLAIN_KEY.matcher(key).matches()) {
            return parent + "[\"" + key.replace("\\", "\\\\").replace("\"", "\\\"") + "\"]";
        }
        return parent.isEmpty() ? key : parent + "." + key;
    }

    static String index(String parent, int i) {
        return parent + "[" + i + "]";
    }

    /** Parses one YAML document; returns null for an empty one. Problems are added to {@code errors}. */
    static Node parse(String text, Function<String, String> env, List<CatalogError> errors) {
        try (JsonParser p = FACTORY.createParser(text)) {
            JsonToken t = p.nextToken();
            if (t == null) {
                return null;
            }
            Node root = read(p, t, "", env, errors);
            if (p.nextToken() != null) {
                errors.add(new CatalogError("", "only one YAML document is allowed",
                        p.currentTokenLocation().getLineNr()));
            }
            return root;
        } catch (IOException | RuntimeException e) {
            errors.add(syntaxError(e));
            return null;
        }
    }

    /**
     * A syntax error in words that never quote the file: SnakeYAML's own message (which Jackson passes on) ends with
     * the offending line's text, a provider's key perhaps, so only its context, problem and position are kept.
     */
    private static CatalogError syntaxError(Exception e) {
        for (Throwable c = e; c != null; c = c.getCause()) {
            if (c instanceof MarkedYAMLException m) {
                String what = m.getContext() != null ? m.getContext() + ": " + m.getProblem() : m.getProblem();
                Mark at = m.getProblemMark() != null ? m.getProblemMark() : m.getContextMark();
                return new CatalogError("", "not valid YAML: " + String.valueOf(what).strip()
                        + (at != null ? " (line " + (at.getLine() + 1) + ", column " + (at.getColumn() + 1) + ")" : ""),
                        at != null ? at.getLine() + 1 : 0);
            }
        }
        int line = e instanceof JsonProcessingException jpe && jpe.getLocation() != null
                ? Math.max(jpe.getLocation().getLineNr(), 0) : 0;
        // Jackson's own messages carry no source (INCLUDE_SOURCE_IN_LOCATION is off), nor SnakeYAML's unmarked ones
        String msg = e instanceof JsonProcessingException jpe ? jpe.getOriginalMessage() : e.getMessage();
        return new CatalogError("", "not valid YAML: " + String.valueOf(msg).strip(), line);
    }

    private static Node read(JsonParser p, JsonToken t, String path, Function<String, String> env,
                             List<CatalogError> errors) throws IOException {
        int line = p.currentTokenLocation().getLineNr();
        if (t == null) {
            errors.add(new CatalogError(path, "unexpected end of document", line));
            return new Scalar("", Scalar.Kind.NULL, line);
        }
        if (p instanceof YAMLParser yp && yp.isCurrentAlias()) {
            errors.add(new CatalogError(path, "YAML aliases (*" + p.getText() + ") are not supported; "
                    + "repeat the value", line));
            return new Scalar("", Scalar.Kind.INVALID, line);
        }
        switch (t) {
            case START_OBJECT -> {
                Map<String, Node> entries = new LinkedHashMap<>();
                Map<String, Integer> keyLines = new LinkedHashMap<>();
                while (p.nextToken() == JsonToken.FIELD_NAME) {
                    String name = p.currentName();
                    int keyLine = p.currentTokenLocation().getLineNr();
                    String childPath = key(path, name);
                    Node child = read(p, p.nextToken(), childPath, env, errors);
                    if (entries.containsKey(name)) {
                        errors.add(new CatalogError(childPath, "duplicate key (first on line "
                                + keyLines.get(name) + ")", keyLine));
                    } else {
                        entries.put(name, child);
                        keyLines.put(name, keyLine);
                    }
                }
                return new MapNode(entries, keyLines, line);
            }
            case START_ARRAY -> {
                List<Node> items = new ArrayList<>();
                JsonToken i;
                while ((i = p.nextToken()) != JsonToken.END_ARRAY) {
                    items.add(read(p, i, index(path, items.size()), env, errors));
                }
                return new ListNode(items, line);
            }
            case VALUE_STRING -> {
                EnvSubstitution.Result r = EnvSubstitution.apply(p.getText(), env);
                r.problems().forEach(m -> errors.add(new CatalogError(path, m, line)));
                return new Scalar(r.text(), Scalar.Kind.STRING, line);
            }
            case VALUE_NUMBER_INT, VALUE_NUMBER_FLOAT -> {
                return new Scalar(p.getText(), Scalar.Kind.NUMBER, line);
            }
            case VALUE_TRUE, VALUE_FALSE -> {
                // keep the source text ("yes" stays "yes" for a string field); the kind carries the truth value
                return new Scalar(p.getText(), t == JsonToken.VALUE_TRUE ? Scalar.Kind.TRUE : Scalar.Kind.FALSE,
                        line);
            }
            case VALUE_NULL -> {
                return new Scalar("", Scalar.Kind.NULL, line);
            }
            default -> {
                errors.add(new CatalogError(path, "unsupported YAML content (" + t + ")", line));
                return new Scalar("", Scalar.Kind.INVALID, line);
            }
        }
    }
}
