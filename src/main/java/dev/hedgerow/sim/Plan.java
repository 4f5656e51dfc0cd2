package dev.hedgerow.sim;

import com.fasterxml.jackson.databind.node.JsonNodeFactory;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.util.ArrayList;
import java.util.List;

/**
 * What one answer says, before any timing or fault: the deltas in order, the finish reason and the token counts.
 * Built from the request, the model's script and the text seed. Immutable.
 */
record Plan(List<Unit> units, String finishReason, int promptTokens, int completionTokens, int reasoningTokens,
            ToolCall toolCall, boolean prefixMismatch) {

    enum Kind { REASONING, CONTENT, TOOL_HEADER, TOOL_ARGUMENTS }

    /** One delta of the stream. Every kind but REASONING counts as a content token for faults. */
    record Unit(Kind kind, String text) {
        boolean content() {
            return kind != Kind.REASONING;
        }
    }

    record ToolCall(String id, String name, String arguments) {
    }

    static Plan of(ChatRequest req, ModelScript script, long textSeed) {
        List<Unit> units = new ArrayList<>();
        for (String r : SimText.reasoningTokens(textSeed, req.firstUserMessage(), script.reasoning().tokens())) {
            units.add(new Unit(Kind.REASONING, r));
        }
        int reasoning = units.size();
        int limit = req.maxTokens() == null ? script.length() : Math.min(script.length(), Math.max(0, req.maxTokens()));
        String finish = limit < script.length() ? "length" : "stop";
        if (req.prefill() != null) {
            return continuation(req, script, textSeed, units, reasoning);
        }
        List<String> tokens = SimText.tokens(textSeed, req.firstUserMessage(), limit);
        ToolCall call = null;
        if (req.tools().call()) {
            String first = String.join("", tokens.subList(0, Math.min(4, tokens.size())));
            ObjectNode args = JsonNodeFactory.instance.objectNode().put(req.tools().argumentName(), first);
            call = new ToolCall("call_" + Long.toHexString(SimText.hash(textSeed + req.firstUserMessage())),
                    req.tools().functionName(), args.toString());
            units.add(new Unit(Kind.TOOL_HEADER, ""));
            for (String piece : pieces(call.arguments(), 8)) {
                units.add(new Unit(Kind.TOOL_ARGUMENTS, piece));
            }
            finish = "tool_calls";
        } else if (req.jsonMode()) {
            // A valid JSON object streamed in pieces: {"text":"<tokens, escaped>"}.
            units.add(new Unit(Kind.CONTENT, "{\"text\":\""));
            for (String t : tokens) {
                String quoted = JsonNodeFactory.instance.textNode(t).toString();
                units.add(new Unit(Kind.CONTENT, quoted.substring(1, quoted.length() - 1)));
            }
            units.add(new Unit(Kind.CONTENT, "\"}"));
        } else {
            tokens.forEach(t -> units.add(new Unit(Kind.CONTENT, t)));
        }
        return new Plan(units, finish, req.promptTokens(), units.size(), reasoning, call, false);
    }

    /**
     * The remainder of the full text after the partial assistant message. Tokens wholly inside the partial count
     * as already written, so {@code max_tokens} caps the total at (written + max_tokens), as if the first answer
     * had gone on. A partial that is not a prefix of the full text is still continued from its length.
     */
    private static Plan continuation(ChatRequest req, ModelScript script, long textSeed, List<Unit> units,
                                     int reasoning) {
        List<String> full = SimText.tokens(textSeed, req.firstUserMessage(), script.length());
        String fullText = String.join("", full);
        String partial = req.prefill().partial();
        boolean mismatch = !fullText.startsWith(partial);
        int offset = Math.min(partial.length(), fullText.length());
        int written = 0, pos = 0;
        while (written < full.size() && pos + full.get(written).length() <= offset) {
            pos += full.get(written).length();
            written++;
        }
        int end = req.maxTokens() == null ? full.size() : (int) Math.min(full.size(), (long) written + Math.max(0, req.maxTokens()));
        String finish = end < full.size() ? "length" : "stop";
        List<String> rest = new ArrayList<>();
        for (int i = written; i < end; i++) {
            String t = full.get(i);
            rest.add(i == written ? t.substring(offset - pos) : t);
        }
        if (req.prefill().style() == ChatRequest.Style.INSTRUCTION) {
            String overlap = lastCodePoints(partial, script.capabilities().overlapChars());
            if (rest.isEmpty()) {
                rest.add(overlap);
            } else {
                rest.set(0, overlap + rest.get(0));
            }
        }
        rest.stream().filter(s -> !s.isEmpty()).forEach(t -> units.add(new Unit(Kind.CONTENT, t)));
        return new Plan(units, finish, req.promptTokens(), units.size(), reasoning, null, mismatch);
    }

    static String lastCodePoints(String s, int n) {
        int cps = s.codePointCount(0, s.length());
        return s.substring(s.offsetByCodePoints(0, Math.max(0, cps - Math.max(0, n))));
    }

    /** Splits into pieces of at most n code points, never inside a code point. */
    static List<String> pieces(String s, int n) {
        List<String> out = new ArrayList<>();
        int i = 0;
        while (i < s.length()) {
            int j = s.offsetByCodePoints(i, Math.min(n, s.codePointCount(i, s.length())));
            out.add(s.substring(i, j));
            i = j;
        }
        return out;
    }

    String content() {
        StringBuilder sb = new StringBuilder();
        units.stream().filter(u -> u.kind() == Kind.CONTENT).forEach(u -> sb.append(u.text()));
        return sb.toString();
    }

    String reasoningText() {
        StringBuilder sb = new StringBuilder();
        units.stream().filter(u -> u.kind() == Kind.REASONING).forEach(u -> sb.append(u.text()));
        return sb.toString();
    }

    int contentUnits() {
        return units.size() - reasoningTokens;
    }
}
