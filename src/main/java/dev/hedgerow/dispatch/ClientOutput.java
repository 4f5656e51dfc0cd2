package dev.hedgerow.dispatch;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.JsonNodeFactory;
import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.hedgerow.api.ApiError;
import dev.hedgerow.api.Json;
import dev.hedgerow.api.Sse;
import dev.hedgerow.dispatch.Attempt.Kind;
import dev.hedgerow.state.UsageSample;

import java.nio.charset.StandardCharsets;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * Everything a dispatch writes to its {@link ClientSink}: the response head and headers, the streamed chunks
 * rewritten to the gateway's identity (a resumed attempt's overlap trimmed, its repeated role dropped) and recorded
 * in the {@link Transcript}, the closing chunk, the in-stream error event, and the whole answers (success, a
 * passed-through client error, exhaustion). Also the output guard's limit. It decides nothing: the dispatch calls
 * it, under its lock, once it has decided.
 */
final class ClientOutput {
    /**
     * Output guard: the most text (content, reasoning, tool-call arguments) one attempt may deliver. 4 Mi chars is
     * about a million tokens, beyond any model's output limit: only an upstream that never stops gets there, and
     * the cap bounds the transcript's memory. The limits under {@code max_tokens} count the answer only, not its
     * reasoning: providers differ on whether {@code max_tokens} bounds reasoning (vLLM and OpenAI's
     * {@code max_completion_tokens} count it; DeepSeek's reasoner once did not, nor does the simulator), and a valid
     * answer whose reasoning ran past {@code max_tokens} was cut and its route cooled down (found by hunt17).
     */
    static final long MAX_OUTPUT_CHARS = 4L * 1024 * 1024;
    /** With max_tokens set the cap is this many chars per token (8x an average token) plus the slack below. */
    static final int OUTPUT_CHARS_PER_TOKEN = 32;
    static final int OUTPUT_SLACK_CHARS = 4096;
    static final int OUTPUT_TOKEN_SLACK = 16;

    private final DispatchRequest req;
    private final ClientSink sink;
    private final boolean stream;
    private final Transcript transcript;
    /** The choices the answer holds ({@code n}): the output guard's limits are per choice. */
    private final int choices;
    private boolean headSent;
    /** Writes to the client since the head (chunks and comments): a count, so the dispatch can tell a quiet spell. */
    private long writes;

    ClientOutput(DispatchRequest req, ClientSink sink, boolean stream, Transcript transcript) {
        this.req = req;
        this.sink = sink;
        this.stream = stream;
        this.transcript = transcript;
        this.choices = req.request().choices();
    }

    /** How many times a chunk or comment was written to the client so far. */
    long writes() {
        return writes;
    }

    /** True once the stream's response head went out: from then on failures end the stream with an error event. */
    boolean headSent() {
        return headSent;
    }

    /**
     * The output guard's cap on the answer one attempt may deliver (its reasoning aside), in chars: per choice asked
     * for, at most {@link #MAX_OUTPUT_CHARS} in all.
     */
    long outputLimit() {
        Integer max = req.request().maxTokens();
        return max == null ? MAX_OUTPUT_CHARS
                : Math.min(MAX_OUTPUT_CHARS, ((long) max * OUTPUT_CHARS_PER_TOKEN + OUTPUT_SLACK_CHARS) * choices);
    }

    /**
     * The output guard's cap on the answer's tokens one attempt may stream: what it asked for plus a quarter and
     * {@link #OUTPUT_TOKEN_SLACK} (a provider may split a token over two deltas now and then), for each choice asked
     * for, or none without max_tokens. A provider that ignores max_tokens is cut here long before the char cap.
     */
    long tokenLimit(Attempt a) {
        return a.askedTokens == null ? Long.MAX_VALUE
                : (a.askedTokens + a.askedTokens / 4 + OUTPUT_TOKEN_SLACK) * (long) choices;
    }

