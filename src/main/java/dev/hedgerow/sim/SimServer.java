package dev.hedgerow.sim;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.hedgerow.routing.TokenCounter;
import io.vertx.core.Future;
import io.vertx.core.Vertx;
import io.vertx.core.buffer.Buffer;
import io.vertx.core.http.HttpMethod;
import io.vertx.core.http.HttpServer;
import io.vertx.core.http.HttpServerOptions;
import io.vertx.core.http.HttpServerRequest;
import java.net.URLDecoder;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentSkipListMap;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;

/**
 * A fault-injecting OpenAI-compatible upstream on a plain Vert.x {@link HttpServer}: chat completions (streaming
 * and not), models and embeddings under {@code /v1}, a control API under {@code /sim} and Prometheus text at
 * {@code /metrics}. Many instances may run in one JVM, each on its own free port; nothing here depends on CDI or
 * Quarkus.
 *
 * <p>Control endpoints (JSON in snake_case):
 * <ul>
 *   <li>{@code GET /sim/models}; {@code GET|PUT|DELETE /sim/models/{model}} with a {@link ModelScript} body</li>
 *   <li>{@code POST /sim/models/{model}/faults} with one {@link Fault} or an array: queued one-shots for the next
 *       requests to that model, in order; {@code DELETE /sim/models/{model}/faults}; {@code DELETE /sim/faults}</li>
 *   <li>{@code GET /sim/stats} ({@code {"models":{name:stats}}}), {@code GET /sim/stats/{model}},
 *       {@code DELETE /sim/stats}: see {@link SimStats}</li>
 *   <li>{@code GET /sim/capacity}, {@code PUT /sim/capacity} with {@code {"memory_pressure":0.7}}</li>
 *   <li>{@code POST /sim/gates/{name}} opens a gate ({@link Fault.Gate}); {@code GET /sim/gates/{name}} says who
 *       waits at it ({@code {"waiting":1,"passed":0,"timed_out":0,"opened":false}}); {@code DELETE /sim/gates}
 *       forgets every gate nobody waits at</li>
 * </ul>
 *
 * <p>Thread-safe: the Java control methods may be called from any thread while requests are served.
 * {@link #close()} and the {@code startBlocking} methods block and must not be called on an event loop.
 */
public final class SimServer implements AutoCloseable {

    private final Vertx vertx;
    private final boolean ownsVertx;
    private final SimConfig config;
    private final Map<String, ModelState> models = new ConcurrentSkipListMap<>();
    private final Admission admission;
    private final Gates gates = new Gates();
    private final AtomicLong ids = new AtomicLong();
    private volatile double memoryPressure;
    private HttpServer server;

    private SimServer(Vertx vertx, boolean ownsVertx, SimConfig config) {
        this.vertx = vertx;
        this.ownsVertx = ownsVertx;
        this.config = config;
        this.admission = new Admission(config.maxRunning());
        config.models().forEach(this::script);
    }

    /** Starts on a free port of 127.0.0.1. */
    public static Future<SimServer> start(Vertx vertx, SimConfig config) {
        return start(vertx, config, "127.0.0.1", 0);
    }

    /** Starts on the given host and port (0 = a free port). */
    public static Future<SimServer> start(Vertx vertx, SimConfig config, String host, int port) {
        return start(vertx, false, config, host, port);
    }

    private static Future<SimServer> start(Vertx vertx, boolean owns, SimConfig config, String host, int port) {
        SimServer sim = new SimServer(vertx, owns, config);
        return vertx.createHttpServer(new HttpServerOptions().setHost(host).setPort(port).setTcpNoDelay(true))
                .requestHandler(sim::handle)
                .listen()
                .map(s -> {
                    sim.server = s;
                    return sim;
                });
    }

    /** Starts on a free port and waits for it; do not call on an event loop. */
    public static SimServer startBlocking(Vertx vertx, SimConfig config) {
        return await(start(vertx, config));
    }

    /** Starts with a Vert.x instance of its own, closed with the server; do not call on an event loop. */
    public static SimServer startBlocking(SimConfig config) {
        Vertx own = Vertx.vertx();
        try {
            return await(start(own, true, config, "127.0.0.1", 0));
        } catch (RuntimeException e) {
            own.close();
            throw e;
        }
    }

