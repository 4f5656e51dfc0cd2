package dev.hedgerow.api;

import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.MissingNode;
import com.fasterxml.jackson.databind.node.ObjectNode;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.charset.CharacterCodingException;
import java.nio.charset.CodingErrorAction;
import java.nio.charset.StandardCharsets;
import java.util.ArrayDeque;
import java.util.Deque;
import java.util.Iterator;
import java.util.Map;
import java.util.function.Predicate;

/**
 * Reads a JSON request body as strictly as every edge reads one (the gateway's chat requests and the admin API's
 * edits alike): well-formed UTF-8, one JSON document and nothing after it, nesting of at most {@link Json#MAX_DEPTH},
 * no unpaired UTF-16 surrogate escape. Anything else is a {@link RequestException} with a 400 in the envelope.
 */
public final class RequestJson {
    private RequestJson() {
    }

    /** The body's JSON value, of any type (the caller judges its shape); a missing node for a blank body. */
    public static JsonNode parse(byte[] bytes) {
        return parse(bytes, false);
    }

    /**
     * As {@link #parse(byte[])}, an object naming a field twice refused as well: an admin edit, read as the catalog
     * file is (whose loader refuses a duplicate key), not with the last value silently winning.
     */
    public static JsonNode parseEdit(byte[] bytes) {
        return parse(bytes, true);
    }

    private static JsonNode parse(byte[] bytes, boolean noDuplicates) {
        String notUtf8 = notUtf8(bytes);
        if (notUtf8 != null) {
            throw new RequestException(ApiError.invalidRequest("invalid_utf8", notUtf8, null));
        }
        JsonNode node;
        try {
            node = noDuplicates ? Json.parseWithoutDuplicates(bytes) : Json.parse(bytes);
        } catch (JsonProcessingException e) {
            throw new RequestException(ApiError.invalidRequest("invalid_json",
                    "We could not parse the JSON body of your request: " + Json.describe(e), null));
        } catch (IOException e) {
            throw new RequestException(ApiError.invalidRequest("invalid_json",
                    "We could not parse the JSON body of your request.", null));
        }
        if (node == null) {
            return MissingNode.getInstance(); // nothing but whitespace
        }
        String lone = loneSurrogateAt(node);
        if (lone != null) {
            // an escaped lone surrogate ("\ud800") is valid JSON but cannot be written out as UTF-8
            throw new RequestException(ApiError.invalidRequest("invalid_unicode",
                    "The request holds an unpaired UTF-16 surrogate escape" + (lone.isEmpty() ? "." : " in '" + lone
                            + "'."), lone.isEmpty() ? null : lone));
        }
        return node;
    }

    /** The body as a JSON object (a chat or embeddings request); anything else is a 400 {@code invalid_json}. */
    public static ObjectNode object(byte[] bytes) {
        return object(parse(bytes));
    }

    /** As {@link #object(byte[])}, read as {@link #parseEdit} reads it (an admin edit). */
    public static ObjectNode editObject(byte[] bytes) {
        return object(parseEdit(bytes));
    }

    private static ObjectNode object(JsonNode node) {
        if (!node.isObject()) {
            throw new RequestException(ApiError.invalidRequest("invalid_json",
                    "The request body must be a JSON object.", null));
        }
        return (ObjectNode) node;
    }

    /**
     * Why the body is not UTF-8 JSON text, or null. Jackson decodes overlong forms and encoded surrogates without
     * complaint, and reads a body in UTF-16 or UTF-32 (whose ASCII characters are NUL-padded, which is well-formed
     * UTF-8) as such without a byte-order mark: JSON exchanged between systems is UTF-8 (RFC 8259), and a raw NUL
     * byte is never part of JSON text, so one is refused here too.
     */
    private static String notUtf8(byte[] bytes) {
        boolean ascii = true;
        for (byte b : bytes) {
            if (b == 0) {
                return "The request body holds a NUL byte: JSON is read as UTF-8 only (not UTF-16 or UTF-32).";
            }
            ascii &= b > 0;
        }
        if (ascii) {
            return null; // the common case: no decoder, no char buffer the size of the body
        }
        try {
            StandardCharsets.UTF_8.newDecoder().onMalformedInput(CodingErrorAction.REPORT)
                    .onUnmappableCharacter(CodingErrorAction.REPORT).decode(ByteBuffer.wrap(bytes));
            return null;
        } catch (CharacterCodingException e) {
            return "The request body is not valid UTF-8.";
        }
    }

    /** The path of the first field name or string holding an unpaired surrogate, or null. */
    private static String loneSurrogateAt(JsonNode n) {
        return firstPath(n, RequestJson::hasLoneSurrogate, RequestJson::hasLoneSurrogate);
    }

    /**
     * The path ({@code a[1].b}) of the first field name {@code badName} holds for, or of the first string
     * {@code badText} holds for, or null (depth is bounded by Json). A field name in the path is shown to its first
     * 40 characters. The path is built only once one is found: built for every node on the way, it cost the path's
     * length per node, and a few hundred KB of elements under one long key held the event loop for seconds.
     */
    public static String firstPath(JsonNode n, Predicate<String> badName, Predicate<String> badText) {
        Deque<Object> at = new ArrayDeque<>();
        if (!find(n, badName, badText, at)) {
            return null;
        }
        StringBuilder path = new StringBuilder();
        for (Object step : at) {
            if (step instanceof Integer i) {
                path.append('[').append(i).append(']');
            } else {
                String name = (String) step;
                path.append(path.length() == 0 ? "" : ".")
                        .append(Text.clip(name, 40, "\u2026"));
            }
        }
        return path.toString();
    }

    /** Whether {@code n} holds one; if so, the steps to it (an index or a field name) are pushed on the way back. */
    private static boolean find(JsonNode n, Predicate<String> badName, Predicate<String> badText, Deque<Object> at) {
        if (n.isTextual()) {
            return badText.test(n.textValue());
        }
        if (n.isArray()) {
            for (int i = 0; i < n.size(); i++) {
                if (find(n.get(i), badName, badText, at)) {
                    at.push(i);
                    return true;
                }
            }
        } else if (n.isObject()) {
            Iterator<Map.Entry<String, JsonNode>> it = n.fields();
            while (it.hasNext()) {
                Map.Entry<String, JsonNode> e = it.next();
                if (badName.test(e.getKey()) || find(e.getValue(), badName, badText, at)) {
                    at.push(e.getKey());
                    return true;
                }
            }
        }
        return false;
    }

    private static boolean hasLoneSurrogate(String s) {
        for (int i = 0; i < s.length(); i++) {
            char c = s.charAt(i);
            if (Character.isHighSurrogate(c)) {
                if (i + 1 < s.length() && Character.isLowSurrogate(s.charAt(i + 1))) {
                    i++;
                    continue;
                }
                return true;
            }
            if (Character.isLowSurrogate(c)) {
                return true;
            }
        }
        return false;
    }
}
