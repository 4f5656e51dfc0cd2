package dev.hedgerow.testsupport;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;

import java.util.ArrayList;
import java.util.List;

/** Reads a whole SSE body the way an OpenAI client does. */
public final class Sse {
    private static final ObjectMapper M = new ObjectMapper();

    private Sse() {
    }

    /** The JSON payload of every {@code data:} event except {@code [DONE]}. */
    public static List<JsonNode> events(String body) {
        List<JsonNode> out = new ArrayList<>();
        for (String block : body.split("\n\n")) {
            StringBuilder data = new StringBuilder();
            for (String line : block.split("\n")) {
                if (line.startsWith("data:")) {
                    data.append(line.substring(5).trim());
                }
            }
            if (data.length() == 0 || data.toString().equals("[DONE]")) {
                continue;
            }
            try {
                out.add(M.readTree(data.toString()));
            } catch (Exception e) {
                throw new AssertionError("not JSON: " + data, e);
            }
        }
        return out;
    }

    /** The last {@code finish_reason} the stream's first choice gave (null if none). */
    public static String finishReason(String body) {
        String f = null;
        for (JsonNode e : events(body)) {
            JsonNode c = e.path("choices").path(0);
            if (c.hasNonNull("finish_reason")) {
                f = c.get("finish_reason").asText();
            }
        }
        return f;
    }

    public static boolean endsWithDone(String body) {
        return body.trim().endsWith("data: [DONE]");
    }

    /** The concatenated {@code delta.content} of every chunk. */
    public static String content(String body) {
        StringBuilder sb = new StringBuilder();
        for (JsonNode e : events(body)) {
            JsonNode c = e.path("choices").path(0).path("delta").path("content");
            if (c.isTextual()) {
                sb.append(c.asText());
            }
        }
        return sb.toString();
    }

    /** The concatenated reasoning deltas of every chunk. */
    public static String reasoning(String body) {
        StringBuilder sb = new StringBuilder();
        for (JsonNode e : events(body)) {
            JsonNode d = e.path("choices").path(0).path("delta");
            JsonNode c = d.has("reasoning_content") ? d.get("reasoning_content") : d.path("reasoning");
            if (c.isTextual()) {
                sb.append(c.asText());
            }
        }
        return sb.toString();
    }

    /** The final chunk's attempt trail. */
    public static JsonNode trail(String body) {
        List<JsonNode> ev = events(body);
        for (int i = ev.size() - 1; i >= 0; i--) {
            if (ev.get(i).has("attempt_trail")) {
                return ev.get(i).get("attempt_trail");
            }
        }
        return null;
    }
}
