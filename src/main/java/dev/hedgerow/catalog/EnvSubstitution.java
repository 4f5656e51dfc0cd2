package dev.hedgerow.catalog;

import java.util.ArrayList;
import java.util.List;
import java.util.function.Function;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * {@code ${NAME}} and {@code ${NAME:-default}} references, shell style: {@code :-} applies when the variable is
 * unset or empty; {@code $${} is a literal {@code ${}. Stateless and thread-safe.
 */
final class EnvSubstitution {
    private static final Pattern INNER = Pattern.compile("([A-Za-z_][A-Za-z0-9_]*)(?::-(.*))?", Pattern.DOTALL);

    private EnvSubstitution() {
    }

    /** The substituted text and the problems found (names only: a problem never contains a value). */
    record Result(String text, List<String> problems) {
    }

    static Result apply(String s, Function<String, String> env) {
        if (s.indexOf('$') < 0) {
            return new Result(s, List.of());
        }
        StringBuilder out = new StringBuilder(s.length());
        List<String> problems = new ArrayList<>();
        int i = 0;
        while (i < s.length()) {
            if (s.startsWith("$${", i)) {
                out.append("${");
                i += 3;
            } else if (s.startsWith("${", i)) {
                int end = s.indexOf('}', i + 2);
                Matcher m = end < 0 ? null : INNER.matcher(s.substring(i + 2, end));
                if (m == null || !m.matches()) {
                    problems.add("malformed reference \"" + (end < 0 ? s.substring(i) : s.substring(i, end + 1))
                            + "\"; write ${NAME} or ${NAME:-default} (or $${ for a literal ${)");
                    out.append(end < 0 ? s.substring(i) : s.substring(i, end + 1));
                    i = end < 0 ? s.length() : end + 1;
                    continue;
                }
                String name = m.group(1);
                String fallback = m.group(2);
                String value = env.apply(name);
                if (fallback != null && (value == null || value.isEmpty())) {
                    out.append(fallback);
                } else if (value == null) {
                    problems.add("environment variable " + name + " is not set (write ${" + name
                            + ":-default} to give a default)");
                    out.append(s, i, end + 1);
                } else {
                    out.append(value);
                }
                i = end + 1;
            } else {
                out.append(s.charAt(i++));
            }
        }
        return new Result(out.toString(), problems);
    }
}
