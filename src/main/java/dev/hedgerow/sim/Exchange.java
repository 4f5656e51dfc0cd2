package dev.hedgerow.sim;

import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.netty.channel.ChannelOption;
import io.vertx.core.Vertx;
import io.vertx.core.buffer.Buffer;
import io.vertx.core.http.HttpConnection;
import io.vertx.core.http.HttpServerRequest;
import io.vertx.core.http.HttpServerResponse;
import io.vertx.core.net.impl.ConnectionBase;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;

/**
 * One chat completion in flight: turns the {@link Plan}, the drawn fault and the drawn latency into a timeline of
 * steps (writes at offsets from the start, a reset, a clean end, or nothing ever), then plays it with Vert.x
 * timers. A request for several choices ({@code n}) gets them all, each choice its own {@link Plan}: in a stream
 * their deltas interleave round-robin (each chunk one choice, with its index), each choice's finish follows its last
 * delta, and the faults count the stream's content chunks whatever their choice; a whole answer holds every choice.
 * Confined to the connection's event loop; only the {@link ModelState} counters are shared.
 */
final class Exchange {

    /** How an exchange ended, for the counters. */
    enum End { COMPLETED, CANCELLED, DROPPED }

    /** Time to let written bytes reach the peer before a reset discards what is still unsent. */
    private static final long RESET_GRACE_MS = 30;
    private static final String DONE = "data: [DONE]\n\n";
    private static final String KEEP_ALIVE = ": keep-alive\n\n";

    private sealed interface Step {
        double at();
    }

    private record Write(double at, Buffer data, boolean content) implements Step {
    }

    private record Respond(double at, int status, String body, String contentType) implements Step {
        Respond(double at, int status, String body) {
            this(at, status, body, "application/json");
        }
    }

    /** From {@code at} on, writes {@code next} every {@code everyMs} until the exchange ends (never finishes). */
    private record Repeat(double at, long everyMs, java.util.function.Supplier<Buffer> next) implements Step {
    }

    static final String HTML_PAGE = "<!DOCTYPE html><html><head><title>502 Bad Gateway</title></head>"
            + "<body><h1>502 Bad Gateway</h1><p>The upstream server is temporarily unavailable.</p></body></html>";

    private record Reset(double at) implements Step {
    }

    private record Finish(double at) implements Step {
    }

    private record Hang(double at) implements Step {
    }

    /** From {@code at} the timeline waits at the gate {@code gate} ({@link Fault.Gate}), then goes on. */
    private record Wait(double at, Fault.Gate gate) implements Step {
    }

    private final Vertx vertx;
    private final HttpServerRequest request;
    private final HttpServerResponse response;
    private final ModelState model;
    private final ChatRequest chat;
    /** The first choice's plan (the only one unless the request asked for several). */
    private final Plan plan;
    /** Every choice's plan, by index. */
    private final List<Plan> plans;
    private final Fault fault;
    private final long ttftMs;
    private final Admission admission;
    private final Gates gates;
    private final String id;
    private final long created = System.currentTimeMillis() / 1000;
    private final long receivedNanos = System.nanoTime();

    private List<Step> steps;
    private int next;
    private long timer = -1;
    private long startNanos;
    private boolean started;
    private boolean over;
    private int contentWritten;
    private long firstContentNanos, lastContentNanos;
    private io.vertx.core.Context context;
    /** The gate the timeline waits at and the callback it waits with, or null. */
    private Wait waitingAt;
    private Runnable waiter;

    Exchange(Vertx vertx, HttpServerRequest request, ModelState model, ChatRequest chat, List<Plan> plans, Fault fault,
             long ttftMs, Admission admission, Gates gates, String id) {
        this.vertx = vertx;
        this.request = request;
        this.response = request.response();
        this.model = model;
        this.chat = chat;
        this.plan = plans.get(0);
        this.plans = plans;
        this.fault = fault;
        this.ttftMs = ttftMs;
        this.admission = admission;
        this.gates = gates;
        this.id = id;
        response.closeHandler(v -> {
            if (!over) {
                end(End.CANCELLED);
            }
        });
        response.exceptionHandler(t -> { });
        model.waiting(1);
    }

    boolean over() {
        return over;
    }