    private static <T> T await(Future<T> f) {
        try {
            return f.toCompletionStage().toCompletableFuture().get(30, TimeUnit.SECONDS);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IllegalStateException(e);
        } catch (Exception e) {
            throw new IllegalStateException("simulator failed: " + e.getMessage(), e);
        }
    }

    public int port() {
        return server.actualPort();
    }

    /** {@code http://127.0.0.1:PORT/v1}, what a provider's {@code base_url} names. */
    public String baseUrl() {
        return rootUrl() + "/v1";
    }

    /** {@code http://127.0.0.1:PORT}, for the control API and {@code /metrics}. */
    public String rootUrl() {
        return "http://127.0.0.1:" + port();
    }

    public SimConfig config() {
        return config;
    }

    /** The exact text a model of length L writes for a prompt: {@code SimText.expected(textSeed, msg, min(L, M))}. */
    public String expectedText(String firstUserMessage, int tokens) {
        return SimText.expected(config.textSeed(), firstUserMessage, tokens);
    }

    /** Closes the server (and its connections, and the Vert.x instance when it owns one). */
    public Future<Void> closeAsync() {
        Future<Void> f = server == null ? Future.succeededFuture() : server.close();
        return ownsVertx ? f.eventually(v -> vertx.close()) : f;
    }

    @Override
    public void close() {
        await(closeAsync());
    }

    // ---- Java control API ----

    /** Adds or replaces a model's script; a replaced model keeps its counters and queued faults. */
    public void script(String model, ModelScript script) {
        models.compute(model, (k, old) -> {
            if (old == null) {
                return new ModelState(k, script);
            }
            old.replace(script);
            return old;
        });
    }

    public void removeModel(String model) {
        models.remove(model);
    }

    /** Queues one-shot faults for the next requests to the model, in order; returns the queue depth. */
    public int enqueue(String model, Fault... faults) {
        return state(model).enqueue(Arrays.asList(faults));
    }

    public void clearFaults() {
        models.values().forEach(ModelState::clearFaults);
    }

    public SimStats stats(String model) {
        return state(model).snapshot();
    }

    public Map<String, SimStats> stats() {
        Map<String, SimStats> out = new LinkedHashMap<>();
        models.forEach((k, v) -> out.put(k, v.snapshot()));
        return out;
    }

    public void resetStats() {
        models.values().forEach(ModelState::resetStats);
    }

    /** Opens the gate {@code name}: streams waiting at it go on, later ones pass it at once ({@link Fault.Gate}). */
    public void openGate(String name) {
        gates.open(name);
    }

    /** Who waits at the gate {@code name} now and who went past it. */
    public Gates.State gate(String name) {
        return gates.state(name);
    }

    /** Sets the reported KV-cache usage / memory pressure, 0..1. */
    public void memoryPressure(double value) {
        memoryPressure = Math.max(0, Math.min(1, value));
    }

    private ModelState state(String model) {
        ModelState ms = models.get(model);
        if (ms == null) {
            throw new IllegalArgumentException("unknown simulated model: " + model);
        }
        return ms;
    }

    // ---- HTTP ----

    private void handle(HttpServerRequest req) {
        req.body().onComplete(ar -> {
            if (ar.failed()) {
                return;
            }
            try {
                route(req, ar.result());
            } catch (RuntimeException e) {
                if (!req.response().ended() && !req.response().closed()) {
                    error(req, 500, e.toString(), "server_error", "sim_internal_error");
                }
            }
        });
    }

    private void route(HttpServerRequest req, Buffer body) {
        String path = req.path();
        HttpMethod m = req.method();
        if (path.startsWith("/v1/")) {
            if (path.equals("/v1/chat/completions") && m == HttpMethod.POST) {
                chat(req, body);
            } else if (path.equals("/v1/embeddings") && m == HttpMethod.POST) {
                embeddings(req, body);
            } else if (path.equals("/v1/models") && m == HttpMethod.GET) {
                if (authorized(req)) {
                    listModels(req);
                }
            } else {
                error(req, 404, "Unknown endpoint " + m + " " + path, "invalid_request_error", "not_found");
            }
        } else if (path.equals("/metrics") && m == HttpMethod.GET) {
            req.response().putHeader("Content-Type", "text/plain; version=0.0.4; charset=utf-8")
                    .end(SimMetrics.render(models, memoryPressure));
        } else if (path.startsWith("/sim/")) {
            control(req, m, path.substring("/sim/".length()), body);
        } else {
            error(req, 404, "Unknown endpoint " + m + " " + path, "invalid_request_error", "not_found");
        }
    }