    /**
     * Counts one more delta of the attempt; true when the attempt is now over {@link #MAX_OUTPUT_CHARS} in all, or
     * its answer (not its reasoning) over {@link #outputLimit()} or {@link #tokenLimit}.
     */
    boolean overLimit(Attempt a, UpstreamReplies.Delta d) {
        int answerChars = d.answerChars();   // serializes a tool call's delta: once
        a.outputChars += d.reasoning().length() + answerChars;
        if (d.carriesText()) {
            a.outputTokens++;
        }
        a.answerChars += answerChars;
        if (d.answerToken()) {
            a.answerTokens++;
        }
        return a.outputChars > MAX_OUTPUT_CHARS || a.answerChars > outputLimit() || a.answerTokens > tokenLimit(a);
    }

    /** Which of the output guard's limits the attempt is over ({@link #overLimit}), in words. */
    String limitPassed(Attempt a) {
        if (a.answerTokens > tokenLimit(a)) {
            return tokenLimit(a) + " tokens (max_tokens " + a.askedTokens + ")";
        }
        return (a.outputChars > MAX_OUTPUT_CHARS ? MAX_OUTPUT_CHARS : outputLimit()) + " characters";
    }

    /**
     * The stream's head goes out before any attempt has content (the group's head hold passed): 200 and the stream
     * headers that do not depend on the winner, then a keep-alive comment, so the client and any proxy on the way
     * hear from the stream at once. No route is named, as none has won yet: the chunks name the one that serves.
     */
    void openStreamEarly() {
        headSent = true;
        sink.head(200, responseHeaders(null, "text/event-stream"));
        keepAlive();
    }

    /**
     * The stream commits to its first winner: the response head (unless it went out early), then the content-less
     * chunks it held.
     */
    void commitStream(Attempt a) {
        if (!headSent) {
            headSent = true;
            sink.head(200, responseHeaders(a, "text/event-stream"));
        }
        for (ObjectNode p : a.pending) {
            if (p.path("choices").path(0) instanceof ObjectNode choice) {
                noBlankFinish(choice, null);   // a pending chunk holds no finish (Dispatch.streamEvent)
            }
            JsonNode d = p.path("choices").path(0).path("delta");
            if (d.has("role")) {
                transcript.roleSent = true;
            }
            writeChunk(a, p);
        }
        a.pending.clear();
    }

    /** What {@link #emitChunk} does with a chunk's tool-call deltas. */
    enum ToolDeltas {
        /** The chunk carries none. */
        NONE,
        /**
         * Held by the attempt until text or its finish follows (then sent, in the order they came): while nothing of
         * a call reached the client, a stream that breaks mid-call can still be resumed from the text before it, or
         * asked afresh, as a call's arguments cannot be continued by another model.
         */
        HOLD,
        /**
         * Sent at once, as a provider streams them: nothing could resume the stream if it broke now (resume off,
         * the resumes spent, or a call already out), so holding them would only keep the client waiting.
         */
        SEND
    }