    /** Admitted: leaves the waiting queue and plays the timeline. Call on the request's context. */
    void start() {
        if (over) {
            // Cancelled between admission and start: hand the slot back.
            admission.release(this, true);
            return;
        }
        model.waiting(-1);
        model.running(1);
        started = true;
        context = vertx.getOrCreateContext();
        startNanos = System.nanoTime();
        steps = chat.stream() ? streamSteps() : answerSteps();
        if (chat.stream() && !(fault instanceof Fault.HttpError) && !(fault instanceof Fault.Html200)
                && !(fault instanceof Fault.HtmlError)) {
            response.setChunked(true)
                    .putHeader("Content-Type", "text/event-stream; charset=utf-8")
                    .putHeader("Cache-Control", "no-cache");
        } else if (!chat.stream() && (fault instanceof Fault.Endless || fault instanceof Fault.SlowDrip)) {
            response.setChunked(true).putHeader("Content-Type", "application/json");
        }
        if (plan.prefixMismatch()) {
            response.putHeader("X-Sim-Prefix-Mismatch", "true");
        }
        pump();
    }

    private void pump() {
        timer = -1;
        while (!over && next < steps.size()) {
            Step s = steps.get(next);
            double due = s.at() - (System.nanoTime() - startNanos) / 1e6;
            if (s instanceof Hang) {
                return;
            }
            if (s instanceof Repeat r && due < 1) {
                next++;
                timer = vertx.setPeriodic(Math.max(1, r.everyMs()), id -> {
                    // a slow reader must not make the simulator buffer without bound
                    if (!over && !response.writeQueueFull()) {
                        response.write(r.next().get());
                    }
                });
                return;
            }
            if (s instanceof Wait w && due < 1) {
                next++;
                if (!arrive(w)) {
                    return;
                }
                continue;
            }
            if (due >= 1) {
                timer = vertx.setTimer((long) Math.ceil(due), t -> pump());
                return;
            }
            next++;
            play(s);
        }
    }

    /** The timeline reached a gate: true when it is open (go on now), else it waits for it or its time limit. */
    private boolean arrive(Wait w) {
        Runnable onOpen = () -> context.runOnContext(v -> goOn(w));
        if (gates.arrive(w.gate().name(), onOpen)) {
            startNanos = System.nanoTime() - (long) (w.at() * 1e6);
            return true;
        }
        waitingAt = w;
        waiter = onOpen;
        if (w.gate().timeoutMs() >= 0) {
            timer = vertx.setTimer(Math.max(1, w.gate().timeoutMs()), t -> {
                if (gates.leave(w.gate().name(), onOpen, true)) {
                    goOn(w);
                }
            });
        }
        return false;
    }

    /** Past the gate: the rest of the timeline is played from now, its offsets shifted by the wait. */
    private void goOn(Wait w) {
        if (over || waitingAt != w) {
            return;
        }
        waitingAt = null;
        waiter = null;
        if (timer >= 0) {
            vertx.cancelTimer(timer);
        }
        startNanos = System.nanoTime() - (long) (w.at() * 1e6);
        pump();
    }

    private void play(Step s) {
        if (s instanceof Write w) {
            if (w.data().length() == 0) {
                response.writeHead();
            } else {
                response.write(w.data());
            }
            if (w.content()) {
                lastContentNanos = System.nanoTime();
                if (contentWritten++ == 0) {
                    firstContentNanos = lastContentNanos;
                }
            }
        } else if (s instanceof Respond r) {
            response.setStatusCode(r.status()).putHeader("Content-Type", r.contentType());
            if (fault instanceof Fault.HttpError e) {
                if (e.retryAfterSeconds() != null) {
                    response.putHeader("Retry-After", String.valueOf(e.retryAfterSeconds()));
                }
                e.headers().forEach(response::putHeader);
            }
            response.end(r.body());
            if (r.status() == 200) {
                firstContentNanos = lastContentNanos = System.nanoTime();
            }
            end(End.COMPLETED);
        } else if (s instanceof Finish) {
            response.end();
            end(End.COMPLETED);
        } else if (s instanceof Reset) {
            end(End.DROPPED);
            reset(request.connection());
        }
    }

