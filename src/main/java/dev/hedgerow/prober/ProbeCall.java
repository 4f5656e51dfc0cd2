package dev.hedgerow.prober;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.hedgerow.api.Json;
import dev.hedgerow.catalog.Provider;
import dev.hedgerow.dispatch.UpstreamReplies;
import dev.hedgerow.routing.InterTokenStats;
import dev.hedgerow.time.Cancellable;
import dev.hedgerow.time.Scheduler;
import dev.hedgerow.time.Ticker;
import dev.hedgerow.upstream.SseDecoder;
import dev.hedgerow.upstream.SseEvent;
import dev.hedgerow.upstream.TransportFailure;
import dev.hedgerow.upstream.UpstreamClient;
import dev.hedgerow.upstream.UpstreamHandler;
import dev.hedgerow.upstream.UpstreamRequest;
import io.smallrye.mutiny.Uni;

import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.time.Duration;
import java.time.InstantSource;
import java.util.Map;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.function.Consumer;

/**
 * One probe request straight to a provider (not through the gateway): a chat completion, streamed or not, or an
 * embeddings request ({@code /embeddings}, whole), timed with the ticker, cut off at a hard timeout so one slow
 * provider cannot hold up a probe round. Completes exactly once; the exchange is cancelled on timeout. Thread-safe.
 */
final class ProbeCall implements UpstreamHandler {
    private static final int MAX_BODY = 256 * 1024;
    /**
     * The most an embeddings probe's answer may be: 1 MiB. Its one vector of 4096 floats, as JSON text, is about
     * 80 KB; this holds one of over 50 000 dimensions, and still bounds what a misbehaving server can make a round
     * buffer.
     */
    private static final int MAX_EMBEDDINGS_BODY = 1024 * 1024;

    private final Ticker ticker;
    private final InstantSource clock;
    private final boolean stream;
    /** An embeddings request: its answer is read as one ({@link #embedded}), not as a chat completion. */
    private final boolean embeddings;
    private final Consumer<ProbeOutcome> done;
    private final AtomicBoolean finished = new AtomicBoolean();
    private final long start;
    private final StringBuilder content = new StringBuilder();
    private final ByteArrayOutputStream raw = new ByteArrayOutputStream();
    private final SseDecoder decoder;
    private volatile UpstreamClient.Exchange exchange;
    private volatile Cancellable timer = Cancellable.NONE;
    private int status;
    /** The wait the answer's head asked for, as it holds a route ({@link UpstreamReplies#holdMillis}); 0 for none. */
    private volatile long holdMillis;
    /** The first token, as the gateway counts it: the first content, reasoning or tool call delta, or the finish. */
    private long firstNanos = -1;
    private long lastNanos = -1;
    private long firstReasoningNanos = -1;
    private long firstVisibleNanos = -1;
    /** The silence between the last reasoning chunk and the first visible one: thinking, not decode (as Attempt's). */
    private long thinkingPauseNanos;
    /**
     * The last sign of life, as the gateway's stall watchdog counts it: before the first content any well-formed event
     * or keep-alive comment (garbage is none); after it only progress, a content delta or a finish.
     */
    private long lastLifeNanos;
    private InterTokenStats rhythm = InterTokenStats.FRESH;
    private int deltas;
    private int usageTokens = -1;
    /** The stream's usage, as its last chunk that carried one gave it (null: none). */
    private JsonNode usage;
    private String finishReason;
    private String model;
    /** A {@code finish_reason} arrived: the answer is whole, whether or not the stream is closed after it. */
    private boolean finishSeen;

    private ProbeCall(Ticker ticker, InstantSource clock, boolean stream, boolean embeddings,
                      Consumer<ProbeOutcome> done) {
        this.ticker = ticker;
        this.clock = clock;
        this.stream = stream;
        this.embeddings = embeddings;
        this.done = done;
        this.start = ticker.nanos();
        this.lastLifeNanos = start;
        this.decoder = new SseDecoder(new SseDecoder.Listener() {
            @Override
            public void onEvent(SseEvent e) {
                ProbeCall.this.onEvent(e);
            }

            @Override
            public void onComment(String comment) {
                if (firstNanos < 0) {
                    lastLifeNanos = ticker.nanos();
                }
            }
        }, MAX_BODY);
    }

