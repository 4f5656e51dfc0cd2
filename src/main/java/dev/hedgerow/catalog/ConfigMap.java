package dev.hedgerow.catalog;

import dev.hedgerow.catalog.YamlTree.ListNode;
import dev.hedgerow.catalog.YamlTree.MapNode;
import dev.hedgerow.catalog.YamlTree.Node;
import dev.hedgerow.catalog.YamlTree.Scalar;

import java.math.BigDecimal;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Collectors;

/**
 * Typed, path-aware reads of one YAML mapping. Every read that fails records a {@link CatalogError} at the
 * field's path and returns the default, so loading goes on and reports every problem in one pass. Unknown keys
 * are reported when the view is made. Not thread-safe (one per load).
 */
final class ConfigMap {
    private static final Pattern DURATION_PART = Pattern.compile("(\\d+(?:\\.\\d+)?)(ms|s|m|h)");
    private static final Pattern DECIMAL = Pattern.compile("[-+]?(\\d+(\\.\\d*)?|\\.\\d+)([eE][-+]?\\d{1,3})?");
    private static final Pattern SECONDS = Pattern.compile("\\d+(?:\\.\\d+)?");
    private static final Pattern WHOLE = Pattern.compile("\\d{1,18}");
    private static final String DURATION_HINT = "write e.g. 500ms, 30s, 2m, 1h, 1m30s or a number of seconds";

    private final MapNode node;
    private final String path;
    private final List<CatalogError> errors;

    private ConfigMap(MapNode node, String path, List<CatalogError> errors) {
        this.node = node;
        this.path = path;
        this.errors = errors;
    }

    /** The mapping at {@code path}, or null (with an error) when {@code node} is something else. */
    static ConfigMap of(Node node, String path, List<CatalogError> errors, Set<String> allowed) {
        return of(node, path, errors, allowed, Map.of());
    }

    /**
     * As {@link #of(Node, String, List, Set)}, where a key of {@code placed} is a setting that belongs elsewhere:
     * its unknown-field error says where (e.g. {@code goes under "breaker"}) instead of guessing a near name.
     */
    static ConfigMap of(Node node, String path, List<CatalogError> errors, Set<String> allowed,
                        Map<String, String> placed) {
        if (!(node instanceof MapNode m)) {
            errors.add(new CatalogError(path, "must be a mapping", node == null ? 0 : node.line()));
            return null;
        }
        for (String k : m.entries().keySet()) {
            if (!allowed.contains(k)) {
                String hint = closest(k, allowed);
                String where = placed.get(k);
                errors.add(new CatalogError(YamlTree.key(path, k), CatalogError.UNKNOWN_FIELD + (where != null
                        ? "; it goes under " + where : hint == null ? "" : "; did you mean \"" + hint + "\"?"),
                        m.keyLines().get(k)));
            }
        }
        return new ConfigMap(m, path, errors);
    }

    String path() {
        return path;
    }

    String path(String key) {
        return YamlTree.key(path, key);
    }

    int line(String key) {
        Integer l = node.keyLines().get(key);
        return l == null ? node.line() : l;
    }

    int line() {
        return node.line();
    }

    /** Present with a non-null value. */
    boolean has(String key) {
        Node n = node.entries().get(key);
        return n != null && !(n instanceof Scalar s && s.isNull());
    }

    Node node(String key) {
        return node.entries().get(key);
    }

    /** The value as written, for messages: {@code "text"}, or {@code [a, b]} for a list. */
    String shown(String key) {
        Node n = node(key);
        if (n instanceof ListNode l) {
            return l.items().stream().map(i -> i instanceof Scalar s ? s.text().strip() : "…")
                    .collect(Collectors.joining(", ", "[", "]"));
        }
        return n instanceof Scalar s ? "\"" + s.text().strip() + "\"" : "a mapping";
    }

    void error(String key, String message) {
        errors.add(new CatalogError(path(key), message, line(key)));
    }

    void error(String message) {
        errors.add(new CatalogError(path, message, line()));
    }

    private Scalar scalar(String key) {
        if (!has(key)) {
            return null;
        }
        if (node(key) instanceof Scalar s) {
            return s.kind() == Scalar.Kind.INVALID ? null : s;
        }
        error(key, "must be a single value, not a " + (node(key) instanceof ListNode ? "list" : "mapping"));
        return null;
    }

    /** The trimmed text, or null when absent, null or blank. */
    String string(String key) {
        Scalar s = scalar(key);
        if (s == null || s.text().isBlank()) {
            return null;
        }
        return s.text().strip();
    }

    String requiredString(String key) {
        String s = string(key);
        if (s == null && !(node(key) instanceof ListNode || node(key) instanceof MapNode
                || node(key) instanceof Scalar sc && sc.kind() == Scalar.Kind.INVALID)) {
            error(key, has(key) ? "must not be empty" : "required");
        }
        return s;
    }