    /** Closes the connection with SO_LINGER 0 so the peer sees a TCP RST, not a clean FIN. */
    static void reset(HttpConnection conn) {
        if (conn instanceof ConnectionBase base) {
            base.channel().config().setOption(ChannelOption.SO_LINGER, 0);
            base.channel().close();
        } else {
            conn.close();
        }
    }

    private void end(End how) {
        if (over) {
            return;
        }
        over = true;
        if (timer >= 0) {
            vertx.cancelTimer(timer);
        }
        if (waitingAt != null) {
            gates.leave(waitingAt.gate().name(), waiter, false);
        }
        model.ended(how);
        if (started) {
            model.running(-1);
            if (how == End.COMPLETED && contentWritten > 0) {
                double ttft = (firstContentNanos - receivedNanos) / 1e6;
                double span = (lastContentNanos - firstContentNanos) / 1e9;
                model.measured(ttft, contentWritten > 1 && span > 0 ? (contentWritten - 1) / span : 0);
            }
        } else {
            model.waiting(-1);
        }
        admission.release(this, started);
    }

    // ---- timelines ----

    private double interval() {
        double tps = model.script().latency().tokensPerSecond();
        return tps > 0 ? 1000.0 / tps : 0;
    }

    private List<Step> streamSteps() {
        List<Step> s = new ArrayList<>();
        ModelScript.Reasoning reasoning = model.script().reasoning();
        if (fault instanceof Fault.HttpError e) {
            s.add(new Respond(e.delayMs(), e.status(), SimJson.errorEnvelope(e.message(), e.type(), e.code())));
            return s;
        }
        if (fault instanceof Fault.ResetBeforeHeaders) {
            s.add(new Reset(0));
            return s;
        }
        if (fault instanceof Fault.NoResponse) {
            s.add(new Hang(0));
            return s;
        }
        if (fault instanceof Fault.Html200 h) {
            s.add(new Respond(h.delayMs(), 200, HTML_PAGE, "text/html; charset=utf-8"));
            return s;
        }
        if (fault instanceof Fault.HtmlError h) {
            s.add(new Respond(0, h.status(), HTML_PAGE, "text/html; charset=utf-8"));
            return s;
        }
        if (fault instanceof Fault.EmptyStream e) {
            if (e.roleChunk()) {
                roles(s);
            } else {
                // Headers only: an empty write sends the head of a chunked response.
                s.add(new Write(0, Buffer.buffer(), false));
            }
            s.add(new Finish(ttftMs));
            return s;
        }
        if (fault instanceof Fault.LostContent) {
            roles(s);
            return finish(s, ttftMs);
        }
        roles(s);
        double t = ttftMs;
        double step = interval();
        int c = 0;
        int rc = 0;
        // a continuation of visible content has finished thinking: no second pause
        boolean paused = plan.thought();
        for (Slot slot : interleaved()) {
            Plan.Unit u = slot.unit();
            if (u == null) {
                // a choice that ends before the last one does
                s.add(new Write(t, frame(slot.index(), mapper().createObjectNode(),
                        plans.get(slot.index()).finishReason()), false));
                continue;
            }
            if (fault instanceof Fault.DropDuringReasoning d && c == 0
                    && rc == Math.min(d.afterReasoningTokens(), reasoningUnits())) {
                s.add(new Reset(t + RESET_GRACE_MS));
                return s;
            }
            if (!u.content()) {
                rc++;
            }
            if (u.content()) {
                if (!paused) {
                    paused = true;
                    t = pause(s, t, reasoning);
                }
                t = positionalFault(s, c, t, slot);
                if (Double.isNaN(t)) {
                    return s;
                }
                c++;
            }
            s.add(new Write(t, frame(slot.index(), delta(plans.get(slot.index()), u), null), u.content()));
            t += step;
        }
        if (!paused) {
            t = pause(s, t, reasoning);
        }
        t = positionalFault(s, c, t, null);
        if (Double.isNaN(t)) {
            return s;
        }
        return finish(s, t);
    }

