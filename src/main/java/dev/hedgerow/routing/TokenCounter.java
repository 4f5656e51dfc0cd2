package dev.hedgerow.routing;

import com.fasterxml.jackson.databind.JsonNode;
import com.knuddels.jtokkit.Encodings;
import com.knuddels.jtokkit.api.Encoding;
import com.knuddels.jtokkit.api.EncodingResult;
import com.knuddels.jtokkit.api.EncodingType;
import com.knuddels.jtokkit.api.IntArrayList;

import java.util.Iterator;
import java.util.Map;
import java.util.function.ToIntFunction;

/**
 * Counts the prompt tokens of an OpenAI chat request with a real BPE tokenizer (jtokkit, {@code o200k_base},
 * falling back to {@code cl100k_base} if that cannot be loaded), the way OpenAI's cookbook counts chat tokens:
 * every message costs {@value #TOKENS_PER_MESSAGE} tokens of framing plus the tokens of each of its string fields
 * ({@code role}, {@code content}, {@code name}, ...), a {@code name} costs {@value #TOKENS_PER_NAME} more, and the
 * reply is primed with {@value #REPLY_PRIMING} tokens.
 *
 * <p>Content parts arrays are counted part by part: a {@code text} part by its text; an {@code image_url} part
 * counts a fixed amount because the image's size is not known without fetching it: {@value #IMAGE_TOKENS_LOW} for
 * {@code detail: "low"} (OpenAI's base tile cost), otherwise {@value #IMAGE_TOKENS_HIGH} (a 1024×1024 image at high
 * detail: 85 + 4 tiles × 170); an {@code input_audio} part {@value #AUDIO_TOKENS}; a {@code file} part (a PDF) by its
 * size ({@link #fileTokens}); other parts by their JSON text.
 * Assistant {@code tool_calls} count their function names and arguments; the request's {@code tools} definitions
 * count by their JSON text plus {@value #TOKENS_PER_TOOL} per tool. Tool schemas are rendered differently by every
 * model, so those two are close approximations, not exact; plain messages match OpenAI's {@code usage} exactly
 * for {@code o200k_base} models.
 *
 * <p>The count is for routing (context-window filter, TTFT prediction), not billing: upstream models use their own
 * tokenizers, so expect a few percent of difference on non-OpenAI models.
 *
 * <p>Thread-safe and cheap to share: one instance ({@link #shared()}) holds the immutable encoding tables.
 * Text that happens to contain special-token markers (such as {@code <|endoftext|>}) is counted as ordinary text.
 *
 * <p>The prompt's strings are counted through a small memory of recent counts (a {@link RecentByString} of
 * {@link #RECENT} slots, for strings up to {@link #MAX_REMEMBERED} chars), shared by all threads: the same system
 * prompt, role names and tool definitions arrive with request after request, and hashing and comparing a string
 * costs far less than encoding it again. {@link #countText} (used for completions, which seldom repeat) always encodes.
 */
public final class TokenCounter {
    public static final int TOKENS_PER_MESSAGE = 3;
    public static final int TOKENS_PER_NAME = 1;
    public static final int REPLY_PRIMING = 3;
    public static final int IMAGE_TOKENS_LOW = 85;
    public static final int IMAGE_TOKENS_HIGH = 765;
    public static final int AUDIO_TOKENS = 1000;
    public static final int FILE_BYTES_PER_TOKEN = 64;
    public static final int FILE_TOKENS_UNKNOWN = 1000;
    public static final int TOKENS_PER_TOOL = 8;

    static final int RECENT = 256;
    static final int MAX_REMEMBERED = 16 * 1024;
    /** Chars of one count tokenized exactly; text beyond them is estimated (see {@link Tally}). */
    public static final int MAX_EXACT_CHARS = 1 << 20;

    private final Encoding encoding;
    private final RecentByString<Integer> recent = new RecentByString<>(RECENT);

    private TokenCounter(Encoding encoding) {
        this.encoding = encoding;
    }

    /** The process-wide counter, loaded on first use. */
    public static TokenCounter shared() {
        return Holder.INSTANCE;
    }