    /** The winner's chunk, as delivered: trimmed if it resumes inexactly, recorded in the transcript, then sent. */
    void emitChunk(Attempt a, ObjectNode node, UpstreamReplies.Delta d, ToolDeltas tools) {
        String content = d.content();
        String reasoning = d.reasoning();
        String finish = d.finish();
        ObjectNode choice = (ObjectNode) node.get("choices").get(0);
        noBlankFinish(choice, finish);
        ObjectNode delta = choice.has("delta") && choice.get("delta").isObject() ? (ObjectNode) choice.get("delta")
                : choice.putObject("delta");
        boolean hasTools = tools != ToolDeltas.NONE;
        int heldBefore = a.heldTools.size();
        if (tools == ToolDeltas.HOLD) {
            holdTools(a, node, delta);
        } else if (tools == ToolDeltas.SEND) {
            // any call held before goes out first; this chunk's call reaches the client now
            releaseTools(a);
            transcript.toolCallsSent(delta.get("tool_calls"));
        }
        String outContent = content;
        String outReasoning = reasoning;
        boolean deciding = a.kind == Kind.RESUME && a.trimmer != null && !a.trimmer.decided();
        if (a.kind == Kind.RESUME) {
            delta.remove("role");
            if (deciding) {
                if (a.trimReasoning) {
                    outReasoning = a.trimmer.feed(reasoning);
                    if (!content.isEmpty() || finish != null || hasTools) {
                        outReasoning = outReasoning + a.trimmer.flush();
                    }
                } else {
                    holdLogprobs(a, choice, content);
                    outContent = a.trimmer.feed(content);
                    if (finish != null || hasTools) {
                        outContent = outContent + a.trimmer.flush("stop".equals(finish));
                    }
                    if (a.trimmer.decided()) {
                        releaseLogprobs(a, choice);
                    }
                }
            }
        } else if (delta.has("role")) {
            if (transcript.roleSent) {
                delta.remove("role");
            }
            transcript.roleSent = true;
        }
        boolean dropReasoning = a.continuesContent && !outReasoning.isEmpty();
        if (dropReasoning) {
            // reasoning after the answer's content began, in a resume: the model thinking about the continuation
            // (the gateway's instruction quoted in it), which an unbroken stream never sends (hunt19); a sign of life
            // for the stall watch all the same (Dispatch.relay)
            outReasoning = "";
            delta.remove("reasoning_content");
            delta.remove("reasoning");
        }
        if (a.seamTail != null && !outContent.isEmpty() && seamStop(a, outContent)) {
            outContent = "";
            a.stoppedAtSeam = true;
        }
        if (!outContent.equals(content)) {
            delta.put("content", outContent);
        }
        if (!outReasoning.equals(reasoning) && !dropReasoning) {
            delta.put(delta.has("reasoning_content") ? "reasoning_content" : "reasoning", outReasoning);
        }
        if (!outReasoning.isEmpty()) {
            sameReasoningField(delta, outReasoning);
        }
        boolean text = !outContent.isEmpty() || !outReasoning.isEmpty();
        if (text || finish != null) {
            // text after a call (rare) or the end: the calls held before this chunk go out first, in the order they
            // came; one this chunk held goes after its text, which the model wrote before it (an inexact resume's
            // trimmer releases held text with the chunk that ends its deciding: the call went out ahead of "check.";
            // found by hunt20), with the next text or the stream's end
            releaseTools(a, heldBefore);
        }
        transcript.content.append(outContent);
        transcript.reasoning.append(outReasoning);
        if (deciding) {
            // the trimmer's held pieces went out as one: each that reached the client is a token delivered; a
            // piece of the field it does not trim is this chunk's own
            int released = a.trimmer.decided() ? a.trimmer.releasedPieces() : 0;
            transcript.deltas += released;
            String trimmed = a.trimReasoning ? reasoning : content;
            String other = a.trimReasoning ? content : reasoning;
            // the other field's text is a delta of its own when the trimmed one has none; content beside trimmed
            // reasoning always counts, as the answer's budget must not miss it (review19)
            boolean otherPiece = !other.isEmpty() && (a.trimReasoning || trimmed.isEmpty());
            if (otherPiece) {
                transcript.deltas++;
            }
            transcript.reasoningDeltas += a.trimReasoning ? released : otherPiece ? 1 : 0;
        } else if (text) {
            transcript.deltas++;
            if (outContent.isEmpty()) {
                transcript.reasoningDeltas++;
            }
        }
        if (finish != null) {
            transcript.finishReason = finish;
            holdFinish(a, choice);
        }
        if (d.other()) {   // read once, with the delta (UpstreamReplies.choice)
            transcript.otherSent(delta);
        }
        if (!text && !d.other() && tools != ToolDeltas.SEND && delta.size() <= 1 && !delta.has("role")) {
            return;
        }
        writeChunk(a, node);
    }