    /** The stream's end from {@code t}: the finish, the usage when asked for, [DONE] (as its fault allows). */
    private List<Step> finish(List<Step> s, double t) {
        int last = lastToFinish();
        s.add(new Write(t, frame(last, mapper().createObjectNode(), fault instanceof Fault.LostContent ? "stop"
                : plans.get(last).finishReason()), false));
        if (streamUsage()) {
            ObjectNode u = chunk();
            u.putArray("choices");
            u.set("usage", usage());
            s.add(new Write(t, sse(u.toString()), false));
        }
        if (fault instanceof Fault.HangAfterFinish) {
            s.add(new Hang(t));
            return s;
        }
        if (!(fault instanceof Fault.NoDone)) {
            s.add(new Write(t, Buffer.buffer(DONE), false));
        }
        s.add(new Finish(t));
        return s;
    }

    /** The silent thinking pause before the first content, with optional keep-alive comments. */
    private double pause(List<Step> s, double t, ModelScript.Reasoning r) {
        if (r.pauseMs() <= 0) {
            return t;
        }
        if (r.keepAliveMs() > 0) {
            for (long k = r.keepAliveMs(); k < r.pauseMs(); k += r.keepAliveMs()) {
                s.add(new Write(t + k, Buffer.buffer(KEEP_ALIVE), false));
            }
        }
        return t + r.pauseMs();
    }

    /**
     * Applies a fault that fires after {@code c} content tokens (capped at the answer's length). Returns the time
     * to go on from, or NaN when the timeline ends here.
     */
    private double positionalFault(List<Step> s, int c, double t, Slot slot) {
        Plan.Unit unit = slot == null ? null : slot.unit();
        int total = contentUnits();
        if (fault instanceof Fault.Drop d && d.midCodePoint()) {
            if (c < Math.min(d.afterTokens(), total)) {
                return t;
            }
            if (unit != null && unit.text().chars().noneMatch(ch -> ch > 127)) {
                return t;
            }
            if (unit != null) {
                String f = frameText(slot.index(), delta(plans.get(slot.index()), unit), null);
                int from = f.indexOf("\"delta\"");
                int i = from;
                while (f.charAt(i) <= 127) {
                    i++;
                }
                byte[] head = f.substring(0, i).getBytes(StandardCharsets.UTF_8);
                byte[] ch = new String(Character.toChars(f.codePointAt(i))).getBytes(StandardCharsets.UTF_8);
                Buffer b = Buffer.buffer(head).appendBytes(ch, 0, Math.max(1, ch.length / 2));
                s.add(new Write(t, b, false));
            }
            s.add(new Reset(t + RESET_GRACE_MS));
            return Double.NaN;
        }
        int after = afterTokens(fault);
        if (after < 0 || c != Math.min(after, total)) {
            return t;
        }
        if (fault instanceof Fault.Drop || fault instanceof Fault.Refuse) {
            // Let the frames already written reach the peer before the reset discards the socket buffer.
            s.add(new Reset(t + RESET_GRACE_MS));
            return Double.NaN;
        } else if (fault instanceof Fault.EofBeforeFinish) {
            s.add(new Finish(t));
            return Double.NaN;
        } else if (fault instanceof Fault.MalformedFrame) {
            s.add(new Write(t, Buffer.buffer("data: {\"id\":\"" + id + "\",\"choices\":[{\"delta\":{\"content\n\n"),
                    false));
            return t;
        } else if (fault instanceof Fault.ErrorEvent e) {
            s.add(new Write(t, sse(SimJson.errorEnvelope(
                    e.message() == null ? "Simulated upstream error mid-stream" : e.message(), "server_error",
                    e.code() == null ? "upstream_error" : e.code())), false));
            s.add(new Finish(t));
            return Double.NaN;
        } else if (fault instanceof Fault.Stall st) {
            if (st.ms() < 0) {
                s.add(new Hang(t));
                return Double.NaN;
            }
            return t + st.ms();
        } else if (fault instanceof Fault.StallKeptAlive k) {
            s.add(new Repeat(t + k.everyMs(), k.everyMs(), () -> k.emptyChunks()
                    ? frame(0, mapper().createObjectNode(), null) : Buffer.buffer(KEEP_ALIVE)));
            return Double.NaN;
        } else if (fault instanceof Fault.GiantLine g) {
            s.add(new Write(t, frame(0, mapper().createObjectNode().put("content", "x".repeat(g.bytes())), null),
                    true));
            return t;
        } else if (fault instanceof Fault.Endless) {
            s.add(new Repeat(t, Math.max(1, (long) interval()), endlessFrames()));
            return Double.NaN;
        } else if (fault instanceof Fault.SlowDrip d) {
            s.add(new Write(t, Buffer.buffer("data: {\"id\":\"" + id + "\",\"choices\":[{\"delta\":{\"content\":\""),
                    false));
            s.add(new Repeat(t + d.everyMs(), d.everyMs(), () -> Buffer.buffer("a")));
            return Double.NaN;
        } else if (fault instanceof Fault.Gate g) {
            s.add(new Wait(t, g));
            return t;
        }
        return t;
    }

