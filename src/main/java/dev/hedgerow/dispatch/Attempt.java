package dev.hedgerow.dispatch;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.hedgerow.catalog.FailoverCriterion;
import dev.hedgerow.catalog.GroupSettings;
import dev.hedgerow.routing.Candidate;
import dev.hedgerow.routing.InterTokenStats;
import dev.hedgerow.routing.LearnedModels;
import dev.hedgerow.time.Cancellable;
import dev.hedgerow.upstream.SseDecoder;
import dev.hedgerow.upstream.SseEvent;
import dev.hedgerow.upstream.TransportFailure;
import dev.hedgerow.upstream.UpstreamClient;
import dev.hedgerow.upstream.UpstreamHandler;
import io.smallrye.mutiny.Uni;

import java.io.ByteArrayOutputStream;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.function.Supplier;

/**
 * One upstream exchange of a {@link Dispatch} and what it has produced so far: its timers, lease, probe slot,
 * response head and body (or SSE decoder), held chunks, learned rhythm and output count. Its upstream callbacks take
 * the dispatch's lock and hand every decision to the dispatch; all its state is guarded by that dispatch.
 */
final class Attempt implements UpstreamHandler, SseDecoder.Listener {
    private static final int MAX_ERROR_BODY = 64 * 1024;
    /** The most a whole chat answer may be ({@link Dispatch#wholeBodyLimit}). */
    static final int MAX_NONSTREAM_BODY = 16 * 1024 * 1024;

    /** Why the attempt was launched. */
    enum Kind { PRIMARY, FAILOVER, HEDGE, RESUME }

    /**
     * Why an attempt failed, and what that means for the route and the request.
     *
     * @param retryAfterMillis the wait a 429 asked for (its retry-after-ms or Retry-After), 0 for none
     */
    record Failure(String errorClass, String detail, int status, FailoverCriterion criterion,
                   boolean routeFault, long retryAfterMillis) {
        static Failure transport(String cls, String detail) {
            return new Failure(cls, detail, 0, FailoverCriterion.ERROR, true, 0);
        }

        static Failure timeout(String cls, String detail) {
            return new Failure(cls, detail, 0, FailoverCriterion.TIMEOUT, true, 0);
        }

        /** A 200 that is not a usable chat completion (Kong's {@code invalid_header}). */
        static Failure invalid(String cls, String detail) {
            return new Failure(cls, detail, 0, FailoverCriterion.INVALID_HEADER, true, 0);
        }
    }