    /**
     * Whether {@code text}, a resume's new content, ends a stop sequence that began in the text delivered before the
     * resume (hunt19): its provider matches {@code stop} in what it generates only, so "EN" delivered and "D and more"
     * continued by prefill reached the client as "END and more". The text is then not delivered (everything in it up
     * to the stop's end is the stop; the part of the stop delivered before cannot be taken back) and the answer ends
     * with {@code stop}. Once the new text reaches past any stop's length no stop can straddle the seam, and the
     * provider's own matching is left to do the rest.
     */
    static boolean seamStop(Attempt a, String text) {
        a.seamNew.append(text);
        String joined = a.seamTail + a.seamNew;
        int tail = a.seamTail.length();
        int reach = 0;
        for (String stop : a.seamStops) {
            reach = Math.max(reach, stop.length() - 1);
            for (int i = joined.indexOf(stop); i >= 0 && i < tail; i = joined.indexOf(stop, i + 1)) {
                if (i + stop.length() > tail) {
                    return true;
                }
            }
        }
        if (a.seamNew.length() >= reach) {
            a.seamTail = null;
            a.seamNew = null;
        }
        return false;
    }

    /**
     * A chunk of a stream of several choices ({@code n > 1}), as delivered: sent as the provider wrote it, each choice
     * with its index, role, text, tool calls, logprobs and finish, its identity rewritten; its text recorded per
     * choice ({@link Choices}) and in the transcript (what the stream as a whole delivered). Nothing is held back, as
     * nothing could resume such a stream, but for the finishes of the chunk that completes the last choice
     * ({@code completes}): those wait for the closing chunk, as a single choice's finish does.
     */
    void emitChoices(Attempt a, ObjectNode node, boolean completes) {
        boolean send = false;
        for (JsonNode c : node.path("choices")) {
            if (!(c instanceof ObjectNode choice)) {
                continue;
            }
            UpstreamReplies.Delta d = UpstreamReplies.choice(choice);
            noBlankFinish(choice, d.finish());
            a.choices.delivered(choice.path("index").asInt(-1), d.content(), d.reasoning());
            transcript.content.append(d.content());
            transcript.reasoning.append(d.reasoning());
            if (d.carriesText()) {
                transcript.deltas++;
            }
            if (d.hasTools()) {
                transcript.toolCallsSent(d.toolCalls());
            }
            if (d.other()) {
                transcript.otherSent(choice.path("delta"));
            }
            boolean finishSent = d.finish() != null;
            if (completes && finishSent) {
                ObjectNode held = choice.deepCopy();
                held.putObject("delta");
                held.putNull("logprobs");   // this chunk's logprobs go with its text, sent now
                a.choices.heldFinishes.add(held);
                choice.putNull("finish_reason");
                choice.remove("stop_reason");
                finishSent = false;
            }
            JsonNode delta = choice.path("delta");
            send |= d.substantive() || finishSent || delta.has("role") || delta.size() > 1
                    || choice.hasNonNull("logprobs");
        }
        if (send) {
            writeChunk(a, node);
        }
    }

    /**
     * The reasoning goes to the client in the field it first came in ({@code reasoning_content}, or vLLM's newer
     * {@code reasoning}), whichever field the route that resumed the stream uses: a client reading one field lost
     * the rest of the reasoning at the seam (found by hunt18).
     */
    private void sameReasoningField(ObjectNode delta, String text) {
        String field = delta.hasNonNull("reasoning_content") ? "reasoning_content" : "reasoning";
        if (transcript.reasoningField == null) {
            transcript.reasoningField = field;
        } else if (!field.equals(transcript.reasoningField)) {
            delta.remove(field);
            delta.put(transcript.reasoningField, text);
        }
    }