    /** The answer's content frames over and over; a batch per tick when the model's pace is under a millisecond. */
    private java.util.function.Supplier<Buffer> endlessFrames() {
        List<Plan.Unit> content = plan.units().stream().filter(Plan.Unit::content).toList();
        double step = interval();
        int batch = step >= 1 ? 1 : 32;
        int[] i = {0};
        return () -> {
            Buffer b = Buffer.buffer();
            for (int k = 0; k < batch; k++) {
                Plan.Unit u = content.isEmpty() ? null : content.get(i[0]++ % content.size());
                b.appendBuffer(frame(0, u == null ? mapper().createObjectNode().put("content", "more ")
                        : delta(plan, u), null));
            }
            return b;
        };
    }

    private static int afterTokens(Fault f) {
        if (f instanceof Fault.Drop d) {
            return d.afterTokens();
        } else if (f instanceof Fault.EofBeforeFinish e) {
            return e.afterTokens();
        } else if (f instanceof Fault.MalformedFrame m) {
            return m.afterTokens();
        } else if (f instanceof Fault.ErrorEvent e) {
            return e.afterTokens();
        } else if (f instanceof Fault.Stall st) {
            return st.afterTokens();
        } else if (f instanceof Fault.StallKeptAlive k) {
            return k.afterTokens();
        } else if (f instanceof Fault.GiantLine g) {
            return g.afterTokens();
        } else if (f instanceof Fault.Endless e) {
            return e.afterTokens();
        } else if (f instanceof Fault.SlowDrip d) {
            return d.afterTokens();
        } else if (f instanceof Fault.Gate g) {
            return g.afterTokens();
        } else if (f instanceof Fault.Refuse r) {
            return r.dropAfter();
        }
        return -1;
    }