    /**
     * Sends {@code body}, naming the route's model, to the provider: a chat completion request to
     * {@code /chat/completions}, or with {@code embeddings} an embeddings request (never streamed) to
     * {@code /embeddings}; {@code clock} is what a Retry-After date is read against.
     */
    static Uni<ProbeOutcome> send(UpstreamClient upstream, Scheduler scheduler, Ticker ticker, InstantSource clock,
                                  Provider provider, boolean embeddings, ObjectNode body, Duration timeout) {
        boolean stream = !embeddings && body.path("stream").asBoolean(false);
        String path = embeddings ? "/embeddings" : "/chat/completions";
        return Uni.createFrom().emitter(em -> {
            ProbeCall call = new ProbeCall(ticker, clock, stream, embeddings, em::complete);
            Duration connect = timeout.compareTo(Duration.ofSeconds(5)) < 0 ? timeout : Duration.ofSeconds(5);
            call.timer = scheduler.schedule(timeout, () -> call.timedOut(timeout));
            call.exchange = upstream.send(UpstreamRequest.post(provider.baseUrl(), path,
                    provider.apiKey(), stream, Json.bytes(body), connect, "x-hedgerow-probe", "1"), call);
            if (call.finished.get()) {
                call.exchange.cancel();
            }
        });
    }

    private void finish(ProbeOutcome outcome) {
        if (!finished.compareAndSet(false, true)) {
            return;
        }
        timer.cancel();
        UpstreamClient.Exchange ex = exchange;
        if (ex != null && !(outcome instanceof ProbeOutcome.Answered)) {
            ex.cancel();
        }
        done.accept(outcome);
    }

    /**
     * The probe's time ran out: a route whose 200 stream is still open is slow (or, once it has begun its answer,
     * perhaps stalled: {@link ProbeOutcome.Unfinished}), one that never answered failed, and so did a whole answer
     * (a non-streamed chat completion or an embeddings answer) that had not all come: there is no first token to
     * tell slow from unreachable.
     */
    private synchronized void timedOut(Duration timeout) {
        if (status != 200 || !stream) {
            finish(failed(0, "no answer within " + timeout.toMillis() + " ms", null));
        } else if (firstNanos < 0) {
            finish(new ProbeOutcome.Slow(timeout.toMillis()));
        } else if (finishSeen) {
            // finished but never closed: the answer is whole, as the gateway takes it (Dispatch.stallCheck); the
            // open stream is hung up on
            finish(streamVerdict(lastLifeNanos));
            UpstreamClient.Exchange ex = exchange;
            if (ex != null) {
                ex.cancel();
            }
        } else {
            long now = ticker.nanos();
            finish(new ProbeOutcome.Unfinished(ms(firstNanos - start), deltas, ms(now - firstNanos),
                    ms(now - lastLifeNanos), rhythm, timeout.toMillis()));
        }
    }

    @Override
    public synchronized void onHead(int status, Map<String, String> headers) {
        this.status = status;
        holdMillis = UpstreamReplies.holdMillis(status, headers, clock.instant());
    }

    @Override
    public synchronized void onData(byte[] bytes) {
        if (finished.get()) {
            return;
        }
        if (status != 200 || !stream) {
            int max = embeddings && status == 200 ? MAX_EMBEDDINGS_BODY : MAX_BODY;
            if (raw.size() + bytes.length > max) {
                finish(failed(status, "response larger than " + max + " bytes", null));
                return;
            }
            raw.writeBytes(bytes);
            return;
        }
        try {
            decoder.feed(bytes);
        } catch (SseDecoder.OversizeException e) {
            finish(failed(status, "oversized event", null));
        }
    }

    private void onEvent(SseEvent e) {
        if (e.isDone()) {
            return;
        }
        JsonNode n;
        try {
            n = Json.parse(e.data());
        } catch (IOException ex) {
            return;
        }
        if (firstNanos < 0) {
            lastLifeNanos = ticker.nanos();
        }
        if (n.has("error")) {
            finish(failed(status, "error event in the stream", null));
            return;
        }
        if (n.hasNonNull("model")) {
            model = n.get("model").asText();
        }
        if (n.path("usage").has("completion_tokens")) {
            usage = n.get("usage");
            usageTokens = usage.path("completion_tokens").asInt();
        }
        UpstreamReplies.Delta d = UpstreamReplies.firstChoice(n);
        if (d == null) {
            return;
        }
        long now = ticker.nanos();
        if (d.finish() != null) {
            finishSeen = true;
            finishReason = d.finish();
            lastLifeNanos = now;
            if (firstNanos < 0) {
                // a finish before any token is an empty but complete answer, as the gateway takes it: its first
                // "token" is the finish (a thinking model whose budget ran out before it wrote a visible word)
                firstNanos = now;
                lastNanos = now;
            }
        }
        if (d.substantive()) {
            // the gateway's rule for a first token and for progress (Dispatch.onChunk): content, reasoning in
            // either spelling (reasoning_content, reasoning), or a tool call. A thinking model's reasoning is
            // its first token and its decode, as for live traffic; the pause before its first visible token is
            // its thinking time
            lastLifeNanos = now;
            boolean visible = !d.content().isEmpty() || d.hasTools();
            boolean thinkingEnds = visible && firstVisibleNanos < 0 && firstReasoningNanos >= 0;
            if (firstNanos < 0) {
                firstNanos = now;
            } else if (thinkingEnds) {
                thinkingPauseNanos = now - lastNanos;   // the gateway keeps it out of the rhythm too
            } else if (deltas > 0) {
                rhythm = rhythm.observe(ms(now - lastNanos));
            }
            if (!d.reasoning().isEmpty() && firstReasoningNanos < 0) {
                firstReasoningNanos = now;
            }
            if (visible && firstVisibleNanos < 0) {
                firstVisibleNanos = now;
            }
            lastNanos = now;
            deltas++;
            content.append(d.content());
        }
    }