    /**
     * While an inexact resume's trimmer holds content, the logprobs of each piece it holds are kept with it (the chunk
     * goes out without them), and {@link #releaseLogprobs} puts those of the pieces that reach the client on the chunk
     * that releases them: they were dropped with their chunks, so a client asking for logprobs had none for the held
     * text (found by hunt17 and hunt18).
     */
    private static void holdLogprobs(Attempt a, ObjectNode choice, String content) {
        JsonNode logprobs = choice.remove("logprobs");
        if (!content.isEmpty()) {
            a.heldLogprobs.add(logprobs == null ? null : logprobs.get("content"));
        }
    }

    /** Puts the logprobs of the held pieces that reached the client on {@code choice} (see {@link #holdLogprobs}). */
    private static void releaseLogprobs(Attempt a, ObjectNode choice) {
        com.fasterxml.jackson.databind.node.ArrayNode entries = null;
        for (int i = 0; i < a.heldLogprobs.size(); i++) {
            JsonNode piece = a.heldLogprobs.get(i);
            if (piece != null && piece.isArray() && a.trimmer.released(i)) {
                if (entries == null) {
                    entries = choice.putObject("logprobs").putArray("content");
                }
                int cut = a.trimmer.cutInto(i);
                entries.addAll(cut == 0 ? (ArrayNode) piece : withoutLeading(piece, cut, a.trimmer.pieceLength(i)));
            }
        }
        a.heldLogprobs.clear();
    }

    /**
     * The logprobs of a piece whose first {@code chars} characters the trimmer dropped, as the client gets it: the
     * tokens wholly inside the dropped part go, and the one the cut falls inside keeps only its text past the cut
     * ({@code token} and {@code bytes}; its logprob and alternatives are the whole token's), so the tokens spell the
     * content, as OpenAI's always do (found by hunt19: "g sleeps" came with logprobs for " dog"). Left whole when its
     * tokens do not spell the piece (a token of part of a character's bytes).
     */
    private static ArrayNode withoutLeading(JsonNode piece, int chars, int length) {
        int spelt = 0;
        for (JsonNode entry : piece) {
            spelt += entry.path("token").asText("").length();
        }
        if (spelt != length) {
            return (ArrayNode) piece;
        }
        ArrayNode out = JsonNodeFactory.instance.arrayNode();
        int at = 0;
        for (JsonNode entry : piece) {
            String token = entry.path("token").asText("");
            int end = at + token.length();
            if (end > chars && at >= chars) {
                out.add(entry);
            } else if (end > chars) {
                String rest = token.substring(chars - at);
                if (Character.isLowSurrogate(rest.charAt(0)) || !entry.isObject()) {
                    return (ArrayNode) piece;
                }
                ObjectNode cut = ((ObjectNode) entry).deepCopy();
                cut.put("token", rest);
                if (cut.has("bytes")) {
                    ArrayNode bytes = cut.putArray("bytes");
                    for (byte b : rest.getBytes(StandardCharsets.UTF_8)) {
                        bytes.add(b & 0xff);
                    }
                }
                out.add(cut);
            }
            at = end;
        }
        return out;
    }

    /** A blank {@code finish_reason} is none ({@link UpstreamReplies#finishReason}): the client gets null, as OpenAI sends. */
    static void noBlankFinish(ObjectNode choice, String finish) {
        if (finish == null && choice.hasNonNull("finish_reason")) {
            choice.putNull("finish_reason");
        }
    }

    /** Moves the delta's tool calls into a chunk of their own that the attempt holds until it finishes. */
    private static void holdTools(Attempt a, ObjectNode node, ObjectNode delta) {
        ObjectNode held = node.deepCopy();
        ObjectNode heldChoice = (ObjectNode) held.get("choices").get(0);
        heldChoice.putObject("delta").set("tool_calls", delta.remove("tool_calls"));
        heldChoice.putNull("finish_reason");
        heldChoice.remove("stop_reason");
        a.heldTools.add(held);
    }

    /** Sends the tool calls the attempt holds: from now on the client has (part of) a call. */
    private void releaseTools(Attempt a) {
        releaseTools(a, a.heldTools.size());
    }

