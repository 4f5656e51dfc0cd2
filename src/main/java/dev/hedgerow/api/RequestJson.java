package dev.hedgerow.api;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.MissingNode;
import com.fasterxml.jackson.databind.node.ObjectNode;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.charset.CharacterCodingException;
import java.nio.charset.CodingErrorAction;
import java.nio.charset.StandardCharsets;
import java.util.Iterator;
import java.util.Map;

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
        if (!wellFormedUtf8(bytes)) {
            // Jackson decodes overlong forms and encoded surrogates without complaint; the JDK decoder does not
            throw new RequestException(ApiError.invalidRequest("invalid_utf8",
                    "The request body is not valid UTF-8.", null));
        }
        JsonNode node;
        try {
            node = Json.parse(bytes);
        } catch (IOException e) {
            throw new RequestException(ApiError.invalidRequest("invalid_json",
                    "We could not parse the JSON body of your request: " + shorten(e.getMessage()), null));
        }
        if (node == null) {
            return MissingNode.getInstance(); // nothing but whitespace
        }
        String lone = loneSurrogateAt(node, "");
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
        JsonNode node = parse(bytes);
        if (!node.isObject()) {
            throw new RequestException(ApiError.invalidRequest("invalid_json",
                    "The request body must be a JSON object.", null));
        }
        return (ObjectNode) node;
    }

    private static boolean wellFormedUtf8(byte[] bytes) {
        int i = 0;
        while (i < bytes.length && bytes[i] >= 0) {
            i++;
        }
        if (i == bytes.length) {
            return true; // all ASCII, the common case: no decoder, no char buffer the size of the body
        }
        try {
            StandardCharsets.UTF_8.newDecoder().onMalformedInput(CodingErrorAction.REPORT)
                    .onUnmappableCharacter(CodingErrorAction.REPORT).decode(ByteBuffer.wrap(bytes));
            return true;
        } catch (CharacterCodingException e) {
            return false;
        }
    }

    /** The path of the first field name or string holding an unpaired surrogate, or null (depth is bounded by Json). */
    private static String loneSurrogateAt(JsonNode n, String path) {
        if (n.isTextual()) {
            return hasLoneSurrogate(n.textValue()) ? path : null;
        }
        if (n.isArray()) {
            for (int i = 0; i < n.size(); i++) {
                String p = loneSurrogateAt(n.get(i), path + "[" + i + "]");
                if (p != null) {
                    return p;
                }
            }
        } else if (n.isObject()) {
            Iterator<Map.Entry<String, JsonNode>> it = n.fields();
            while (it.hasNext()) {
                Map.Entry<String, JsonNode> e = it.next();
                String p = path.isEmpty() ? e.getKey() : path + "." + e.getKey();
                if (hasLoneSurrogate(e.getKey())) {
                    return path;
                }
                String inner = loneSurrogateAt(e.getValue(), p);
                if (inner != null) {
                    return inner;
                }
            }
        }
        return null;
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

    private static String shorten(String s) {
        if (s == null) {
            return "";
        }
        int nl = s.indexOf('\n');
        String first = nl > 0 ? s.substring(0, nl) : s;
        return first.length() > 200 ? first.substring(0, 200) : first;
    }
}