    /** A counter with {@code o200k_base}, or {@code cl100k_base} if {@code o200k_base} cannot be loaded. */
    public static TokenCounter create() {
        var registry = Encodings.newLazyEncodingRegistry();
        Encoding enc;
        try {
            enc = registry.getEncoding(EncodingType.O200K_BASE);
            enc.countTokensOrdinary("warm up");
        } catch (RuntimeException e) {   // e.g. the o200k table missing from a trimmed (native) image
            enc = registry.getEncoding(EncodingType.CL100K_BASE);
        }
        return new TokenCounter(enc);
    }

    /** The name of the encoding in use ({@code o200k_base} or {@code cl100k_base}). */
    public String encodingName() {
        return encoding.getName();
    }

    /** Chars a text is tokenized in at most at once ({@link #countText}). */
    static final int SLICE = 8 * 1024;
    /** How far back from a slice's end a word boundary is looked for. */
    private static final int SLICE_SEEK = 1024;

    /**
     * Tokens of plain text; {@code null} or empty text is 0. A text longer than {@value #SLICE} chars is tokenized a
     * slice at a time, each cut before a space that begins a word, where the tokenizer's own pre-split cuts too (the
     * count is the same), or, in a run of that many chars without one, at the slice's end. The BPE merge of one
     * pre-split piece grows faster than its length: a spaceless 8 MiB embeddings input held a core for 38 s and ran
     * out of heap in jtokkit's large-piece encoder (found by review6); in slices it costs what prose of that length
     * does.
     */
    public int countText(String text) {
        if (text == null || text.isEmpty()) {
            return 0;
        }
        if (text.length() <= SLICE) {
            return encoding.countTokensOrdinary(text);
        }
        int tokens = 0;
        int from = 0;
        while (from < text.length()) {
            int to = sliceEnd(text, from);
            tokens += encoding.countTokensOrdinary(text.substring(from, to));
            from = to;
        }
        return tokens;
    }

    /**
     * The longest head of {@code text} that is at most {@code maxTokens} tokens (cut between two tokens), tokenized in
     * slices as {@link #countText} is, so a huge text costs no more than its head; {@code text} itself when it fits.
     */
    public String head(String text, int maxTokens) {
        if (text == null || (long) text.length() * 3 <= maxTokens) {
            return text;   // a token is at least one UTF-8 byte, a char at most three
        }
        int left = Math.max(0, maxTokens);
        int from = 0;
        while (from < text.length()) {
            int to = sliceEnd(text, from);
            EncodingResult r = encoding.encodeOrdinary(text.substring(from, to), left);
            if (r.isTruncated()) {
                return text.substring(0, from + r.getLastProcessedCharacterIndex() + 1);
            }
            left -= r.getTokens().size();
            from = to;
        }
        return text;
    }

    /** Where the slice from {@code from} ends: before a word's leading space near {@link #SLICE}, else at it. */
    private static int sliceEnd(String s, int from) {
        int end = from + SLICE;
        if (end >= s.length()) {
            return s.length();
        }
        for (int i = end; i > end - SLICE_SEEK; i--) {
            if (s.charAt(i) == ' ' && !Character.isWhitespace(s.charAt(i - 1))
                    && i + 1 < s.length() && !Character.isWhitespace(s.charAt(i + 1))) {
                return i;
            }
        }
        return Character.isHighSurrogate(s.charAt(end - 1)) ? end - 1 : end;   // never split a surrogate pair
    }

    /**
     * A counter for the texts of one request that share one exact budget of {@link #MAX_EXACT_CHARS} chars, as a
     * chat request's messages do ({@link Tally}): an embeddings batch, whose inputs were each counted exactly
     * however many there were. Each text is its exact tokens, plus its chars past the budget at the tokens per char
     * counted so far.
     */
    public ToIntFunction<String> sharingOneBudget() {
        Tally tally = new Tally();
        return tally::textWithEstimate;
    }

    /** {@link #countText}, through the memory of recent counts (see the class comment). */
    int countRemembered(String text) {
        if (text == null || text.isEmpty() || text.length() > MAX_REMEMBERED) {
            return countText(text);
        }
        Integer seen = recent.get(text);
        if (seen != null) {
            return seen;
        }
        int tokens = encoding.countTokensOrdinary(text);
        recent.put(text, tokens);
        return tokens;
    }

    /**
     * The token ids of the first {@code maxTokens} tokens of {@code text}: the same ids the whole text would start
     * with. The tokenizer stops at the limit only between the pieces of its split, and one long piece (a run of one
     * letter) is encoded whole, at a cost that grows faster than its length: bound the text (PrefixHasher.head).
     */
    public int[] encodeLeading(String text, int maxTokens) {
        if (text == null || text.isEmpty() || maxTokens <= 0) {
            return new int[0];
        }
        IntArrayList ids = encoding.encodeOrdinary(text, maxTokens).getTokens();
        return ids.toArray();
    }