    /** Sends the first {@code n} tool calls the attempt holds, in the order they came. */
    private void releaseTools(Attempt a, int n) {
        List<ObjectNode> first = a.heldTools.subList(0, Math.min(n, a.heldTools.size()));
        for (ObjectNode held : first) {
            transcript.toolCallsSent(held.path("choices").path(0).path("delta").get("tool_calls"));
            writeChunk(a, held);
        }
        first.clear();
    }

    /**
     * Keeps the finish of the attempt's choice for the closing chunk and sends the rest now: the text the finishing
     * chunk carried goes out at once, its finish_reason only with the stream's end, so the closing chunk (which
     * carries the attempt trail) is a chunk with a choice, as OpenAI's last chunk is, and not an empty one that a
     * client reading {@code choices[0]} of every chunk would trip on.
     */
    private static void holdFinish(Attempt a, ObjectNode choice) {
        ObjectNode held = choice.deepCopy();
        held.putObject("delta");
        held.putNull("logprobs");   // this chunk's logprobs go with its text, sent now
        a.heldFinish = held;
        choice.putNull("finish_reason");
        choice.remove("stop_reason");
    }

    /** Sends what an inexact resume's overlap trimmer still holds (the stream finished before it decided). */
    void flushTrimmer(Attempt a) {
        if (a.trimmer != null && !a.trimmer.decided()) {
            String rest = a.trimmer.flush();
            if (!rest.isEmpty()) {
                ObjectNode chunk = baseChunk(a);
                ObjectNode choice = chunk.putArray("choices").addObject().put("index", 0);
                ObjectNode delta = choice.putObject("delta");
                delta.put(a.trimReasoning ? transcript.reasoningField() : "content", rest);
                if (!a.trimReasoning) {
                    releaseLogprobs(a, choice);
                }
                if (!choice.has("logprobs")) {
                    choice.putNull("logprobs");
                }
                choice.putNull("finish_reason");
                (a.trimReasoning ? transcript.reasoning : transcript.content).append(rest);
                writeChunk(a, chunk);
            }
        }
    }

    /**
     * Ends a complete stream: the closing chunk with the finish (and the attempt trail), then, when {@code billed}
     * is not null (the client asked for {@code include_usage}), OpenAI's usage chunk with no choices (which then
     * carries the trail, being the last), then [DONE].
     */
    void endStream(Attempt a, UsageSample billed, JsonNode usageDetails, ArrayNode trail) {
        releaseTools(a);
        ObjectNode finish = a.heldFinish;
        if (finish == null && a.choices == null) {
            finish = JsonNodeFactory.instance.objectNode().put("index", 0);
            finish.putObject("delta");
            finish.put("finish_reason", a.finishReason);
        }
        ObjectNode chunk = baseChunk(a);
        if (finish != null) {
            chunk.putArray("choices").add(finish);
        } else {
            chunk.putArray("choices").addAll(a.choices.heldFinishes);
        }
        if (billed != null) {
            if (!chunk.path("choices").isEmpty()) {   // a stream of fewer choices than asked has no finish held
                usageOfAChunk(chunk);
                write(Sse.data(chunk));
            }
            chunk = baseChunk(a);
            chunk.putArray("choices");
            Billing.putUsage(chunk, billed, usageDetails);
        }
        chunk.set("attempt_trail", trail);
        sink.end(Sse.dataThenDone(chunk));
    }

    /** Ends the stream with an error event carrying the trail, then [DONE]. */
    void endWithError(String code, String message, ArrayNode trail) {
        endWithError(new ApiError(502, "server_error", code, message, null, null).toNode(), trail);
    }

    /** Ends the stream with the error envelope as its last event, with the request id and the trail, then [DONE]. */
    void endWithError(ObjectNode envelope, ArrayNode trail) {
        envelope.put("id", req.requestId());
        envelope.set("attempt_trail", trail);
        sink.end(Sse.dataThenDone(envelope));
    }

    /** A comment that keeps the client's connection (and any proxy on the way) alive while nothing else is sent. */
    void keepAlive() {
        write(Sse.KEEP_ALIVE);
    }

