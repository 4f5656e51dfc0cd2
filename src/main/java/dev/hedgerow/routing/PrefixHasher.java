package dev.hedgerow.routing;

import com.fasterxml.jackson.databind.JsonNode;

import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.util.ArrayList;
import java.util.HexFormat;
import java.util.List;

/**
 * Chained block hashes of a prompt's leading tokens, for prefix-cache affinity (the idea of vLLM's automatic prefix
 * caching): the prompt's first {@code blockTokens × maxBlocks} tokens are cut into full blocks of
 * {@code blockTokens}, and block {@code i}'s hash is {@code SHA-256(hash[i-1] ‖ tokens of block i)}, truncated to
 * 64 bits and written as 16 hex digits. Because each hash covers everything before it, two requests that share
 * their first {@code k} blocks share exactly their first {@code k} hashes, and the last hash names the longest
 * prefix. A partial trailing block is not hashed (an engine caches whole blocks only).
 *
 * <p>Chat requests are rendered for hashing as the tools' JSON, then each message's role and content in order,
 * with images replaced by a digest of their URL so a large inline image costs a hash, not a tokenisation.
 * The rendering only needs to be stable, not to match any model's chat template. An optional namespace (for
 * example the alias) seeds the chain so different models never share hashes.
 *
 * <p>Immutable and thread-safe.
 */
public final class PrefixHasher {
    public static final int DEFAULT_BLOCK_TOKENS = 64;
    public static final int DEFAULT_MAX_BLOCKS = 16;

    private final TokenCounter tokens;
    private final int blockTokens;
    private final int maxBlocks;

    public PrefixHasher(TokenCounter tokens, int blockTokens, int maxBlocks) {
        if (blockTokens < 1 || maxBlocks < 1) {
            throw new IllegalArgumentException("blockTokens and maxBlocks must be positive");
        }
        this.tokens = tokens;
        this.blockTokens = blockTokens;
        this.maxBlocks = maxBlocks;
    }

    /** 64-token blocks, at most 16 of them (the first 1024 tokens). */
    public static PrefixHasher defaults(TokenCounter tokens) {
        return new PrefixHasher(tokens, DEFAULT_BLOCK_TOKENS, DEFAULT_MAX_BLOCKS);
    }

    public int blockTokens() {
        return blockTokens;
    }

    public int maxBlocks() {
        return maxBlocks;
    }

    /** Hashes of a chat completion request's leading prompt, shortest prefix first, longest prefix last. */
    public List<String> hashRequest(String namespace, JsonNode request) {
        return hashText(namespace, render(request));
    }

    /** Hashes of a text's leading tokens, shortest prefix first, longest prefix last. */
    public List<String> hashText(String namespace, String text) {
        if (utf8Length(text) < blockTokens) {
            // every BPE token covers at least one byte, so there is no full block to hash: skip the tokenizer
            return List.of();
        }
        int limit = blockTokens * maxBlocks;
        // a few spare tokens: the tokenizer may stop short of the limit to end on a whole character
        int[] ids = tokens.encodeLeading(head(text, limit + 8), limit + 8);
        return hashTokens(namespace, ids);
    }

    /** The characters per token {@link #head} allows: English runs about 4, code 3, CJK 1. */
    static final int HEAD_CHARS_PER_TOKEN = 8;

    /**
     * The start of {@code text} the tokenizer reads for {@code maxTokens} tokens: at most {@value #HEAD_CHARS_PER_TOKEN}
     * characters a token, never ending between the halves of a surrogate pair. The tokenizer stops at the limit only
     * between pieces of its split, and a run of letters is one piece, encoded whole: an 8 MB prompt of one letter
     * took 10 s of CPU before its 400 (found by hunt20). Two texts that share their head hash the same, as two that
     * share less diverge where they differ, as before; a text of longer tokens hashes fewer blocks.
     */
    static String head(String text, int maxTokens) {
        long max = (long) maxTokens * HEAD_CHARS_PER_TOKEN;
        if (text.length() <= max) {
            return text;
        }
        int end = (int) max;
        return text.substring(0, Character.isHighSurrogate(text.charAt(end - 1)) ? end - 1 : end);
    }