    private boolean authorized(HttpServerRequest req) {
        if (config.apiKey() == null || ("Bearer " + config.apiKey()).equals(req.getHeader("Authorization"))) {
            return true;
        }
        error(req, 401, "Incorrect API key provided", "invalid_request_error", "invalid_api_key");
        return false;
    }

    private void chat(HttpServerRequest req, Buffer raw) {
        JsonNode body = json(req, raw);
        if (body == null) {
            return;
        }
        String name = body.path("model").asText(null);
        ModelState ms = name == null ? null : models.get(name);
        if (ms != null) {
            ms.received(new SimStats.RecordedRequest(req.path(), raw.toString(StandardCharsets.UTF_8),
                    req.getHeader("Authorization")));
        }
        if (!authorized(req)) {
            if (ms != null) {
                ms.rejected();
            }
            return;
        }
        if (ms == null) {
            error(req, 404, "The model `" + name + "` does not exist", "invalid_request_error", "model_not_found");
            return;
        }
        ModelScript script = ms.script();
        ChatRequest chat;
        try {
            chat = ChatRequest.parse(body);
        } catch (ChatRequest.Invalid e) {
            reject(req, ms, e.getMessage(), "invalid_request_error");
            return;
        }
        for (String field : script.capabilities().unknownFields()) {
            if (body.has(field)) {
                // vLLM's words and form (its request schema forbids extra fields): no envelope, param null
                ms.rejected();
                ObjectNode err = SimJson.MAPPER.createObjectNode().put("object", "error")
                        .put("message", "[{'type': 'extra_forbidden', 'loc': ('body', '" + field + "'), 'msg': "
                                + "'Extra inputs are not permitted', 'input': " + body.get(field) + "}]")
                        .put("type", "BadRequestError").putNull("param").put("code", 400);
                json(req, 400, err.toString());
                return;
            }
        }
        if (script.capabilities().reasoningParameters()) {
            // OpenAI's reasoning models: the words and codes api.openai.com answers
            if (body.has("max_tokens")) {
                ms.rejected();
                json(req, 400, SimJson.errorEnvelope("Unsupported parameter: 'max_tokens' is not supported with this "
                        + "model. Use 'max_completion_tokens' instead.", "invalid_request_error",
                        "unsupported_parameter", "max_tokens"));
                return;
            }
            if (body.hasNonNull("temperature") && body.get("temperature").asDouble() != 1) {
                ms.rejected();
                json(req, 400, SimJson.errorEnvelope("Unsupported value: 'temperature' does not support "
                        + body.get("temperature").asText() + " with this model. Only the default (1) value is "
                        + "supported.", "invalid_request_error", "unsupported_value", "temperature"));
                return;
            }
        }
        String refusal = refusal(chat, script.capabilities());
        if (refusal != null) {
            int colon = refusal.indexOf(':');
            reject(req, ms, refusal.substring(colon + 2), refusal.substring(0, colon));
            return;
        }
        Fault fault = ms.drawFault();
        long ttft = ms.drawTtftMs(chat.promptTokens());
        // choice i is the text of seed + i: the first choice is the answer a request for one gets
        int choices = fault instanceof Fault.IgnoreN ? 1 : chat.choices();
        List<Plan> plans = new ArrayList<>(choices);
        for (int i = 0; i < choices; i++) {
            plans.add(Plan.of(chat, script, config.textSeed() + i));
        }
        Exchange ex = new Exchange(vertx, req, ms, chat, plans, fault, ttft, admission, gates,
                "chatcmpl-sim-" + ids.incrementAndGet());
        admission.submit(ex, vertx.getOrCreateContext());
    }