    @Override
    public synchronized void onEnd() {
        long now = ticker.nanos();
        if (status != 200) {
            finish(failed(status, "http " + status, UpstreamReplies.refusedField(raw.toByteArray())));
            return;
        }
        if (!stream) {
            JsonNode n;
            try {
                n = Json.parse(raw.toByteArray());
            } catch (IOException e) {
                finish(failed(status, "malformed JSON answer", null));
                return;
            }
            if (embeddings) {
                finish(embedded(n, ms(now - start)));
                return;
            }
            String text = n.path("choices").path(0).path("message").path("content").asText("");
            if (text.isEmpty()) {
                finish(failed(status, "empty answer", null));
                return;
            }
            int tokens = n.path("usage").path("completion_tokens").asInt(0);
            long e2e = ms(now - start);
            finish(new ProbeOutcome.Answered(e2e, tokens, 0, e2e, n.hasNonNull("model") ? n.get("model").asText()
                    : null, text, -1));
            return;
        }
        if (firstNanos < 0) {
            finish(failed(status, "stream ended with no content", null));
            return;
        }
        if (!finishSeen) {
            // a clean close mid-answer: the gateway's eof_before_finish, a break it resumes and counts against the
            // route
            finish(failed(status, "stream ended before a finish_reason", null));
            return;
        }
        finish(streamVerdict(now));
    }

    /**
     * A finished stream, judged by the gateway's rule for one that finished with nothing before its finish
     * ({@link UpstreamReplies#lostContent}, as {@code Dispatch.settleEmptyFinish} applies it: the probe asks for no
     * stop sequence, so one end-of-sequence token): a finish announcing a call that never came, or a stop whose usage
     * counts text that never came (the Trifrost failure, a 200 whose content was lost), is no answer and fails the
     * probe, as it fails a live attempt. The prober passed both, closing the breaker of a route still losing its
     * answers (found by hunt22).
     */
    private ProbeOutcome streamVerdict(long endNanos) {
        if (deltas == 0 && UpstreamReplies.lostContent(finishReason, usage, 1)) {
            return failed(status, UpstreamReplies.announcesCall(finishReason)
                    ? "zero_content: the stream finished with " + finishReason + " and no call"
                    : "zero_content: the stream finished with no content while its usage counts "
                    + usage.path("completion_tokens").asLong() + " completion tokens", null);
        }
        return streamAnswer(endNanos);
    }

    /**
     * A whole embeddings answer with status 200, by the rule the gateway relays one by ({@code EmbeddingsReply}): one
     * JSON object with no {@code error} and an embeddings list ({@code data}) is an answer; anything else is no usable
     * answer, a failure as a live attempt's is.
     */
    private ProbeOutcome embedded(JsonNode n, long e2eMs) {
        if (!n.isObject()) {
            return failed(status, "answer is not a JSON object", null);
        }
        if (n.hasNonNull("error")) {
            return failed(status, "error in the answer", null);
        }
        if (!n.path("data").isArray()) {
            return failed(status, "answer without an embeddings list", null);
        }
        return new ProbeOutcome.Embedded(e2eMs, n.hasNonNull("model") ? n.get("model").asText() : null,
                n.path("data").path(0).path("embedding"));
    }

    /** The streamed answer, whole, as it stood at {@code endNanos}. */
    private ProbeOutcome.Answered streamAnswer(long endNanos) {
        int tokens = usageTokens > 0 ? usageTokens : deltas;
        long thinkMs = firstReasoningNanos >= 0 && firstVisibleNanos > firstReasoningNanos
                ? ms(firstVisibleNanos - firstReasoningNanos) : -1;
        long decodeMs = ms(lastNanos - firstNanos - thinkingPauseNanos);
        return new ProbeOutcome.Answered(ms(firstNanos - start), tokens, decodeMs, ms(endNanos - start), model,
                content.toString(), thinkMs);
    }

    @Override
    public void onError(TransportFailure failure) {
        finish(failed(0, "transport: " + failure.kind().name().toLowerCase(java.util.Locale.ROOT), null));
    }

    /** A failure, with the hold its head's status and retry headers asked for (0 before a head, or for none). */
    private ProbeOutcome.Failed failed(int status, String reason, String refused) {
        return new ProbeOutcome.Failed(status, reason, refused, holdMillis);
    }

    private static long ms(long nanos) {
        return Math.max(0, nanos / 1_000_000L);
    }
}