    int integer(String key, int def, int min) {
        String s = string(key);
        if (s == null) {
            return def;
        }
        try {
            long v = Long.parseLong(s);
            if (v < min || v > Integer.MAX_VALUE) {
                // one over the bound was told it must be at least the minimum (hunt10)
                error(key, (v < min ? "must be ≥ " + min : "must be at most " + Integer.MAX_VALUE) + " (got " + s
                        + ")");
                return def;
            }
            return (int) v;
        } catch (NumberFormatException e) {
            error(key, "must be a whole number (got \"" + s + "\")");
            return def;
        }
    }

    /** A finite decimal number; range checks are the caller's. */
    double number(String key, double def) {
        String s = string(key);
        if (s == null) {
            return def;
        }
        try {
            // Double.parseDouble alone would also take "0x1p3", "1d" and "Infinity"
            if (!DECIMAL.matcher(s).matches()) {
                throw new NumberFormatException();
            }
            double v = Double.parseDouble(s);
            if (!Double.isFinite(v)) {
                // 1e400 overflows to Infinity: the stored catalog could not be read back, and the org went dark
                // (every key 401) while the file had been accepted (found by hunt19)
                error(key, "must be a finite number (got \"" + s + "\", beyond the largest a double holds)");
                return def;
            }
            return v;
        } catch (NumberFormatException e) {
            error(key, "must be a number (got \"" + s + "\")");
            return def;
        }
    }

    boolean bool(String key, boolean def) {
        Scalar s = scalar(key);
        if (s == null) {
            return def;
        }
        if (s.kind() == Scalar.Kind.TRUE || s.text().strip().equalsIgnoreCase("true")) {
            return true;
        }
        if (s.kind() == Scalar.Kind.FALSE || s.text().strip().equalsIgnoreCase("false")) {
            return false;
        }
        error(key, "must be true or false (got \"" + s.text() + "\")");
        return def;
    }

    /** A duration: {@code 500ms}, {@code 30s}, {@code 2m}, {@code 1h}, {@code 1m30s}, or a number of seconds. */
    Duration duration(String key, Duration def, boolean zeroAllowed) {
        String s = string(key);
        if (s == null) {
            return def;
        }
        Duration d = parseDuration(s);
        if (d == null) {
            error(key, "bad duration \"" + s + "\"; " + DURATION_HINT);
            return def;
        }
        if (d.isZero() && !zeroAllowed) {
            error(key, "must be longer than 0");
            return def;
        }
        return d;
    }

    /**
     * A duration that may be switched off: {@code off} (or {@code false}, which YAML 1.1 reads {@code off} as) and
     * {@code 0} are {@link Duration#ZERO}; anything else is read as {@link #duration}.
     */
    Duration durationOrOff(String key, Duration def) {
        Scalar sc = scalar(key);
        if (sc == null || sc.text().isBlank()) {
            return def;
        }
        String s = sc.text().strip();
        if (sc.kind() == Scalar.Kind.FALSE || s.equalsIgnoreCase("off") || s.equalsIgnoreCase("false")) {
            return Duration.ZERO;
        }
        Duration d = parseDuration(s);
        if (d == null) {
            error(key, "bad duration \"" + s + "\"; " + DURATION_HINT + ", or off (or 0) to turn it off");
            return def;
        }
        return d;
    }

    /**
     * A duration that must carry its unit ({@code 3s}, {@code 3000ms}), or {@code off} (or {@code false}, or
     * {@code 0}) for {@link Duration#ZERO}. A bare number is refused: it sits beside Kong's timeouts, whose bare
     * numbers are milliseconds, while Hedgerow's other durations read one as seconds, so {@code 3000} could mean
     * either 3 s or 50 min.
     */
    Duration durationWithUnitOrOff(String key, Duration def) {
        Scalar sc = scalar(key);
        if (sc == null || sc.text().isBlank()) {
            return def;
        }
        String s = sc.text().strip();
        if (sc.kind() == Scalar.Kind.FALSE || s.equalsIgnoreCase("off") || s.equalsIgnoreCase("false")
                || s.equals("0")) {
            return Duration.ZERO;
        }
        if (SECONDS.matcher(s).matches()) {
            error(key, "give a unit (e.g. 3s or 3000ms): a bare number would be seconds here but milliseconds in "
                    + "Kong's timeouts; or off");
            return def;
        }
        Duration d = parseDuration(s);
        if (d == null || d.isZero()) {
            error(key, "bad duration \"" + s + "\"; write e.g. 500ms, 3s, 2m, or off");
            return def;
        }
        return d;
    }