    /**
     * The tokens a request body's route reads before it answers: a chat completion request's prompt
     * ({@link #countRequest}), or, for a body with {@code input} and no {@code messages}, an embeddings request's inputs
     * (each text counted, each token-id array by its length, summed).
     */
    public int countInput(JsonNode body) {
        JsonNode input = body == null ? null : body.get("input");
        if (input == null || body.has("messages")) {
            return countRequest(body);
        }
        if (!input.isArray()) {
            return countText(input.asText(""));
        }
        if (!input.isEmpty() && !input.get(0).isTextual() && !input.get(0).isArray()) {
            return input.size();   // one input of token ids
        }
        int tokens = 0;
        for (JsonNode item : input) {
            tokens += item.isArray() ? item.size() : countText(item.asText(""));
        }
        return tokens;
    }

    /**
     * Prompt tokens of a chat completion request body: its {@code messages} and {@code tools}, with the framing
     * OpenAI adds. A body without messages counts only the reply priming. Exact for the first
     * {@link #MAX_EXACT_CHARS} chars of text; beyond them the rest is estimated at the tokens per char of what was
     * counted (see {@link Tally}).
     */
    public int countRequest(JsonNode request) {
        if (request == null || !request.isObject()) {
            return REPLY_PRIMING;
        }
        return counted(tally -> {
            int tokens = countMessages(request.get("messages"), tally);
            JsonNode tools = request.get("tools");
            if (tools != null && tools.isArray() && !tools.isEmpty()) {
                for (JsonNode tool : tools) {
                    tokens += TOKENS_PER_TOOL + tally.text(tool.toString());
                }
            }
            return tokens;
        });
    }

    /** {@code count}'s exact tokens plus its {@link Tally}'s estimate of the text past the exact budget. */
    private int counted(ToIntFunction<Tally> count) {
        Tally tally = new Tally();
        return count.applyAsInt(tally) + tally.estimated();
    }

    /** Prompt tokens of a {@code messages} array, with per-message framing and the reply priming. */
    private int countMessages(JsonNode messages, Tally tally) {
        int tokens = REPLY_PRIMING;
        if (messages == null || !messages.isArray()) {
            return tokens;
        }
        for (JsonNode message : messages) {
            tokens += countMessage(message, tally);
        }
        return tokens;
    }

    /** Tokens of one message, framing included (the reply priming is not). */
    int countMessage(JsonNode message) {
        return counted(tally -> countMessage(message, tally));
    }

    private int countMessage(JsonNode message, Tally tally) {
        int tokens = TOKENS_PER_MESSAGE;
        if (message == null || !message.isObject()) {
            return tokens;
        }
        for (Iterator<Map.Entry<String, JsonNode>> it = message.fields(); it.hasNext(); ) {
            Map.Entry<String, JsonNode> field = it.next();
            JsonNode value = field.getValue();
            switch (field.getKey()) {
                case "content" -> tokens += countContent(value, tally);
                case "tool_calls" -> tokens += countToolCalls(value, tally);
                case "name" -> tokens += TOKENS_PER_NAME + (value.isTextual() ? tally.text(value.asText()) : 0);
                default -> {
                    if (value.isTextual()) {
                        tokens += tally.text(value.asText());
                    }
                }
            }
        }
        return tokens;
    }

    /** Tokens of a message's {@code content}: a string, or an array of content parts. */
    int countContent(JsonNode content) {
        return counted(tally -> countContent(content, tally));
    }

    private int countContent(JsonNode content, Tally tally) {
        if (content == null || content.isNull()) {
            return 0;
        }
        if (content.isTextual()) {
            return tally.text(content.asText());
        }
        if (!content.isArray()) {
            return tally.text(content.toString());
        }
        int tokens = 0;
        for (JsonNode part : content) {
            tokens += countPart(part, tally);
        }
        return tokens;
    }