    /** Hashes of the full blocks of the given token ids (at most {@code maxBlocks}), longest prefix last. */
    public List<String> hashTokens(String namespace, int[] ids) {
        int blocks = Math.min(maxBlocks, ids.length / blockTokens);
        if (blocks == 0) {
            return List.of();
        }
        List<String> out = new ArrayList<>(blocks);
        MessageDigest sha = sha256();
        byte[] previous = (namespace == null ? "" : namespace).getBytes(StandardCharsets.UTF_8);
        byte[] block = new byte[blockTokens * 4];
        for (int b = 0; b < blocks; b++) {
            for (int i = 0; i < blockTokens; i++) {
                int id = ids[b * blockTokens + i];
                block[i * 4] = (byte) (id >>> 24);
                block[i * 4 + 1] = (byte) (id >>> 16);
                block[i * 4 + 2] = (byte) (id >>> 8);
                block[i * 4 + 3] = (byte) id;
            }
            sha.update(previous);
            sha.update(block);
            byte[] full = sha.digest();
            previous = full;
            out.add(HexFormat.of().formatHex(full, 0, 8));
        }
        return List.copyOf(out);
    }

    /** UTF-8 length of {@code text}; an unpaired surrogate counts 3 bytes, never fewer than the encoder writes. */
    static int utf8Length(String text) {
        int n = 0;
        for (int i = 0; i < text.length(); i++) {
            char c = text.charAt(i);
            if (c < 0x80) {
                n++;
            } else if (c < 0x800) {
                n += 2;
            } else if (Character.isHighSurrogate(c) && i + 1 < text.length()
                    && Character.isLowSurrogate(text.charAt(i + 1))) {
                n += 4;
                i++;
            } else {
                n += 3;
            }
        }
        return n;
    }

    /** The stable text a request's prefix is hashed from. */
    static String render(JsonNode request) {
        StringBuilder sb = new StringBuilder();
        if (request == null || !request.isObject()) {
            return "";
        }
        JsonNode tools = request.get("tools");
        if (tools != null && tools.isArray() && !tools.isEmpty()) {
            sb.append("<tools>").append(tools).append('\n');
        }
        JsonNode messages = request.get("messages");
        if (messages != null && messages.isArray()) {
            for (JsonNode m : messages) {
                sb.append('<').append(m.path("role").asText("")).append(">\n");
                renderContent(sb, m.get("content"));
                JsonNode calls = m.get("tool_calls");
                if (calls != null && calls.isArray()) {
                    sb.append(calls);
                }
                sb.append('\n');
            }
        }
        return sb.toString();
    }

    private static void renderContent(StringBuilder sb, JsonNode content) {
        if (content == null || content.isNull()) {
            return;
        }
        if (content.isTextual()) {
            sb.append(content.asText());
            return;
        }
        if (!content.isArray()) {
            sb.append(content);
            return;
        }
        for (JsonNode part : content) {
            String type = part.path("type").asText("");
            if (part.isTextual()) {
                sb.append(part.asText());
            } else if (type.equals("text") || type.equals("input_text")) {
                sb.append(part.path("text").asText(""));
            } else if (type.equals("image_url") || type.equals("input_image")) {
                String url = part.path("image_url").path("url").asText(part.path("image_url").asText(""));
                byte[] digest = sha256().digest(url.getBytes(StandardCharsets.UTF_8));
                sb.append("<image ").append(HexFormat.of().formatHex(digest, 0, 8)).append('>');
            } else {
                sb.append(part);
            }
        }
    }

    private static MessageDigest sha256() {
        try {
            return MessageDigest.getInstance("SHA-256");
        } catch (NoSuchAlgorithmException e) {
            throw new IllegalStateException("SHA-256 is required of every JVM", e);
        }
    }
}