    private void write(byte[] bytes) {
        writes++;
        sink.write(bytes);
    }

    /**
     * A chunk before the usage one: the provider's usage is the gateway's to report (once, in the last chunk); with
     * {@code include_usage} every other chunk says {@code usage: null}, as OpenAI's do.
     */
    private void usageOfAChunk(ObjectNode node) {
        if (req.request().includeUsage()) {
            node.putNull("usage");
        } else {
            node.remove("usage");
        }
    }

    /**
     * Gives a chunk or whole answer the gateway's identity: request id, its {@code object} type
     * ({@code chat.completion.chunk} or {@code chat.completion}, whatever the provider wrote), creation time, model and
     * provider.
     */
    void rewriteIdentity(Attempt a, ObjectNode node, String object) {
        for (String field : KEPT_FROM_UPSTREAM) {
            if (node.hasNonNull(field)) {
                if (a.keptFields == null) {
                    a.keptFields = JsonNodeFactory.instance.objectNode();
                }
                a.keptFields.set(field, node.get(field));
            }
        }
        node.put("id", req.requestId());
        node.put("object", object);
        node.put("created", req.createdEpochSeconds());
        node.put("model", a.cand.route().model());
        node.put("provider", a.cand.route().provider());
    }

    /** Sends a whole (non-streamed) answer, already rewritten and billed. */
    void whole(Attempt a, ObjectNode answer, ArrayNode trail) {
        whole(a, Json.bytes(answer), trail);
    }

    /** Sends a whole (non-streamed) answer already written as JSON (an embeddings answer, relayed). */
    void whole(Attempt a, byte[] answer, ArrayNode trail) {
        Map<String, String> headers = responseHeaders(a, "application/json");
        headers.put("x-hedgerow-attempts", Json.write(trail));
        sink.head(200, headers);
        sink.end(answer);
    }

    /**
     * The retry advice of a provider's error that reaches the client as it was sent: every header the OpenAI SDKs
     * read to decide whether and when to retry (they prefer retry-after-ms to Retry-After). CORS exposes each
     * ({@code quarkus.http.cors.exposed-headers}).
     */
    static final List<String> PROVIDER_RETRY_HEADERS = List.of("retry-after", "retry-after-ms", "x-should-retry");

    /**
     * Sends the attempt's client error as the provider sent it (with its retry headers), its API key redacted; on a
     * stream whose head already went out (early), as its error event instead.
     */
    void passThrough(Attempt a, byte[] raw, ArrayNode trail) {
        byte[] bytes = redactKey(raw, a.cand.provider().apiKey());
        String foreign = foreignErrorMessage(bytes, a.status, a.headers.get("content-type"));
        boolean envelope = foreign == null;
        if (!envelope) {
            // a proxy's HTML page, plain text, {"detail": ...}: the client gets it in the envelope its SDK reads
            bytes = Json.bytes(new ApiError(a.status, a.status >= 500 ? "server_error" : "invalid_request_error",
                    "upstream_error", foreign, null, null).toNode());
        }
        if (headSent) {
            endWithError(parsedEnvelope(bytes), trail);
            return;
        }
        Map<String, String> headers = new LinkedHashMap<>();
        headers.put("content-type", envelope ? a.headers.getOrDefault("content-type", "application/json")
                : "application/json");
        headers.put("x-hedgerow-request-id", req.requestId());
        headers.put("x-hedgerow-route", a.cand.route().id());
        headers.put("x-hedgerow-attempts", Json.write(trail));
        for (String h : PROVIDER_RETRY_HEADERS) {
            String v = a.headers.get(h);
            if (v != null) {
                headers.put(h, v);
            }
        }
        sink.head(a.status, headers);
        sink.end(bytes);
    }