    private int countPart(JsonNode part, Tally tally) {
        if (part.isTextual()) {
            return tally.text(part.asText());
        }
        String type = part.path("type").asText("");
        switch (type) {
            case "text", "input_text" -> {
                return tally.text(part.path("text").asText(""));
            }
            case "image_url", "input_image" -> {
                String detail = part.path("image_url").path("detail").asText(part.path("detail").asText("auto"));
                return "low".equals(detail) ? IMAGE_TOKENS_LOW : IMAGE_TOKENS_HIGH;
            }
            case "input_audio" -> {
                return AUDIO_TOKENS;
            }
            case "file", "input_file" -> {
                JsonNode file = part.has("file") ? part.path("file") : part;
                return tally.text(file.path("filename").asText("")) + fileTokens(file.path("file_data").asText(""));
            }
            default -> {
                return tally.text(part.toString());
            }
        }
    }

    /**
     * A rough count for a file (a PDF, which OpenAI gives a model as each page's text and image) from its size:
     * {@value #FILE_BYTES_PER_TOKEN} bytes a token, {@value #FILE_TOKENS_UNKNOWN} for one sent by {@code file_id}
     * alone. Its base64 was counted as text before, ~0.7 tokens a char: a 600 KB PDF came to 550 000 tokens and
     * was refused by every 128k route (found by hunt17). A low guess errs the safe way: a route whose window is
     * too small then refuses with {@code context_length_exceeded}, which moves the request to a larger one.
     */
    static int fileTokens(String fileData) {
        if (fileData.isEmpty()) {
            return FILE_TOKENS_UNKNOWN;
        }
        int comma = fileData.startsWith("data:") ? fileData.indexOf(',') : -1;
        long bytes = (fileData.length() - (comma + 1)) * 3L / 4;
        return (int) Math.min(Integer.MAX_VALUE, Math.max(1, bytes / FILE_BYTES_PER_TOKEN));
    }

    private int countToolCalls(JsonNode toolCalls, Tally tally) {
        if (toolCalls == null || !toolCalls.isArray()) {
            return 0;
        }
        int tokens = 0;
        for (JsonNode call : toolCalls) {
            JsonNode fn = call.path("function");
            tokens += TOKENS_PER_MESSAGE + tally.text(fn.path("name").asText(""))
                    + tally.text(fn.path("arguments").asText(""));
        }
        return tokens;
    }

    /**
     * One count's budget of exact tokenizing. BPE costs ~0.4 µs a char, so an 8 MiB prompt would hold a worker's
     * CPU for seconds per request; the first {@link #MAX_EXACT_CHARS} chars (a few hundred thousand tokens, past
     * most context windows) are counted exactly and the text beyond them is estimated at the tokens per char of
     * what was counted. Routing needs no more: such a prompt is either far past a route's window or within a few
     * percent of the same estimate.
     */
    private final class Tally {
        private long exactCharsLeft = MAX_EXACT_CHARS;
        private long exactChars;
        private long exactTokens;
        private long estimatedChars;

        int text(String s) {
            if (s == null || s.isEmpty()) {
                return 0;
            }
            if (s.length() <= exactCharsLeft) {
                return exact(s.length(), countRemembered(s));
            }
            int cut = (int) exactCharsLeft;
            if (cut > 0 && Character.isHighSurrogate(s.charAt(cut - 1))) {
                cut--; // never split a surrogate pair
            }
            estimatedChars += s.length() - cut;
            return cut == 0 ? 0 : exact(cut, countText(s.substring(0, cut)));
        }

        /** {@link #text}, plus the estimate of this text's chars past the budget. */
        int textWithEstimate(String s) {
            long before = estimatedChars;
            int tokens = text(s);
            long past = estimatedChars - before;
            if (past == 0) {
                return tokens;
            }
            double perChar = exactChars == 0 ? 0.25 : (double) exactTokens / exactChars;
            return (int) Math.min(Integer.MAX_VALUE / 2, tokens + Math.ceil(past * perChar));
        }

        private int exact(int chars, int tokens) {
            exactCharsLeft -= chars;
            exactChars += chars;
            exactTokens += tokens;
            return tokens;
        }

        /** Tokens of the text past the exact budget, at the ratio of what was counted (4 chars a token if none). */
        int estimated() {
            if (estimatedChars == 0) {
                return 0;
            }
            double perChar = exactChars == 0 ? 0.25 : (double) exactTokens / exactChars;
            return (int) Math.min(Integer.MAX_VALUE / 2, Math.ceil(estimatedChars * perChar));
        }
    }

    private static final class Holder {
        static final TokenCounter INSTANCE = create();
    }
}