    private final Dispatch dispatch;
    private final Dispatcher.Deps deps;
    private final GroupSettings.Timeouts timeouts;
    final int index;
    final Candidate cand;
    final Kind kind;
    final ContinuationMethod method;
    final long startNanos;
    final String leaseId;
    /** The half-open probe slot this attempt serves as, or null on a route that is not half-open. */
    final ProbeSlots.Slot probe;
    /**
     * The last lease write sent for this attempt: each next one (renew, release) is sent only once it has
     * completed, because fire-and-forget writes can overtake each other (separate pooled Redis connections), and
     * a release landing before its acquire would leave the lease counted until its TTL.
     */
    private Uni<Void> lastLeaseWrite = Uni.createFrom().voidItem();
    UpstreamClient.Exchange exchange;
    Cancellable windowTimer = Cancellable.NONE;
    /** The hedge budget refused this attempt a hedge at least once: it asks again within the re-ask share. */
    boolean hedgeRefused;
    Cancellable abandonTimer = Cancellable.NONE;
    /** Kong's write_timeout until the body is sent, then the head wait (read_timeout, or longer) until the head. */
    Cancellable ioTimer = Cancellable.NONE;
    /** A connection was made for the request ({@link #onConnected}): write_timeout counts from here. */
    boolean connected;
    boolean sent;
    boolean live = true;
    int status;
    Map<String, String> headers = Map.of();
    SseDecoder decoder;
    ByteArrayOutputStream body;
    /** A 200 embeddings answer's scan, fed as its body arrives (null for any other answer). */
    EmbeddingsReply.Scan embeddingsScan;
    /**
     * The form an embeddings request asked its vectors in: a vector answered in the other is rewritten (null for any
     * other request).
     */
    EmbeddingsReply.Vectors vectors;
    final List<ObjectNode> pending = new ArrayList<>();
    /**
     * The prompt this attempt sends, in tokens: the request's, and for a resume also the text delivered so far, which
     * the continuation sends with it (what its time to first token is learnt at).
     */
    int promptTokens;
    boolean hasContent;
    long firstContentNanos = -1;
    long lastContentNanos;
    int contentChunks;
    String finishReason;
    /**
     * The choice that carried this attempt's finish_reason, its delta emptied: sent in the closing chunk (with the
     * attempt trail) once the stream completes, never before, so the last chunk a client reads still has a choice.
     */
    ObjectNode heldFinish;
    /**
     * This attempt's tool-call deltas, held until its answer finishes: a tool call's arguments cannot be continued
     * by another route, so none of them reaches the client before the call is whole, and a stream that breaks
     * mid-call is resumed (or restarted) elsewhere instead of failing. Bounded by the output guard.
     */
    final List<ObjectNode> heldTools = new ArrayList<>();
    /**
     * A finish that came with nothing before it, held uncommitted until the stream's usage tells an empty answer
     * from a lost one ({@code Dispatch.holdEmptyFinish}); null otherwise.
     */
    ObjectNode emptyFinish;
    /** When {@link #emptyFinish} came: the route's time to first token, however long the finish was held. */
    long emptyFinishNanos;
    /** A stream of several choices' finishes and delivered text ({@code n > 1}); null for one choice. */
    Choices choices;
    JsonNode usage;
    /** The logprobs ({@code logprobs.content}, or null) of each piece {@link #trimmer} holds, in its order. */
    final List<JsonNode> heldLogprobs = new ArrayList<>(0);
    /** The provider's {@link ClientOutput#KEPT_FROM_UPSTREAM} fields, as its latest chunk gave them (null: none yet). */
    ObjectNode keptFields;
    OverlapTrimmer trimmer;
    boolean trimReasoning;
    boolean wrongContentType;
    /** This stream's gaps folded into the route's learned rhythm (the stall watchdog reads it). */
    InterTokenStats gaps;
    /** The stream's last gaps, a ring, learned once at the end ({@link LearnedModels#learnGaps}). */
    final long[] recentGaps = new long[LearnedModels.GAP_REPLAY];
    int gapsObserved;
    /**
     * How long this attempt waited with no content before it lost the race or was abandoned (-1: it did not): once
     * the request's answer is whole, that wait over the answer's tokens bounds the route's time per output token.
     */
    long waitedNoContentMs = -1;
    long firstReasoningNanos = -1;
    /**
     * The silence between the last reasoning chunk and the first visible one (0 until then): a model's thought it
     * does not stream, not decode (the streamed reasoning before it is decode, its tokens counted).
     */
    long thinkingPauseNanos;
    boolean visibleStarted;
    /** Chars of everything this attempt streamed (content, reasoning, tool calls...): the output guard's 4 MiB cap. */
    long outputChars;
    /** Deltas of content or reasoning this attempt streamed: one token each (a resume's decode rate). */
    long outputTokens;
    /**
     * Chars and deltas of the answer this attempt streamed: its content, tool calls, refusal, function call or audio,
     * not its reasoning (the output guard's limits under max_tokens; see {@link ClientOutput#overLimit}).
     */
    long answerChars;
    long answerTokens;
    /** The completion limit this attempt asked its provider for (a resume asks for what is left), or null. */
    Integer askedTokens;
    /**
     * This resume was given room beyond the answer left ({@link UpstreamCall#OVERLAP_TOKENS}): the gateway ends the
     * answer once it reaches {@code max_tokens}.
     */
    boolean capsAnswer;
    /**
     * This resume continues an answer whose content had begun: reasoning it writes (an open reasoning model thinks
     * before every answer, about the gateway's continuation instruction too) is not the client's, and is dropped.
     */
    boolean continuesContent;
    /**
     * A resume of a request with {@code stop} sequences: the request's stops, and the delivered text's last characters
     * before it (one fewer than the longest stop), against which its first new text is matched, as its provider
     * matches stops only in what it generates (a prefill is not its output); null once the new text is longer than
     * any stop could reach back ({@link ClientOutput#seamStop}).
     */
    List<String> seamStops;
    String seamTail;
    /** The resume's new text so far, while it may still complete a stop begun in {@link #seamTail}. */
    StringBuilder seamNew;
    /** A stop sequence straddling the resume's seam was matched: the answer ends there, finish_reason stop. */
    boolean stoppedAtSeam;
    /** The gateway added {@code stream_options} to this attempt's stream; the client sent none. */
    boolean addedStreamOptions;