    /** "code: message" when the model cannot serve the request, else null. */
    private static String refusal(ChatRequest chat, ModelScript.Capabilities caps) {
        if (chat.hasImages() && !caps.images()) {
            return "image_input_not_supported: this model does not accept image_url content";
        }
        if (chat.tools().present() && !caps.tools()) {
            return "tools_not_supported: this model does not support tools";
        }
        if (chat.jsonMode() && !caps.jsonMode()) {
            return "response_format_not_supported: this model does not support response_format";
        }
        if (chat.prefill() != null && chat.prefill().style() != ChatRequest.Style.INSTRUCTION
                && !caps.continuation().contains(chat.prefill().style().dialect())) {
            return "prefill_not_supported: this model does not continue a final assistant message ("
                    + chat.prefill().style().name().toLowerCase() + ")";
        }
        return null;
    }

    private void reject(HttpServerRequest req, ModelState ms, String message, String code) {
        ms.rejected();
        error(req, 400, message, "invalid_request_error", code);
    }

    /**
     * OpenAI's embeddings: a vector per input ({@link SimEmbeddings}), as floats or, with {@code encoding_format:
     * base64}, as base64 of little-endian float32 values (or always one of them, whatever it asks, when the script's
     * {@code embeddings_encoding} says so); usage unless the script's usage mode is {@code none}; the
     * {@code model} named is the script's {@code servedAs} if set. It comes after the script's time to first token
     * for a prompt of every input's tokens (its base, its cost per 1k tokens, jitter and tail), as an embeddings model
     * reads its inputs and writes nothing. Faults apply as to a whole chat answer ({@link #answerEmbeddings}).
     */
    private void embeddings(HttpServerRequest req, Buffer raw) {
        JsonNode body = json(req, raw);
        if (body == null || !authorized(req)) {
            return;
        }
        String name = body.path("model").asText(null);
        ModelState ms = name == null ? null : models.get(name);
        if (ms == null) {
            error(req, 404, "The model `" + name + "` does not exist", "invalid_request_error", "model_not_found");
            return;
        }
        ms.received(new SimStats.RecordedRequest(req.path(), raw.toString(StandardCharsets.UTF_8),
                req.getHeader("Authorization")));
        // a string, an array of strings, one array of token ids, or an array of them (each embedded as its text)
        List<String> inputs = new ArrayList<>();
        List<Integer> counts = new ArrayList<>();
        JsonNode in = body.path("input");
        if (in.isArray() && !in.isEmpty() && in.get(0).isNumber()) {
            inputs.add(in.toString());
            counts.add(in.size());
        } else if (in.isArray()) {
            in.forEach(n -> {
                inputs.add(n.isArray() ? n.toString() : n.asText());
                counts.add(n.isArray() ? n.size() : TokenCounter.shared().countText(n.asText()));
            });
        } else {
            inputs.add(in.asText(""));
            counts.add(TokenCounter.shared().countText(in.asText("")));
        }
        int dim = body.path("dimensions").asInt(SimEmbeddings.DIMENSION);
        ModelScript.EmbeddingsEncoding encoding = ms.script().capabilities().embeddingsEncoding();
        boolean base64 = encoding == ModelScript.EmbeddingsEncoding.AS_ASKED
                ? body.path("encoding_format").asText("float").equals("base64")
                : encoding == ModelScript.EmbeddingsEncoding.BASE64;
        ObjectNode out = SimJson.MAPPER.createObjectNode().put("object", "list");
        ArrayNode data = out.putArray("data");
        int tokens = 0;
        for (int i = 0; i < inputs.size(); i++) {
            ObjectNode e = data.addObject().put("object", "embedding").put("index", i);
            float[] v = SimEmbeddings.embed(inputs.get(i), Math.max(1, dim));
            if (base64) {
                // OpenAI's base64 form: the vector's float32 values, little-endian
                java.nio.ByteBuffer buf = java.nio.ByteBuffer.allocate(4 * v.length)
                        .order(java.nio.ByteOrder.LITTLE_ENDIAN);
                for (float f : v) {
                    buf.putFloat(f);
                }
                e.put("embedding", java.util.Base64.getEncoder().encodeToString(buf.array()));
            } else {
                ArrayNode vec = e.putArray("embedding");
                for (float f : v) {
                    vec.add(f);
                }
            }
            tokens += counts.get(i);
        }
        // the script's servedAs, else the model asked for, as a chat answer names it
        out.put("model", ms.script().servedAs() != null ? ms.script().servedAs() : name);
        if (ms.script().capabilities().usage() != ModelScript.UsageMode.NONE) {
            out.putObject("usage").put("prompt_tokens", tokens).put("total_tokens", tokens);
        }
        Fault fault = ms.drawFault();
        // its latency is the script's time to first token for all its inputs: an embeddings model only reads them
        long latency = ms.drawTtftMs(tokens);
        later(req, ms, latency, () -> answerEmbeddings(req, ms, fault, out.toString()));
    }

