package dev.hedgerow.function.console;

import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * The methods each admin API path answers, for the {@code Allow} header of its 405 (RFC 9110 asks a 405 for one;
 * Quarkus REST's own refusal names none) and of its answer to OPTIONS (with OPTIONS added to both: {@link AdminGuard}
 * answers it). A path that answers GET answers HEAD too (Quarkus REST serves HEAD from the GET method). Listed here rather than read from {@link AdminResource}'s annotations at run time, which a native
 * image would need reflection for; {@code AdminMethodsTest} keeps the list equal to the annotations. Immutable.
 */
final class AdminMethods {
    /** By path template under {@code /admin}, as {@link AdminResource} declares it: the methods it answers. */
    static final Map<String, List<String>> BY_TEMPLATE = byTemplate();

    private static final Pattern PARAM = Pattern.compile("\\{\\s*\\w+\\s*(?::\\s*([^}]+))?}");

    /** Each template as a pattern of the request path (with {@code /admin}), in declaration order. */
    private static final Map<Pattern, List<String>> BY_PATH = byPath();

    private AdminMethods() {
    }

    private static Map<String, List<String>> byTemplate() {
        Map<String, List<String>> m = new LinkedHashMap<>();
        m.put("/whoami", List.of("GET"));
        m.put("/groups", List.of("GET"));
        m.put("/groups/{alias: .+}", List.of("GET", "PUT"));
        m.put("/members/pin", List.of("POST"));
        m.put("/members/unpin", List.of("POST"));
        m.put("/members/drain", List.of("POST"));
        m.put("/routes/standing", List.of("PUT"));
        m.put("/routes/verification", List.of("PUT"));
        m.put("/routes/alias", List.of("PUT"));
        m.put("/routes/reset", List.of("POST"));
        m.put("/health", List.of("GET"));
        m.put("/audit", List.of("GET"));
        m.put("/usage", List.of("GET"));
        m.put("/explain", List.of("POST"));
        return Collections.unmodifiableMap(m);
    }

    private static Map<Pattern, List<String>> byPath() {
        Map<Pattern, List<String>> m = new LinkedHashMap<>();
        BY_TEMPLATE.forEach((template, methods) -> m.put(pattern("/admin" + template), methods));
        return Collections.unmodifiableMap(m);
    }

    /** A JAX-RS path template as a pattern: {@code {name}} is one segment, {@code {name: regex}} its regex. */
    static Pattern pattern(String template) {
        StringBuilder regex = new StringBuilder();
        Matcher param = PARAM.matcher(template);
        int last = 0;
        while (param.find()) {
            regex.append(Pattern.quote(template.substring(last, param.start())));
            regex.append('(').append(param.group(1) == null ? "[^/]+" : param.group(1).trim()).append(')');
            last = param.end();
        }
        regex.append(Pattern.quote(template.substring(last)));
        return Pattern.compile(regex.toString());
    }

    /**
     * The {@code Allow} value of a request path under {@code /admin} (e.g. {@code GET, HEAD, PUT}), or empty for a
     * path the admin API does not serve.
     */
    static Optional<String> allow(String path) {
        for (Map.Entry<Pattern, List<String>> e : BY_PATH.entrySet()) {
            if (e.getKey().matcher(path).matches()) {
                List<String> methods = e.getValue();
                StringBuilder allow = new StringBuilder();
                for (String m : methods) {
                    allow.append(allow.isEmpty() ? "" : ", ").append(m);
                    if (m.equals("GET")) {
                        allow.append(", HEAD");
                    }
                }
                return Optional.of(allow.toString());
            }
        }
        return Optional.empty();
    }
}