    Attempt(Dispatch dispatch, Dispatcher.Deps deps, GroupSettings.Timeouts timeouts, int index, String leaseId,
            Candidate cand, Kind kind, ContinuationMethod method, ProbeSlots.Slot probe) {
        this.dispatch = dispatch;
        this.deps = deps;
        this.timeouts = timeouts;
        this.startNanos = deps.ticker().nanos();
        this.leaseId = leaseId;
        this.index = index;
        this.cand = cand;
        this.kind = kind;
        this.method = method;
        this.probe = probe;
        this.gaps = InterTokenStats.decode(cand.state().blob(LearnedModels.GAP).orElse(null));
    }

    /** Sends {@code write} after the attempt's previous lease write completed (whatever its outcome). */
    void leaseWrite(Supplier<Uni<Void>> write) {
        Uni<Void> next = lastLeaseWrite.onItemOrFailure().transformToUni((v, t) -> write.get())
                .onFailure().recoverWithNull().memoize().indefinitely();
        lastLeaseWrite = next;
        next.subscribe().with(v -> { }, t -> { });
    }

    /**
     * Folds the gap since the previous chunk into the attempt's copy of the route's rhythm. The pause between the
     * last reasoning and the first visible chunk is thinking, not decode rhythm: it is learned at once (it happens
     * once per stream, {@link LearnedModels#learnThinking}) and kept out of the gap statistics. So are the gaps of a
     * stream of several choices: its chunks interleave them, and their gaps are no one text's rhythm.
     */
    void learnRhythm(boolean reasoning, boolean visible) {
        long now = deps.ticker().nanos();
        boolean thinkingEnds = visible && !visibleStarted && firstReasoningNanos >= 0;
        if (contentChunks > 0 && !thinkingEnds && choices == null) {
            long gapMs = (now - lastContentNanos) / 1_000_000L;
            gaps = gaps.observe(gapMs);
            recentGaps[gapsObserved % recentGaps.length] = gapMs;
            gapsObserved++;
            deps.observer().gap(cand, gapMs);
        }
        if (thinkingEnds) {
            thinkingPauseNanos = now - lastContentNanos;
            if (kind != Kind.RESUME) {
                deps.models().learnThinking(cand.state(), (now - firstReasoningNanos) / 1_000_000L);
            }
        }
        if (reasoning && firstReasoningNanos < 0) {
            firstReasoningNanos = now;
        }
        if (visible) {
            visibleStarted = true;
        }
        lastContentNanos = now;
        contentChunks++;
    }