    /** Non-streaming: one answer when the stream would have ended; mid-stream faults act on the whole answer. */
    private List<Step> answerSteps() {
        List<Step> s = new ArrayList<>();
        double step = interval();
        ModelScript.Reasoning r = model.script().reasoning();
        double contentStart = ttftMs + step * reasoningUnits() + (plan.thought() ? 0 : Math.max(0, r.pauseMs()));
        double end = contentStart + step * contentUnits();
        int after = afterTokens(fault);
        double faultAt = contentStart + step * Math.min(Math.max(after, 0), contentUnits());
        if (fault instanceof Fault.HttpError e) {
            s.add(new Respond(e.delayMs(), e.status(), SimJson.errorEnvelope(e.message(), e.type(), e.code())));
        } else if (fault instanceof Fault.ResetBeforeHeaders) {
            s.add(new Reset(0));
        } else if (fault instanceof Fault.NoResponse) {
            s.add(new Hang(0));
        } else if (fault instanceof Fault.Drop || fault instanceof Fault.EofBeforeFinish) {
            s.add(new Reset(faultAt));
        } else if (fault instanceof Fault.DropDuringReasoning d) {
            s.add(new Reset(ttftMs + step * Math.min(d.afterReasoningTokens(), reasoningUnits())));
        } else if (fault instanceof Fault.Stall st && st.ms() < 0 || fault instanceof Fault.StallKeptAlive) {
            s.add(new Hang(faultAt));
        } else if (fault instanceof Fault.Stall st) {
            s.add(new Respond(end + st.ms(), 200, completion(false)));
        } else if (fault instanceof Fault.Gate g) {
            s.add(new Wait(faultAt, g));
            s.add(new Respond(end, 200, completion(false)));
        } else if (fault instanceof Fault.MalformedFrame) {
            s.add(new Respond(end, 200, "{\"id\":\"" + id + "\",\"object\":\"chat.completion\",\"choices\":[{"));
        } else if (fault instanceof Fault.ErrorEvent e) {
            s.add(new Respond(faultAt, 500, SimJson.errorEnvelope(
                    e.message() == null ? "Simulated upstream error" : e.message(), "server_error",
                    e.code() == null ? "upstream_error" : e.code())));
        } else if (fault instanceof Fault.EmptyStream || fault instanceof Fault.LostContent) {
            s.add(new Respond(ttftMs, 200, completion(true)));
        } else if (fault instanceof Fault.Html200 h) {
            s.add(new Respond(h.delayMs(), 200, HTML_PAGE, "text/html; charset=utf-8"));
        } else if (fault instanceof Fault.HtmlError h) {
            s.add(new Respond(0, h.status(), HTML_PAGE, "text/html; charset=utf-8"));
        } else if (fault instanceof Fault.GiantLine g) {
            s.add(new Respond(end, 200, completion(false).replace(SimJson.MAPPER.valueToTree(plan.content()).toString(),
                    "\"" + "x".repeat(g.bytes()) + "\"")));
        } else if (fault instanceof Fault.Endless) {
            s.add(new Write(faultAt, Buffer.buffer("{\"id\":\"" + id + "\",\"choices\":[{\"message\":{\"content\":\""),
                    false));
            s.add(new Repeat(faultAt, 1, () -> Buffer.buffer("more ".repeat(64))));
        } else if (fault instanceof Fault.SlowDrip d) {
            s.add(new Write(faultAt, Buffer.buffer("{\"id\":\"" + id + "\",\"choices\":[{\"message\":{\"content\":\""),
                    false));
            s.add(new Repeat(faultAt + d.everyMs(), d.everyMs(), () -> Buffer.buffer("a")));
        } else {
            s.add(new Respond(end, 200, completion(false)));
        }
        return s;
    }

    // ---- wire format ----

    private static com.fasterxml.jackson.databind.ObjectMapper mapper() {
        return SimJson.MAPPER;
    }

    private ObjectNode chunk() {
        ObjectNode c = mapper().createObjectNode();
        c.put("id", id);
        c.put("object", "chat.completion.chunk");
        c.put("created", created);
        c.put("model", servedModel());
        return c;
    }

    /** The model the answer names: the script's {@code servedAs}, else the one the request asked for. */
    private String servedModel() {
        String served = model.script().servedAs();
        return served == null ? chat.model() : served;
    }

    private Buffer frame(int index, ObjectNode delta, String finishReason) {
        return Buffer.buffer(frameText(index, delta, finishReason));
    }

    private String frameText(int index, ObjectNode delta, String finishReason) {
        ObjectNode c = chunk();
        ObjectNode choice = c.putArray("choices").addObject();
        choice.put("index", index);
        choice.set("delta", delta);
        if (finishReason == null) {
            choice.putNull("finish_reason");
        } else {
            choice.put("finish_reason", finishReason);
        }
        return "data: " + c + "\n\n";
    }

    private static Buffer sse(String json) {
        return Buffer.buffer("data: " + json + "\n\n");
    }

    private ObjectNode roleDelta() {
        return mapper().createObjectNode().put("role", "assistant").put("content", "");
    }

    /** Every choice's role chunk, first thing in a stream. */
    private void roles(List<Step> s) {
        for (int i = 0; i < plans.size(); i++) {
            s.add(new Write(0, frame(i, roleDelta(), null), false));
        }
    }

    /** One step of a stream: choice {@code index}'s next delta, or (unit null) that choice's finish. */
    private record Slot(int index, Plan.Unit unit) {
    }

