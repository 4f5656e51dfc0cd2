package dev.hedgerow.dispatch;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.JsonNodeFactory;
import com.fasterxml.jackson.databind.node.ObjectNode;

import java.util.ArrayList;
import java.util.List;
import java.util.function.ToIntFunction;

/**
 * One attempt's stream of several choices ({@code n > 1}), as OpenAI streams them: one SSE stream whose chunks
 * interleave the choices, each choice in a chunk carrying its {@code index}, each choice ending with its own
 * {@code finish_reason}. The stream is whole once every index {@code 0..n-1} has finished. Kept here: which choices
 * finished, the text each delivered to the client (what the stream is billed when the provider sends no usage), and
 * the finishes the closing chunk carries. Such a stream is never resumed (a resume continues one text), so nothing
 * is kept for one. Confined to its dispatch (guarded by it).
 */
final class Choices {
    private final String[] finishes;
    private int unfinished;
    /** The indices the stream has carried, and the last finish it gave. */
    private final boolean[] seen;
    private String lastFinish;
    private final StringBuilder[] content;
    private final StringBuilder[] reasoning;
    /**
     * The finishes of the chunk that completed the last choice, their deltas emptied: sent in the closing chunk (with
     * the attempt trail) once the stream completes, as a single choice's finish is ({@code Attempt.heldFinish}).
     */
    final List<ObjectNode> heldFinishes = new ArrayList<>(1);

    Choices(int n) {
        finishes = new String[n];
        seen = new boolean[n];
        unfinished = n;
        content = new StringBuilder[n];
        reasoning = new StringBuilder[n];
    }

    /**
     * Reads a chunk's choices for the dispatch's rules, as one {@link UpstreamReplies.Delta}: their content, reasoning
     * and tool calls together (a provider sends one choice a chunk; the output guard counts a chunk as one token),
     * and a finish only when this chunk finished the last unfinished choice (then that choice's reason), as the
     * stream is finished only then. Notes each index's first finish. Null when the chunk has no choices.
     */
    UpstreamReplies.Delta read(JsonNode chunk) {
        JsonNode choices = chunk.get("choices");
        if (choices == null || !choices.isArray() || choices.isEmpty()) {
            return null;
        }
        if (choices.size() == 1) {
            return finishing(choices.get(0), UpstreamReplies.choice(choices.get(0)));
        }
        StringBuilder c = new StringBuilder();
        StringBuilder r = new StringBuilder();
        ArrayNode calls = JsonNodeFactory.instance.arrayNode();
        boolean other = false;
        int otherChars = 0;
        String finish = null;
        for (JsonNode choice : choices) {
            UpstreamReplies.Delta d = finishing(choice, UpstreamReplies.choice(choice));
            c.append(d.content());
            r.append(d.reasoning());
            if (d.hasTools()) {
                calls.addAll((ArrayNode) d.toolCalls());
            }
            other |= d.other();
            otherChars += d.otherChars();
            finish = finish == null ? d.finish() : finish;
        }
        return new UpstreamReplies.Delta(c.toString(), r.toString(), calls.isEmpty() ? null : calls,
                !calls.isEmpty(), other, otherChars, finish);
    }

    /** {@code d} with its finish kept only when it finished the last unfinished choice. */
    private UpstreamReplies.Delta finishing(JsonNode choice, UpstreamReplies.Delta d) {
        int i = choice.path("index").asInt(-1);
        if (i >= 0 && i < seen.length) {
            seen[i] = true;
        }
        if (d.finish() == null) {
            return d;
        }
        lastFinish = d.finish();
        boolean completes = false;
        if (i >= 0 && i < finishes.length && finishes[i] == null) {
            finishes[i] = d.finish();
            completes = --unfinished == 0;
        }
        return completes ? d : new UpstreamReplies.Delta(d.content(), d.reasoning(), d.toolCalls(), d.hasTools(),
                d.other(), d.otherChars(), null);
    }

    /**
     * The finish of a stream that ended cleanly with fewer choices than asked: every index it carried finished and
     * the others never came, as from a server that ignores {@code n} and answers one choice (its whole answer is
     * relayed with one choice too). Null when the stream is whole, or a choice it carried did not finish.
     */
    String fewerChoicesFinish() {
        if (unfinished == 0 || lastFinish == null) {
            return null;
        }
        for (int i = 0; i < seen.length; i++) {
            if (seen[i] && finishes[i] == null) {
                return null;
            }
        }
        return lastFinish;
    }

    /** Records the text the client received of choice {@code index} (an index out of range is not counted). */
    void delivered(int index, String text, String thought) {
        if (index < 0 || index >= content.length) {
            return;
        }
        if (!text.isEmpty()) {
            (content[index] == null ? content[index] = new StringBuilder() : content[index]).append(text);
        }
        if (!thought.isEmpty()) {
            (reasoning[index] == null ? reasoning[index] = new StringBuilder() : reasoning[index]).append(thought);
        }
    }

    /** The completion tokens the client received, each choice counted as a single choice's text is, summed. */
    long completionTokens(ToIntFunction<String> tokens) {
        long sum = 0;
        for (int i = 0; i < content.length; i++) {
            if (content[i] != null || reasoning[i] != null) {
                sum += tokens.applyAsInt(text(content[i]) + text(reasoning[i]));
            }
        }
        return sum;
    }

    /**
     * What each choice delivered, for a stream ended early ({@code delivered.choices} of its last event):
     * {@code [{"index", "content_chars", "reasoning_chars"}]}, every index, in order.
     */
    ArrayNode deliveredChars() {
        ArrayNode out = JsonNodeFactory.instance.arrayNode();
        for (int i = 0; i < content.length; i++) {
            out.addObject().put("index", i).put("content_chars", chars(content[i]))
                    .put("reasoning_chars", chars(reasoning[i]));
        }
        return out;
    }

    private static int chars(StringBuilder sb) {
        return sb == null ? 0 : sb.codePointCount(0, sb.length());
    }

    /** The visible text choice {@code index} delivered ("" for none). */
    String content(int index) {
        return text(content[index]);
    }

    private static String text(StringBuilder sb) {
        return sb == null ? "" : sb.toString();
    }
}