    /**
     * Ends this live attempt's own side: the probe slot it still holds, its timers, the upstream exchange (kept open
     * only by a success that did not ask to cancel it), the lease and the learned gaps (a success leaves them to the
     * dispatch, which learns them with the decode in one store call). The trail record is the dispatch's.
     */
    void end(String outcome, boolean cancelExchange) {
        live = false;
        if (probe != null) {
            probe.release();
        }
        cancelTimers();
        if (exchange != null && (cancelExchange || !"success".equals(outcome))) {
            exchange.cancel();
        }
        leaseWrite(() -> deps.store().releaseLease(cand.id(), leaseId));
        if (!"success".equals(outcome)) {
            deps.models().learnGaps(cand.state(), recentGaps, gapsObserved);
        }
    }

    /**
     * Kong's write_timeout (connect + write, until the client reports the body sent) and the wait for the response
     * head from then ({@link TimingWindows#headWait}: read_timeout, or for a non-streamed answer, whose head comes
     * with the whole answer, as long as that answer is waited for). A client that cannot report the body sent gets
     * one timer for all three.
     */
    void armIoTimer() {
        ioTimer.cancel();
        if (!live || status > 0) {
            return;
        }
        GroupSettings.Timeouts t = timeouts;
        if (sent) {
            Duration head = dispatch.headWait(cand);
            ioTimer = deps.scheduler().schedule(head, () -> dispatch.ioTimedOut(this, "timeout_read",
                    "no response head within " + headLimit(head)));
        } else if (exchange != null && exchange.reportsSent() && connected) {
            // Kong's write_timeout: from the connection, not the attempt's start (the connect's unused time added to
            // it: a write stalled at once took 6 s to fail with write_timeout 1s; found by hunt22)
            ioTimer = deps.scheduler().schedule(t.write(), () -> dispatch.ioTimedOut(this,
                    "timeout_write", "request not sent within write_timeout " + t.write().toMillis() + " ms"));
        } else if (exchange != null && exchange.reportsSent()) {
            // no connection yet: the client's own connect_timeout fails it; this bounds the whole send meanwhile
            ioTimer = deps.scheduler().schedule(t.connect().plus(t.write()), () -> dispatch.ioTimedOut(this,
                    "timeout_write", "request not sent within connect_timeout + write_timeout"));
        } else if (exchange != null) {
            Duration head = dispatch.headWait(cand);
            ioTimer = deps.scheduler().schedule(t.connect().plus(t.write()).plus(head), () -> dispatch.ioTimedOut(
                    this, "timeout_read", "no response head within connect + write timeouts and " + headLimit(head)));
        }
    }

    /** The head wait's words in a timeout's detail (built only when one fires). */
    private String headLimit(Duration head) {
        return head.equals(timeouts.read()) ? "read_timeout " + head.toMillis() + " ms"
                : head.toMillis() + " ms (the whole answer's wait, longer than read_timeout)";
    }

    /** Cancels the first-token window, abandon and Kong I/O timers (a probe slot's renewal stops with the slot). */
    void cancelTimers() {
        windowTimer.cancel();
        abandonTimer.cancel();
        ioTimer.cancel();
    }

    // The upstream callbacks: whatever one throws (a reply no check foresaw, or a bug) fails this attempt
    // (Dispatch.callbackFailed) rather than vanishing into the HTTP client, which would drop the rest of the read and
    // leave the client waiting on an attempt nothing drives any more.

    @Override
    public void onHead(int status, Map<String, String> headers) {
        try {
            readHead(status, headers);
        } catch (RuntimeException e) {
            dispatch.callbackFailed(this, e);
        }
    }

    @Override
    public void onData(byte[] bytes) {
        try {
            readData(bytes);
        } catch (RuntimeException e) {
            dispatch.callbackFailed(this, e);
        }
    }

    @Override
    public void onEnd() {
        try {
            readEnd();
        } catch (RuntimeException e) {
            dispatch.callbackFailed(this, e);
        }
    }

    @Override
    public void onError(TransportFailure failure) {
        try {
            readError(failure);
        } catch (RuntimeException e) {
            dispatch.callbackFailed(this, e);
        }
    }