    /**
     * Every choice's deltas in the order the stream writes them: round-robin, one delta of each choice in turn (the
     * only choice's, in order, for one), a choice's finish right after its last delta, but for the choice that ends
     * last, whose finish ends the stream.
     */
    private List<Slot> interleaved() {
        List<Slot> out = new ArrayList<>();
        int longest = 0;
        for (Plan p : plans) {
            longest = Math.max(longest, p.units().size());
        }
        int last = lastToFinish();
        for (int i = 0; i < plans.size(); i++) {
            if (plans.get(i).units().isEmpty() && i != last) {
                out.add(new Slot(i, null));
            }
        }
        for (int k = 0; k < longest; k++) {
            for (int i = 0; i < plans.size(); i++) {
                List<Plan.Unit> units = plans.get(i).units();
                if (k < units.size()) {
                    out.add(new Slot(i, units.get(k)));
                    if (k == units.size() - 1 && i != last) {
                        out.add(new Slot(i, null));
                    }
                }
            }
        }
        return out;
    }

    /** The choice whose last delta the stream writes last: the last of the longest. */
    private int lastToFinish() {
        int last = 0;
        for (int i = 0; i < plans.size(); i++) {
            if (plans.get(i).units().size() >= plans.get(last).units().size()) {
                last = i;
            }
        }
        return last;
    }

    /** The content deltas of every choice. */
    private int contentUnits() {
        return plans.stream().mapToInt(Plan::contentUnits).sum();
    }

    /** The reasoning deltas of every choice. */
    private int reasoningUnits() {
        return plans.stream().mapToInt(Plan::reasoningTokens).sum();
    }

    private ObjectNode delta(Plan plan, Plan.Unit u) {
        ObjectNode d = mapper().createObjectNode();
        switch (u.kind()) {
            case REASONING -> d.put(model.script().reasoning().field(), u.text());
            case CONTENT -> d.put(fault instanceof Fault.Refuse ? "refusal" : "content", u.text());
            case TOOL_HEADER -> {
                ObjectNode call = d.putArray("tool_calls").addObject();
                call.put("index", 0).put("id", plan.toolCall().id()).put("type", "function");
                call.putObject("function").put("name", plan.toolCall().name()).put("arguments", "");
            }
            case TOOL_ARGUMENTS -> d.putArray("tool_calls").addObject().put("index", 0)
                    .putObject("function").put("arguments", u.text());
        }
        return d;
    }

    private ModelScript.UsageMode usageMode() {
        return model.script().capabilities().usage();
    }

    private boolean streamUsage() {
        return switch (usageMode()) {
            case NONE, NON_STREAM_ONLY -> false;
            case STANDARD -> chat.includeUsage();
            case ALWAYS -> true;
        };
    }

    /** The usage of the whole answer: the prompt once, the completion tokens of every choice. */
    private ObjectNode usage() {
        ObjectNode u = mapper().createObjectNode();
        int completion = plans.stream().mapToInt(Plan::completionTokens).sum();
        u.put("prompt_tokens", plan.promptTokens());
        u.put("completion_tokens", completion);
        u.put("total_tokens", plan.promptTokens() + completion);
        if (reasoningUnits() > 0) {
            u.putObject("completion_tokens_details").put("reasoning_tokens", reasoningUnits());
        }
        return u;
    }

    private String completion(boolean empty) {
        ObjectNode c = mapper().createObjectNode();
        c.put("id", id);
        c.put("object", "chat.completion");
        c.put("created", created);
        c.put("model", servedModel());
        ArrayNode choices = c.putArray("choices");
        for (int i = 0; i < plans.size(); i++) {
            Plan plan = plans.get(i);
            ObjectNode choice = choices.addObject();
            choice.put("index", i);
            ObjectNode msg = choice.putObject("message");
            msg.put("role", "assistant");
            if (!empty && plan.toolCall() != null) {
                msg.putNull("content");
                ObjectNode call = msg.putArray("tool_calls").addObject();
                call.put("id", plan.toolCall().id()).put("type", "function");
                call.putObject("function").put("name", plan.toolCall().name())
                        .put("arguments", plan.toolCall().arguments());
            } else if (fault instanceof Fault.Refuse) {
                msg.putNull("content");
                msg.put("refusal", plan.content());
            } else {
                msg.put("content", empty ? "" : plan.content());
            }
            if (!empty && plan.reasoningTokens() > 0) {
                msg.put(model.script().reasoning().field(), plan.reasoningText());
            }
            choice.put("finish_reason", empty ? "stop" : plan.finishReason());
        }
        if (usageMode() != ModelScript.UsageMode.NONE) {
            c.set("usage", usage());
        }
        return c.toString();
    }
}