    /**
     * Answers an embeddings request, or plays its fault (a queued one-shot or one the script rolled) as a whole answer
     * would: an error status (with its Retry-After and headers, after its delay), a reset before the head (also for
     * a drop or an early EOF), no answer at all (also a stall forever or a hung generation), the answer after a
     * stall's delay, malformed JSON, a 500 for an error event, a proxy's HTML page, a giant line as one vector that
     * long. Faults that shape a stream only (no [DONE], an endless or dripping body, an empty stream) answer as
     * usual.
     */
    private void answerEmbeddings(HttpServerRequest req, ModelState ms, Fault fault, String answer) {
        if (fault == null) {
            ms.ended(Exchange.End.COMPLETED);
            json(req, 200, answer);
        } else if (fault instanceof Fault.HttpError e) {
            later(req, ms, e.delayMs(), () -> {
                if (e.retryAfterSeconds() != null) {
                    req.response().putHeader("Retry-After", String.valueOf(e.retryAfterSeconds()));
                }
                e.headers().forEach(req.response()::putHeader);
                ms.ended(Exchange.End.COMPLETED);
                json(req, e.status(), SimJson.errorEnvelope(e.message(), e.type(), e.code()));
            });
        } else if (fault instanceof Fault.ResetBeforeHeaders || fault instanceof Fault.Drop
                || fault instanceof Fault.EofBeforeFinish || fault instanceof Fault.DropDuringReasoning) {
            ms.ended(Exchange.End.DROPPED);
            Exchange.reset(req.connection());
        } else if (fault instanceof Fault.NoResponse || fault instanceof Fault.StallKeptAlive
                || fault instanceof Fault.Stall st && st.ms() < 0) {
            // never answered: the caller hangs up (counted as cancelled then)
            req.connection().closeHandler(v -> ms.ended(Exchange.End.CANCELLED));
        } else if (fault instanceof Fault.Stall st) {
            later(req, ms, st.ms(), () -> answerEmbeddings(req, ms, null, answer));
        } else if (fault instanceof Fault.MalformedFrame) {
            ms.ended(Exchange.End.COMPLETED);
            json(req, 200, answer.substring(0, answer.length() / 2));
        } else if (fault instanceof Fault.ErrorEvent e) {
            ms.ended(Exchange.End.COMPLETED);
            json(req, 500, SimJson.errorEnvelope(e.message() == null ? "Simulated upstream error" : e.message(),
                    "server_error", e.code() == null ? "upstream_error" : e.code()));
        } else if (fault instanceof Fault.Html200 h) {
            later(req, ms, h.delayMs(), () -> {
                ms.ended(Exchange.End.COMPLETED);
                req.response().setStatusCode(200).putHeader("Content-Type", "text/html; charset=utf-8")
                        .end(Exchange.HTML_PAGE);
            });
        } else if (fault instanceof Fault.HtmlError h) {
            ms.ended(Exchange.End.COMPLETED);
            req.response().setStatusCode(h.status()).putHeader("Content-Type", "text/html; charset=utf-8")
                    .end(Exchange.HTML_PAGE);
        } else if (fault instanceof Fault.GiantLine g) {
            // one vector that is a base64 string of that many bytes: an answer as large as a big batch's
            ms.ended(Exchange.End.COMPLETED);
            StringBuilder sb = new StringBuilder(g.bytes() + 128)
                    .append("{\"object\":\"list\",\"data\":[{\"object\":\"embedding\",\"index\":0,\"embedding\":\"");
            sb.append("A".repeat(g.bytes()));
            sb.append("\"}],\"usage\":{\"prompt_tokens\":1,\"total_tokens\":1}}");
            json(req, 200, sb.toString());
        } else {
            answerEmbeddings(req, ms, null, answer);
        }
    }