    private void readHead(int status, Map<String, String> headers) {
        synchronized (dispatch) {
            if (!live) {
                return;
            }
            ioTimer.cancel();
            this.status = status;
            this.headers = headers;
            String ct = headers.getOrDefault("content-type", "");
            if (status == 200 && dispatch.streaming()) {
                wrongContentType = !ct.contains("text/event-stream");
                if (!wrongContentType) {
                    decoder = new SseDecoder(this, 2 * 1024 * 1024);
                    return;
                }
            }
            body = new ByteArrayOutputStream();
            if (status == 200 && dispatch.embeddings()) {
                embeddingsScan = new EmbeddingsReply.Scan(vectors);
            }
            armBodyTimer();
        }
    }

    /**
     * A whole body may fall silent for read_timeout between reads, as nginx's proxy_read_timeout allows, no longer:
     * its head came, so the read limit on the head no longer guards it and the abandon timer allows a long answer.
     */
    private void armBodyTimer() {
        ioTimer.cancel();
        long readMs = timeouts.read().toMillis();
        ioTimer = deps.scheduler().schedule(timeouts.read(), () -> dispatch.bodyTimedOut(this, readMs));
    }

    @Override
    public void onConnected() {
        synchronized (dispatch) {
            if (live && !connected && !sent) {
                connected = true;
                if (status == 0) {
                    armIoTimer();
                }
            }
        }
    }

    @Override
    public void onSent() {
        synchronized (dispatch) {
            if (live && !sent) {
                sent = true;
                if (status == 0) {
                    // a head that came first (an early answer to a long body) armed the body's read timer instead
                    armIoTimer();
                }
            }
        }
    }

    private void readData(byte[] bytes) {
        synchronized (dispatch) {
            if (!live) {
                return;
            }
            if (decoder != null) {
                try {
                    decoder.feed(bytes);
                } catch (SseDecoder.OversizeException e) {
                    if (hasContent) {
                        // committed: resume elsewhere (failing it as a pre-commit attempt would leave it hanging)
                        dispatch.midStreamFailure(this, "oversize_event", e.getMessage());
                    } else {
                        dispatch.attemptFailed(this, Failure.transport("oversize_event", e.getMessage()));
                    }
                }
                return;
            }
            armBodyTimer();
            int limit = status == 200 && !wrongContentType ? dispatch.wholeBodyLimit() : MAX_ERROR_BODY;
            if (body.size() + bytes.length > limit) {
                if (status == 200 && !wrongContentType) {
                    dispatch.attemptFailed(this, Failure.transport("oversize_body", "response body over " + limit));
                    return;
                }
                body.write(bytes, 0, Math.max(0, limit - body.size()));
                return;
            }
            body.write(bytes, 0, bytes.length);
            if (embeddingsScan != null) {
                embeddingsScan.feed(bytes);
            }
        }
    }

    private void readEnd() {
        synchronized (dispatch) {
            if (!live) {
                return;
            }
            if (decoder != null) {
                decoder.finish();
                dispatch.streamEnded(this, null);
            } else {
                dispatch.bodyEnded(this);
            }
        }
    }

    private void readError(TransportFailure failure) {
        synchronized (dispatch) {
            if (!live) {
                return;
            }
            if (decoder != null && (hasContent || finishReason != null)) {
                dispatch.streamEnded(this, failure);
                return;
            }
            String cls = "transport_" + failure.kind().name().toLowerCase();
            dispatch.attemptFailed(this, failure.kind() == TransportFailure.Kind.CONNECT_TIMEOUT
                    ? Failure.timeout(cls, failure.detail()) : Failure.transport(cls, failure.detail()));
        }
    }

    @Override
    public void onEvent(SseEvent event) {
        if (live) {
            dispatch.streamEvent(this, event);
        }
    }

    @Override
    public void onComment(String comment) {
        if (live) {
            dispatch.life(this);
        }
    }
}
