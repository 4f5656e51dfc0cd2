package dev.hedgerow.sim;

import com.fasterxml.jackson.databind.node.JsonNodeFactory;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.util.ArrayList;
import java.util.List;

/**
 * What one answer says, before any timing or fault: the deltas in order, the finish reason and the token counts.
 * Built from the request, the model's script and the text seed. Immutable.
 *
 * @param thought true when the answer continues visible content: the model's thinking (and its pause) is over
 */
record Plan(List<Unit> units, String finishReason, int promptTokens, int completionTokens, int reasoningTokens,
            ToolCall toolCall, boolean prefixMismatch, boolean thought) {

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
        if (req.prefill() != null) {
            return continuation(req, script, textSeed);
        }
        List<Unit> units = new ArrayList<>();
        ModelScript.Reasoning thinking = script.reasoning();
        Integer budget = req.maxTokens() == null ? null : Math.max(0, req.maxTokens());
        List<String> thoughts = SimText.reasoningTokens(textSeed, req.firstUserMessage(), thinking.tokens());
        boolean thoughtCut = false;
        if (thinking.counted() && budget != null && thoughts.size() > budget) {
            // the budget ran out while the model was thinking: no content at all
            thoughts = thoughts.subList(0, budget);
            thoughtCut = true;
        }
        for (String r : thoughts) {
            units.add(new Unit(Kind.REASONING, r));
        }
        int reasoning = units.size();
        if (thinking.counted() && budget != null) {
            budget = budget - reasoning;
        }
        int limit = budget == null ? script.length() : Math.min(script.length(), budget);
        List<String> tokens = contentTokens(req, script, textSeed, limit);
        // scripted content is as long as its words: cut only when the limit left some out
        boolean cut = script.scriptedContent(req.lastUserMessage()) == null ? limit < script.length()
                : tokens.size() < contentTokens(req, script, textSeed, Integer.MAX_VALUE).size();
        String finish = thoughtCut || cut ? "length" : "stop";
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
            jsonPieces(tokens).forEach(p -> units.add(new Unit(Kind.CONTENT, p)));
        } else {
            tokens.forEach(t -> units.add(new Unit(Kind.CONTENT, t)));
        }
        return new Plan(units, finish, req.promptTokens(), units.size(), reasoning, call, false, false);
    }

    /**
     * The first {@code count} content tokens: the script's own content ({@link ModelScript#scriptedContent}: a judge's
     * score, a scripted reply), its words as tokens, else the seeded text. The one instruction the simulator obeys
     * ({@link SimText#REPLY_EXACTLY}, a prober's known-answer check) comes before a scripted reply, as a real model
     * whose answers are all alike still answers it.
     */
    private static List<String> contentTokens(ChatRequest req, ModelScript script, long textSeed, int count) {
        String first = req.firstUserMessage();
        String scripted = first != null && first.startsWith(SimText.REPLY_EXACTLY) ? null
                : script.scriptedContent(req.lastUserMessage());
        if (scripted == null) {
            return SimText.tokens(textSeed, req.firstUserMessage(), count);
        }
        String[] words = scripted.strip().split("\\s+");
        List<String> out = new ArrayList<>();
        for (int i = 0; i < words.length && i < count; i++) {
            out.add(i == 0 ? words[i] : " " + words[i]);
        }
        return out;
    }

    /**
     * The remainder of the full answer after the partial assistant message. With visible content in the partial,
     * the model has finished thinking and goes on with the content. With none, it was cut while reasoning: it
     * continues the reasoning after the partial {@code reasoning_content} (from the start when there is none),
     * thinks its pause, then writes the whole content. Tokens wholly inside the partial count as already written,
     * so {@code max_tokens} caps the content at (written + max_tokens), as if the first answer had gone on;
     * reasoning is never capped, as in a first answer. A partial that is not a prefix of the full text is still
     * continued from its length, and under a JSON mode ({@code response_format}) it is not continued at all: the mode's
     * grammar writes a whole object again, as a grammar-constrained server does; a partial that opened the JSON-mode
     * object, asked without the mode, is continued as that object. An instruction-style continuation re-emits the partial's last
     * {@code overlapChars} code points first, in the channel it continues.
     */
    private static Plan continuation(ChatRequest req, ModelScript script, long textSeed) {
        ChatRequest.Prefill prefill = req.prefill();
        boolean instruction = prefill.style() == ChatRequest.Style.INSTRUCTION;
        int overlapChars = script.capabilities().overlapChars();
        boolean thinking = prefill.partial().isEmpty();
        List<Unit> units = new ArrayList<>();
        boolean mismatch = false;
        int reasoning = 0;
        if (thinking) {
            List<String> full = SimText.reasoningTokens(textSeed, req.firstUserMessage(), script.reasoning().tokens());
            Rest r = rest(full, prefill.reasoning(), null);
            mismatch = r.mismatch();
            List<String> rest = r.tokens();
            if (instruction && !prefill.reasoning().isEmpty()) {
                withOverlap(rest, lastCodePoints(prefill.reasoning(), overlapChars));
            }
            for (String t : rest) {
                if (!t.isEmpty()) {
                    units.add(new Unit(Kind.REASONING, t));
                    reasoning++;
                }
            }
        }
        List<String> full = contentTokens(req, script, textSeed, script.length());
        String partial = prefill.partial();
        if (req.jsonMode()) {
            // a JSON mode's grammar constrains what is generated now, from its start (vLLM's guided decoding, strict
            // structured outputs): a whole object again, after the partial one
            full = jsonPieces(full);
            partial = "";
        } else if (partial.startsWith(JSON_OPEN)) {
            // no grammar: the model goes on with the object its prefill opened, the same as a first answer's
            full = jsonPieces(full);
        }
        Rest c = rest(full, partial, req.maxTokens());
        mismatch |= c.mismatch();
        List<String> rest = c.tokens();
        if (instruction && !thinking) {
            withOverlap(rest, lastCodePoints(prefill.partial(), overlapChars));
        }
        // a parser that reads everything before the end of the thinking as reasoning streams a prefill's continuation
        // of visible content there, as it never writes that end (ModelScript.Reasoning#continuationAsReasoning)
        Kind kind = !instruction && !thinking && script.reasoning().continuationAsReasoning() ? Kind.REASONING
                : Kind.CONTENT;
        for (String t : rest) {
            if (!t.isEmpty()) {
                units.add(new Unit(kind, t));
                reasoning += kind == Kind.REASONING ? 1 : 0;
            }
        }
        String finish = c.end() < full.size() ? "length" : "stop";
        return new Plan(units, finish, req.promptTokens(), units.size(), reasoning, null, mismatch, !thinking);
    }

    private record Rest(List<String> tokens, int end, boolean mismatch) {
    }

    private static final String JSON_OPEN = "{\"text\":\"";

    /** A JSON-mode answer: a valid JSON object streamed in pieces, {"text":"<tokens, escaped>"}. */
    private static List<String> jsonPieces(List<String> tokens) {
        List<String> out = new ArrayList<>();
        out.add(JSON_OPEN);
        for (String t : tokens) {
            String quoted = JsonNodeFactory.instance.textNode(t).toString();
            out.add(quoted.substring(1, quoted.length() - 1));
        }
        out.add("\"}");
        return out;
    }

    /** The tokens of {@code full} after the text {@code partial}, at most {@code maxTokens} more than written. */
    private static Rest rest(List<String> full, String partial, Integer maxTokens) {
        String fullText = String.join("", full);
        boolean mismatch = !fullText.startsWith(partial);
        int offset = Math.min(partial.length(), fullText.length());
        int written = 0, pos = 0;
        while (written < full.size() && pos + full.get(written).length() <= offset) {
            pos += full.get(written).length();
            written++;
        }
        int end = maxTokens == null ? full.size()
                : (int) Math.min(full.size(), (long) written + Math.max(0, maxTokens));
        List<String> rest = new ArrayList<>();
        for (int i = written; i < end; i++) {
            String t = full.get(i);
            rest.add(i == written ? t.substring(offset - pos) : t);
        }
        return new Rest(rest, Math.max(end, written), mismatch);
    }

    private static void withOverlap(List<String> rest, String overlap) {
        if (rest.isEmpty()) {
            rest.add(overlap);
        } else {
            rest.set(0, overlap + rest.get(0));
        }
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