    /**
     * Runs {@code action} after {@code delayMs} (at once for 0), unless the caller has hung up by then: that call is
     * counted cancelled (a hang-up during the model's latency was counted nowhere, and a test that waited for the
     * cancel of a call the gateway did hang up on failed now and then).
     */
    private void later(HttpServerRequest req, ModelState ms, long delayMs, Runnable action) {
        if (delayMs <= 0) {
            action.run();
            return;
        }
        vertx.setTimer(delayMs, t -> {
            if (!req.response().closed()) {
                action.run();
            } else {
                ms.ended(Exchange.End.CANCELLED);
            }
        });
    }

    private void listModels(HttpServerRequest req) {
        ObjectNode out = SimJson.MAPPER.createObjectNode().put("object", "list");
        ArrayNode data = out.putArray("data");
        models.keySet().forEach(k -> data.addObject().put("id", k).put("object", "model").put("created", 0)
                .put("owned_by", "hedgerow-sim"));
        json(req, 200, out.toString());
    }

    // ---- control ----

    private void control(HttpServerRequest req, HttpMethod m, String rest, Buffer raw) {
        try {
            controlRoute(req, m, rest, raw.toString(StandardCharsets.UTF_8));
        } catch (IllegalArgumentException e) {
            error(req, 400, e.getMessage(), "invalid_request_error", "invalid_control_request");
        }
    }

    private void controlRoute(HttpServerRequest req, HttpMethod m, String rest, String body) {
        if (rest.equals("models") && m == HttpMethod.GET) {
            Map<String, ModelScript> scripts = new LinkedHashMap<>();
            models.forEach((k, v) -> scripts.put(k, v.script()));
            json(req, 200, SimJson.write(Map.of("models", scripts)));
        } else if (rest.startsWith("models/") && rest.endsWith("/faults")) {
            String model = decode(rest.substring("models/".length(), rest.length() - "/faults".length()));
            ModelState ms = models.get(model);
            if (ms == null) {
                error(req, 404, "unknown simulated model: " + model, "invalid_request_error", "model_not_found");
            } else if (m == HttpMethod.POST) {
                JsonNode tree = SimJson.read(body, JsonNode.class);
                List<Fault> faults = new ArrayList<>();
                if (tree.isArray()) {
                    tree.forEach(n -> faults.add(SimJson.read(n.toString(), Fault.class)));
                } else {
                    faults.add(SimJson.read(body, Fault.class));
                }
                int depth = ms.enqueue(faults);
                json(req, 200, SimJson.write(Map.of("model", model, "queued", depth)));
            } else if (m == HttpMethod.DELETE) {
                ms.clearFaults();
                req.response().setStatusCode(204).end();
            } else {
                methodNotAllowed(req);
            }
        } else if (rest.startsWith("models/")) {
            String model = decode(rest.substring("models/".length()));
            if (m == HttpMethod.PUT) {
                script(model, SimJson.readScript(body));
                json(req, 200, SimJson.write(models.get(model).script()));
            } else if (m == HttpMethod.GET && models.containsKey(model)) {
                json(req, 200, SimJson.write(models.get(model).script()));
            } else if (m == HttpMethod.DELETE) {
                removeModel(model);
                req.response().setStatusCode(204).end();
            } else if (m == HttpMethod.GET) {
                error(req, 404, "unknown simulated model: " + model, "invalid_request_error", "model_not_found");
            } else {
                methodNotAllowed(req);
            }
        } else if (rest.equals("faults") && m == HttpMethod.DELETE) {
            clearFaults();
            req.response().setStatusCode(204).end();
        } else if (rest.equals("stats") && m == HttpMethod.GET) {
            ObjectNode out = SimJson.MAPPER.createObjectNode();
            ObjectNode per = out.putObject("models");
            stats().forEach((k, v) -> per.set(k, statsJson(v)));
            json(req, 200, out.toString());
        } else if (rest.startsWith("stats/") && m == HttpMethod.GET) {
            String model = decode(rest.substring("stats/".length()));
            if (models.containsKey(model)) {
                json(req, 200, statsJson(stats(model)).toString());
            } else {
                error(req, 404, "unknown simulated model: " + model, "invalid_request_error", "model_not_found");
            }
        } else if (rest.equals("stats") && m == HttpMethod.DELETE) {
            resetStats();
            req.response().setStatusCode(204).end();
        } else if (rest.startsWith("gates/") && (m == HttpMethod.POST || m == HttpMethod.GET)) {
            String name = decode(rest.substring("gates/".length()));
            if (m == HttpMethod.POST) {
                openGate(name);
            }
            Gates.State g = gate(name);
            json(req, 200, SimJson.MAPPER.createObjectNode().put("waiting", g.waiting()).put("passed", g.passed())
                    .put("timed_out", g.timedOut()).put("opened", g.opened()).toString());
        } else if (rest.equals("gates") && m == HttpMethod.DELETE) {
            gates.clear();
            req.response().setStatusCode(204).end();
        } else if (rest.equals("capacity") && m == HttpMethod.GET) {
            json(req, 200, capacity().toString());
        } else if (rest.equals("capacity") && m == HttpMethod.PUT) {
            JsonNode in = SimJson.read(body, JsonNode.class);
            if (in.has("memory_pressure")) {
                memoryPressure(in.get("memory_pressure").asDouble());
            }
            json(req, 200, capacity().toString());
        } else {
            error(req, 404, "Unknown control endpoint " + m + " /sim/" + rest, "invalid_request_error", "not_found");
        }
    }

