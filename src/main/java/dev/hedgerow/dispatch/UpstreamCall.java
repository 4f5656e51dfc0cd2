package dev.hedgerow.dispatch;

import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.hedgerow.api.ChatRequest;
import dev.hedgerow.api.EmbeddingsRequest;
import dev.hedgerow.api.Json;
import dev.hedgerow.dispatch.Attempt.Kind;
import dev.hedgerow.routing.Candidate;
import dev.hedgerow.upstream.UpstreamRequest;

import java.util.List;

/**
 * The request an attempt sends upstream: the chat (or embeddings) body for the route's model (streamed with usage
 * when the client streams), for a resume the continuation of the {@link Transcript} with only the tokens left, and the headers and
 * URL of the provider. Stateless.
 */
final class UpstreamCall {
    private UpstreamCall() {
    }

    /** The continuation methods a route supports, in the order a resume tries them. */
    static List<ContinuationMethod> methods(Candidate c) {
        return ContinuationMethod.forRoute(c.provider().dialect(), c.route().can("prefill", true));
    }

    /**
     * Builds the attempt's request. For an inexact resume it also gives the attempt the {@link OverlapTrimmer} that
     * cuts what the route repeats of the transcript. A stream asks for usage ({@code stream_options.include_usage})
     * unless the client sent no {@code stream_options} and {@code withoutStreamOptions} (the route's provider refuses
     * the field): then it has none, and the gateway counts the usage itself; {@link Attempt#addedStreamOptions} says
     * whether the gateway added the field the client did not send. An embeddings attempt is told the vectors' form
     * its request asks for ({@link Attempt#vectors}), in which its answer's vectors reach the client.
     */
    /**
     * The tokens an instruction-style resume is given beyond what is left, for the overlap it may re-emit: as many
     * as the trimmer's 64-character window holds at one character a token (CJK, digits): at 16, a resume of Chinese
     * text spent its budget re-emitting what the trimmer dropped and ended with length short of max_tokens (found by
     * hunt19). The gateway ends the answer at max_tokens itself, so the room never lets it run over.
     */
    static final int OVERLAP_TOKENS = 64;

    static UpstreamRequest build(DispatchRequest req, boolean stream, Attempt a, Transcript transcript,
                                 boolean withoutStreamOptions) {
        Candidate c = a.cand;
        ObjectNode body = req.request().upstreamBody(c.route().model());
        if (body.has(UpstreamReplies.STREAM_OPTIONS) && body.get(UpstreamReplies.STREAM_OPTIONS).isNull()) {
            // null is OpenAI's "not set": as if absent, so a route that refuses the field is sent none (hunt17)
            body.remove(UpstreamReplies.STREAM_OPTIONS);
        }
        if (stream) {
            body.put("stream", true);
            boolean clientSent = body.has(UpstreamReplies.STREAM_OPTIONS);
            if (clientSent || !withoutStreamOptions) {
                ObjectNode so = clientSent && body.get(UpstreamReplies.STREAM_OPTIONS).isObject()
                        ? (ObjectNode) body.get(UpstreamReplies.STREAM_OPTIONS)
                        : body.putObject(UpstreamReplies.STREAM_OPTIONS);
                so.put("include_usage", true);
                a.addedStreamOptions = !clientSent;
            }
        }
        a.askedTokens = req.request().maxTokens();
        if (req.request() instanceof EmbeddingsRequest e) {
            a.vectors = EmbeddingsReply.Vectors.asked(e.base64());
        }
        if (a.kind == Kind.RESUME && !transcript.isEmpty()) {
            a.continuesContent = transcript.content.length() > 0;
            List<String> stops = req.request() instanceof ChatRequest chat ? chat.stops() : List.of();
            if (a.continuesContent && !stops.isEmpty()) {
                int reach = stops.stream().mapToInt(String::length).max().orElse(1) - 1;
                a.seamStops = stops;
                a.seamTail = transcript.content.substring(Math.max(0, transcript.content.length() - reach));
                a.seamNew = new StringBuilder();
            }
            ObjectNode continued = a.method.apply(body, transcript);
            if (!a.method.exact()) {
                boolean reasoningPhase = transcript.inReasoning();
                a.trimReasoning = reasoningPhase;
                // the text the model is shown as its own so far, which it may re-emit: with the client's own
                // assistant prefill, that prefill and then what was delivered (found by hunt4: trimmed against the
                // delivered text alone, a short delivery's re-emission went to the client twice)
                a.trimmer = new OverlapTrimmer(ChatRequest.contentText(continued.get(reasoningPhase
                        ? "reasoning_content" : "content")), 64, 4, reasoningPhase ? List.of() : stops);
            }
            Integer max = req.request().maxTokens();
            if (max != null) {
                // a continuation's max_tokens counts only new tokens (vLLM, OpenAI): one delta is one token, or more
                // where the gateway's tokenizer counts more in the text (Transcript.answerTokens); the answer's only,
                // as the output guard counts them (ClientOutput.MAX_OUTPUT_CHARS says why)
                int left = Math.max(1, max - transcript.answerTokens());
                if (!a.method.exact() && !a.trimReasoning) {
                    // the model is asked to go on and may first re-emit the end of what it was shown, which the
                    // trimmer drops but its provider counts: room for that overlap, and the gateway ends the answer
                    // at max_tokens itself (the trimmer releases no more, Dispatch.relay ends it); without it the
                    // answer ended early with length (hunt18)
                    a.trimmer.capReleased(left);
                    left += OVERLAP_TOKENS;
                    a.capsAnswer = true;
                }
                a.askedTokens = left;
                body.remove("max_tokens");
                body.put(body.has("max_completion_tokens") ? "max_completion_tokens" : "max_tokens", left);
            }
        }
        return UpstreamRequest.post(c.provider().baseUrl(), req.request().upstreamPath(), c.provider().apiKey(), stream,
                Json.bytes(body), req.settings().timeouts().connect(), "x-request-id", a.leaseId);
    }
}