    /**
     * Sends the error answer for a request no route could serve, with its retry headers; on a stream whose head
     * already went out (early), as its error event instead.
     */
    void exhausted(ApiError err, ArrayNode trail) {
        if (headSent) {
            endWithError(err.toNode(), trail);
            return;
        }
        Map<String, String> headers = new LinkedHashMap<>();
        headers.put("content-type", "application/json");
        headers.putAll(err.retry().headers());
        headers.put("x-hedgerow-request-id", req.requestId());
        headers.put("x-hedgerow-attempts", Json.write(trail));
        sink.head(err.status(), headers);
        sink.end(Json.bytes(err.toNode()));
    }

    /**
     * Null when {@code body} is an OpenAI error envelope (a JSON object holding an {@code error} object); otherwise
     * the message for the envelope it is wrapped in: the body's own {@code error}, {@code message} or {@code detail}
     * text when it is JSON that has one, else what kind of body came (an HTML page's text is not relayed).
     */
    static String foreignErrorMessage(byte[] body, int status, String contentType) {
        try {
            JsonNode n = Json.parse(body);
            if (n != null && n.path("error").isObject()) {
                return null;
            }
            for (String f : new String[]{"error", "message", "detail"}) {
                if (n != null && n.path(f).isTextual()) {
                    return "The provider answered HTTP " + status + ": " + UpstreamReplies.shorten(n.path(f).asText());
                }
            }
        } catch (java.io.IOException e) {
            // not JSON: described below
        }
        String kind = contentType == null || contentType.isBlank() ? "an unlabelled" : "a " + contentType.split(";")[0];
        return "The provider answered HTTP " + status + " with " + kind + " body, not an OpenAI error.";
    }

    /** The error envelope {@code body} holds, which {@link #foreignErrorMessage} (or the wrapping) made sure of. */
    private static ObjectNode parsedEnvelope(byte[] body) {
        try {
            return (ObjectNode) Json.parse(body);
        } catch (java.io.IOException e) {
            throw new java.io.UncheckedIOException("an error envelope that was read once did not read again", e);
        }
    }

    /** A provider's error may quote the key it was sent (some 401s do): that key never reaches the client. */
    static byte[] redactKey(byte[] body, String key) {
        if (key == null || key.length() < 8) {
            return body;
        }
        String text = new String(body, StandardCharsets.UTF_8);
        return text.contains(key) ? text.replace(key, "[redacted]").getBytes(StandardCharsets.UTF_8) : body;
    }

    private void writeChunk(Attempt a, ObjectNode node) {
        usageOfAChunk(node);
        rewriteIdentity(a, node, "chat.completion.chunk");
        write(Sse.data(node));
    }

    private ObjectNode baseChunk(Attempt a) {
        ObjectNode chunk = JsonNodeFactory.instance.objectNode();
        chunk.put("id", req.requestId());
        chunk.put("object", "chat.completion.chunk");
        chunk.put("created", req.createdEpochSeconds());
        chunk.put("model", a.cand.route().model());
        chunk.put("provider", a.cand.route().provider());
        if (a.keptFields != null) {
            chunk.setAll(a.keptFields);
        }
        return chunk;
    }

    /**
     * Fields of the provider's chunks that the gateway's own chunks (the closing one, the usage one) carry too, as
     * the provider's last chunk gave them: OpenAI puts {@code system_fingerprint} (and {@code service_tier}) on
     * every chunk (found by hunt17).
     */
    static final List<String> KEPT_FROM_UPSTREAM = List.of("system_fingerprint", "service_tier");

    /** The head's headers; {@code a} null (a head sent before any attempt won) names no route. */
    private Map<String, String> responseHeaders(Attempt a, String contentType) {
        Map<String, String> h = new LinkedHashMap<>();
        h.put("content-type", contentType);
        if (stream) {
            h.put("cache-control", "no-cache");
            h.put("x-accel-buffering", "no");
        }
        h.put("x-hedgerow-request-id", req.requestId());
        if (a != null) {
            h.put("x-hedgerow-route", a.cand.route().id());
        }
        return h;
    }
}