    private static ObjectNode statsJson(SimStats s) {
        ObjectNode n = SimJson.MAPPER.valueToTree(s);
        n.put("in_flight", s.inFlight());
        return n;
    }

    /** Queue depth, memory pressure and measured speed, overall and per model. */
    private ObjectNode capacity() {
        ObjectNode out = SimJson.MAPPER.createObjectNode();
        ObjectNode per = SimJson.MAPPER.createObjectNode();
        int running = 0, waiting = 0;
        double tpsSum = 0;
        int measured = 0;
        for (var e : models.entrySet()) {
            ModelState ms = e.getValue();
            int r = ms.running(), w = ms.waitingCount();
            SimStats.Speed sp = ms.speed();
            running += r;
            waiting += w;
            if (sp.tokensPerSecond() > 0) {
                tpsSum += sp.tokensPerSecond();
                measured++;
            }
            per.putObject(e.getKey()).put("running", r).put("waiting", w).put("in_flight", r + w)
                    .put("ttft_ms", sp.ttftMs()).put("tokens_per_second", sp.tokensPerSecond());
        }
        out.put("running", running).put("waiting", waiting).put("in_flight", running + waiting)
                .put("max_running", config.maxRunning()).put("memory_pressure", memoryPressure)
                .put("tokens_per_second", measured == 0 ? 0 : tpsSum / measured);
        out.set("models", per);
        return out;
    }

    // ---- helpers ----

    private static String decode(String s) {
        return URLDecoder.decode(s, StandardCharsets.UTF_8);
    }

    private static JsonNode json(HttpServerRequest req, Buffer raw) {
        try {
            return SimJson.MAPPER.readTree(raw.toString(StandardCharsets.UTF_8));
        } catch (Exception e) {
            error(req, 400, "We could not parse the JSON body of your request", "invalid_request_error",
                    "invalid_json");
            return null;
        }
    }

    private static void json(HttpServerRequest req, int status, String body) {
        req.response().setStatusCode(status).putHeader("Content-Type", "application/json").end(body);
    }

    private static void methodNotAllowed(HttpServerRequest req) {
        error(req, 405, "Method not allowed", "invalid_request_error", "method_not_allowed");
    }

    private static void error(HttpServerRequest req, int status, String message, String type, String code) {
        json(req, status, SimJson.errorEnvelope(message, type, code));
    }
}
