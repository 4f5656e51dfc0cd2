package dev.hedgerow.api;

import java.util.regex.Pattern;

/** Cutting and quoting text that came from outside (a client, a provider) before it is shown, stored or logged. */
public final class Text {
    /** Text a log line shows as is: names, aliases, ids. */
    private static final Pattern PLAIN = Pattern.compile("[A-Za-z0-9._:/@+-]+");

    private Text() {
    }

    /**
     * {@code s} to at most {@code max} characters followed by {@code mark} when it was longer; never cut between the
     * two halves of a surrogate pair (half an emoji is an unpaired surrogate, which strict JSON readers refuse).
     */
    public static String clip(String s, int max, String mark) {
        if (s == null || s.length() <= max) {
            return s;
        }
        int end = max > 0 && Character.isHighSurrogate(s.charAt(max - 1)) ? max - 1 : max;
        return s.substring(0, end) + mark;
    }

    /** {@link #clip(String, int, String)} with no mark. */
    public static String clip(String s, int max) {
        return clip(s, max, "");
    }

    /**
     * Free text as one log line shows it: as is when plain (an alias's characters), otherwise as a JSON string, so a
     * line break or quote inside it cannot forge another line or field; {@code -} for none.
     */
    public static String logged(String s) {
        if (s == null) {
            return "-";
        }
        return PLAIN.matcher(s).matches() ? s : Json.write(s);
    }
}