    /**
     * One of Kong's timeouts ({@code connect_timeout}, {@code read_timeout}, {@code write_timeout},
     * {@code fail_timeout}): a bare whole number is milliseconds, as Kong's schema has them ({@code 60000} is a
     * minute), so a Kong configuration ports unchanged; anything else is a duration with its unit.
     */
    Duration timeout(String key, Duration def) {
        String s = string(key);
        if (s == null) {
            return def;
        }
        Duration d = parseTimeout(s);
        if (d == null) {
            error(key, "bad timeout \"" + s + "\"; a bare number is milliseconds, as in Kong (60000 is a minute), "
                    + "so write a whole number of milliseconds or a duration with its unit, e.g. 500ms, 30s, 2m");
            return def;
        }
        if (d.isZero()) {
            error(key, "must be longer than 0");
            return def;
        }
        return d;
    }

    /**
     * As {@link #timeout}: null when the text is neither a whole number of milliseconds nor a duration with its
     * unit. A bare fraction ({@code 0.5}) is refused: Kong's timeouts are whole milliseconds, and Hedgerow's other
     * durations read it as seconds, so it has no meaning here that a reader could rely on.
     */
    static Duration parseTimeout(String s) {
        String t = s.strip();
        if (WHOLE.matcher(t).matches()) {
            return Duration.ofMillis(Long.parseLong(t));
        }
        return SECONDS.matcher(t).matches() ? null : parseDuration(t);
    }

    /** Null when the text is not a duration (negative ones included). */
    static Duration parseDuration(String s) {
        String t = s.strip();
        if (SECONDS.matcher(t).matches()) {
            return nanos(new BigDecimal(t), 1_000_000_000L);
        }
        Matcher m = DURATION_PART.matcher(t);
        Duration total = Duration.ZERO;
        int at = 0;
        while (at < t.length() && m.find(at) && m.start() == at) {
            long unit = switch (m.group(2)) {
                case "ms" -> 1_000_000L;
                case "s" -> 1_000_000_000L;
                case "m" -> 60_000_000_000L;
                default -> 3_600_000_000_000L;
            };
            Duration part = nanos(new BigDecimal(m.group(1)), unit);
            if (part == null) {
                return null;
            }
            total = total.plus(part);
            at = m.end();
        }
        return at == t.length() && at > 0 ? total : null;
    }

    private static Duration nanos(BigDecimal amount, long nanosPerUnit) {
        try {
            return Duration.ofNanos(amount.multiply(BigDecimal.valueOf(nanosPerUnit)).setScale(0,
                    java.math.RoundingMode.HALF_UP).longValueExact());
        } catch (ArithmeticException e) {
            return null;
        }
    }

    /** The list's items (empty when absent); an error when the value is not a list. */
    List<Node> list(String key) {
        if (!has(key)) {
            return List.of();
        }
        if (node(key) instanceof ListNode l) {
            return l.items();
        }
        error(key, "must be a list");
        return List.of();
    }

    /** A list of non-blank single values, reported item by item. */
    List<String> strings(String key) {
        List<String> out = new ArrayList<>();
        List<Node> items = list(key);
        for (int i = 0; i < items.size(); i++) {
            String p = YamlTree.index(path(key), i);
            if (items.get(i) instanceof Scalar s && !s.isNull() && !s.text().isBlank()) {
                out.add(s.text().strip());
            } else {
                errors.add(new CatalogError(p, "must be a non-empty single value", items.get(i).line()));
            }
        }
        return out;
    }

    /** The nested mapping, or null when absent (or not a mapping, with an error). */
    ConfigMap map(String key, Set<String> allowed) {
        if (!has(key)) {
            return null;
        }
        return of(node(key), path(key), errors, allowed);
    }

    /** The allowed key nearest to a typo (edit distance ≤ 2), or null. */
    private static String closest(String key, Set<String> allowed) {
        return allowed.stream()
                .filter(a -> editDistance(key, a) <= 2)
                .min(Comparator.comparingInt((String a) -> editDistance(key, a)).thenComparing(a -> a))
                .orElse(null);
    }

    /** Levenshtein distance. */
    private static int editDistance(String a, String b) {
        int[] prev = new int[b.length() + 1];
        int[] cur = new int[b.length() + 1];
        for (int j = 0; j <= b.length(); j++) {
            prev[j] = j;
        }
        for (int i = 1; i <= a.length(); i++) {
            cur[0] = i;
            for (int j = 1; j <= b.length(); j++) {
                int cost = a.charAt(i - 1) == b.charAt(j - 1) ? 0 : 1;
                cur[j] = Math.min(Math.min(cur[j - 1] + 1, prev[j] + 1), prev[j - 1] + cost);
            }
            int[] t = prev;
            prev = cur;
            cur = t;
        }
        return prev[b.length()];
    }
}
