package dev.hedgerow.routing;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.JsonNodeFactory;
import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.hedgerow.api.Json;
import dev.hedgerow.catalog.GroupSettings;
import dev.hedgerow.catalog.Org;
import dev.hedgerow.catalog.Provider;
import dev.hedgerow.catalog.Route;
import dev.hedgerow.state.RouteSnapshot;
import dev.hedgerow.state.StateStore;
import dev.hedgerow.state.UsageSample;
import dev.hedgerow.time.Cancellable;
import dev.hedgerow.time.Scheduler;
import dev.hedgerow.upstream.TransportFailure;
import dev.hedgerow.upstream.UpstreamClient;
import dev.hedgerow.upstream.UpstreamHandler;
import dev.hedgerow.upstream.UpstreamRequest;

import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.OptionalInt;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.random.RandomGenerator;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * The judge of {@code tokens_count_strategy: llm_accuracy} (Kong's AI LLM as Judge plugin): after a chat answer of
 * such a group reached its client, a sample of answers (the judge's {@code sampling_rate}) is sent to the judge route,
 * a chat route of the same org called directly (as {@link SemanticEmbeddings} calls its embeddings route), as one
 * non-streamed chat completion: the judge's prompt as the system message, then one user message laying out the
 * request (its last {@code message_countback} messages, the ignored roles dropped) and the response. The first
 * whole number of the judge's answer, if it is 1..100, is the answer's score, learned into the route's decayed mean
 * ({@link LearnedModels#learnAccuracy}), which every instance ranks by.
 *
 * <p>Nothing here touches the client's answer: it runs after the answer ended. A judge that fails (transport, a status
 * other than 200, no answer within its timeout) or answers no score records nothing against any route; every judging
 * is counted by its {@link Outcome} through the {@link Listener}. At most {@code maxInFlight} judge calls run at once
 * per instance: a sample beyond that is skipped (and counted so), so a slow judge can never pile up calls. Thread-safe.
 */
public final class AccuracyJudge {
    /** Judge calls one instance runs at once before it skips samples. */
    public static final int DEFAULT_MAX_IN_FLIGHT = 16;
    /** The most of a judge's answer read: a score is a few bytes, a chat answer envelope well under this. */
    static final int MAX_ANSWER_BYTES = 64 * 1024;
    /** The connect timeout of a judge call (its whole time is the judge's {@code timeout}). */
    static final Duration CONNECT_TIMEOUT = Duration.ofSeconds(5);
    private static final Pattern WHOLE_NUMBER = Pattern.compile("-?\\d+");

    /** What became of one sampled answer. */
    public enum Outcome {
        /** The judge scored it: the score was learned. */
        SCORED,
        /** The judge answered 200 with no score 1..100 in it: nothing learned. */
        UNPARSABLE,
        /** The judge failed (transport, a status other than 200, its timeout, a body that is no chat answer). */
        FAILED,
        /** Too many judge calls in flight on this instance: the sample was dropped unjudged. */
        SKIPPED;

        /** The label a metric gives it. */
        public String wireName() {
            return name().toLowerCase(java.util.Locale.ROOT);
        }
    }

    /** Told of every sampled answer's outcome, and of what each judge call that was answered costs; must not block. */
    public interface Listener {
        void judged(String orgId, Outcome outcome);

        /**
         * The judge route {@code judge} of {@code org} answered a judge call (200, scored or not), which used
         * {@code usage}: the provider's count, else the gateway's (the request it was sent and the text it answered).
         */
        void billed(Org org, Route judge, UsageSample usage);
    }

    private final UpstreamClient upstream;
    private final StateStore store;
    private final LearnedModels models;
    private final Scheduler scheduler;
    private final TokenCounter tokens;
    private final RandomGenerator random;
    private final int maxInFlight;
    private final Listener listener;
    private final AtomicInteger inFlight = new AtomicInteger();

    /**
     * @param tokens      counts a judge call's usage when its provider reports none
     * @param random      draws which answers are sampled (seed it in tests)
     * @param maxInFlight judge calls at once on this instance, at least 1
     */
    public AccuracyJudge(UpstreamClient upstream, StateStore store, LearnedModels models, Scheduler scheduler,
                         TokenCounter tokens, RandomGenerator random, int maxInFlight, Listener listener) {
        if (maxInFlight < 1) {
            throw new IllegalArgumentException("maxInFlight must be ≥ 1");
        }
        this.upstream = upstream;
        this.store = store;
        this.models = models;
        this.scheduler = scheduler;
        this.tokens = tokens;
        this.random = random;
        this.maxInFlight = maxInFlight;
        this.listener = listener;
    }

    /** Judge calls running now on this instance. */
    public int inFlight() {
        return inFlight.get();
    }

    /**
     * A chat answer of a group judged by {@code judge} reached its client: sample it, and if sampled, judge it in the
     * background. Returns at once; never throws for anything about the judge.
     *
     * @param routeKey the store key of the route that answered ({@link Router#key})
     * @param messages the request's {@code messages}
     * @param response the text the client got
     */
    public void answered(Org org, GroupSettings.Judge judge, String routeKey, JsonNode messages, String response) {
        if (!sampled(judge.samplingRate())) {
            return;
        }
        Optional<Route> route = org.route(judge.route());
        Optional<Provider> provider = route.flatMap(r -> org.provider(r.provider()));
        if (provider.isEmpty()) { // the loader keeps this from happening; a stale catalog could still
            listener.judged(org.id(), Outcome.FAILED);
            return;
        }
        if (inFlight.incrementAndGet() > maxInFlight) {
            inFlight.decrementAndGet();
            listener.judged(org.id(), Outcome.SKIPPED);
            return;
        }
        ObjectNode request = request(route.get().model(), judge, messages, response);
        call(provider.get(), Json.bytes(request), judge.timeout(), (outcome, score, answer) -> {
            inFlight.decrementAndGet();
            if (answer != null) {
                listener.billed(org, route.get(), usage(route.get(), request, answer));
            }
            listener.judged(org.id(), outcome);
            if (outcome == Outcome.SCORED) {
                learn(routeKey, score);
            }
        });
    }

    private boolean sampled(double rate) {
        if (rate >= 1) {
            return true;
        }
        return rate > 0 && random.nextDouble() < rate;
    }

    /** Learns on a fresh snapshot of the route: the request's own is as old as the answer and the judge's wait. */
    private void learn(String routeKey, int score) {
        store.snapshot(List.of(routeKey), Duration.ofMinutes(1)).subscribe().with(
                states -> models.learnAccuracy(states.getOrDefault(routeKey, RouteSnapshot.empty(routeKey)), score),
                t -> models.learnAccuracy(RouteSnapshot.empty(routeKey), score));
    }

    /** How a judge call ended: its outcome, the score (0 for none), and its 200 answer (null for none). */
    private interface Verdict {
        void settle(Outcome outcome, int score, JsonNode answer);
    }

    /**
     * What a judge call used: its answer's {@code usage} as the provider counted it, else the gateway's count of the
     * request it was sent and of the text it answered; priced at the judge route's {@code price}.
     */
    private UsageSample usage(Route judge, ObjectNode request, JsonNode answer) {
        JsonNode u = answer.path("usage");
        long prompt = u.path("prompt_tokens").canConvertToLong() ? u.path("prompt_tokens").asLong()
                : tokens.countRequest(request);
        long completion = u.path("completion_tokens").canConvertToLong() ? u.path("completion_tokens").asLong()
                : tokens.countText(answerText(answer));
        return new UsageSample(prompt, completion, judge.price().cost(prompt, completion));
    }

    private void call(Provider provider, byte[] body, Duration timeout, Verdict verdict) {
        AtomicBoolean settled = new AtomicBoolean();
        Cancellable[] timer = new Cancellable[1];
        UpstreamClient.Exchange[] exchange = new UpstreamClient.Exchange[1];
        Verdict once = (outcome, score, answer) -> {
            if (settled.compareAndSet(false, true)) {
                Cancellable t = timer[0];
                if (t != null) {
                    t.cancel();
                }
                verdict.settle(outcome, score, answer);
            }
        };
        UpstreamRequest req = UpstreamRequest.post(provider.baseUrl(), "/chat/completions", provider.apiKey(), false,
                body, timeout.compareTo(CONNECT_TIMEOUT) < 0 ? timeout : CONNECT_TIMEOUT);
        ByteArrayOutputStream buf = new ByteArrayOutputStream();
        int[] status = new int[1];
        try {
            exchange[0] = upstream.send(req, new UpstreamHandler() {
                @Override
                public void onHead(int s, Map<String, String> headers) {
                    status[0] = s;
                }

                @Override
                public void onData(byte[] bytes) {
                    if (buf.size() + bytes.length <= MAX_ANSWER_BYTES) {
                        buf.writeBytes(bytes);
                    }
                }

                @Override
                public void onEnd() {
                    if (status[0] != 200) {
                        once.settle(Outcome.FAILED, 0, null);
                        return;
                    }
                    JsonNode answer = answer(buf.toByteArray());
                    if (answer == null) {
                        once.settle(Outcome.FAILED, 0, null);
                        return;
                    }
                    OptionalInt score = score(answerText(answer));
                    once.settle(score.isPresent() ? Outcome.SCORED : Outcome.UNPARSABLE, score.orElse(0), answer);
                }

                @Override
                public void onError(TransportFailure failure) {
                    once.settle(Outcome.FAILED, 0, null);
                }
            });
        } catch (RuntimeException e) {
            once.settle(Outcome.FAILED, 0, null);
            return;
        }
        timer[0] = scheduler.schedule(timeout, () -> {
            if (!settled.get()) {
                UpstreamClient.Exchange ex = exchange[0];
                if (ex != null) {
                    ex.cancel();
                }
                once.settle(Outcome.FAILED, 0, null);
            }
        });
        if (settled.get()) { // it settled before the timer was set: the timer has nothing left to do
            timer[0].cancel();
        }
    }

    /** A chat completion whose message content is text ({@link #answerText}), or null when the body is none. */
    static JsonNode answer(byte[] body) {
        try {
            JsonNode answer = Json.parse(body);
            return content(answer).isTextual() ? answer : null;
        } catch (IOException | RuntimeException e) {
            return null;
        }
    }

    /** A chat completion {@link #answer}'s message text. */
    static String answerText(JsonNode answer) {
        return content(answer).asText();
    }

    private static JsonNode content(JsonNode answer) {
        return answer.path("choices").path(0).path("message").path("content");
    }

    /**
     * The first whole number of the judge's answer when it is 1..100 ({@code "87"}, {@code "Score: 87/100"}); none
     * for any other number ({@code "0"}, {@code "-5"}, {@code "150"}) or no number at all.
     */
    static OptionalInt score(String text) {
        Matcher m = WHOLE_NUMBER.matcher(text);
        if (!m.find() || m.group().startsWith("-")) {
            return OptionalInt.empty();
        }
        String digits = m.group().replaceFirst("^0+(?=\\d)", "");
        if (digits.length() > 3) {
            return OptionalInt.empty();
        }
        int n = Integer.parseInt(digits);
        return n >= 1 && n <= 100 ? OptionalInt.of(n) : OptionalInt.empty();
    }

    /**
     * The judge's request: a non-streamed chat completion for the judge route's model, {@code max_tokens} its
     * budget, the prompt as the system message and {@link #layout} as the one user message.
     */
    static ObjectNode request(String model, GroupSettings.Judge judge, JsonNode messages, String response) {
        ObjectNode body = JsonNodeFactory.instance.objectNode();
        body.put("model", model);
        body.put("stream", false);
        body.put("max_tokens", judge.maxTokens());
        ArrayNode msgs = body.putArray("messages");
        msgs.addObject().put("role", "system").put("content", judge.prompt());
        msgs.addObject().put("role", "user").put("content", layout(judge, messages, response));
        return body;
    }

    /**
     * The request and the response as the judge reads them: under {@code REQUEST:} the request's last
     * {@code message_countback} messages once the ignored roles are dropped (system and developer, assistant, tool
     * and function), each as {@code role: text}; under {@code RESPONSE:} the answer's text.
     */
    static String layout(GroupSettings.Judge judge, JsonNode messages, String response) {
        List<JsonNode> kept = new ArrayList<>();
        if (messages != null && messages.isArray()) {
            for (JsonNode m : messages) {
                if (!ignored(judge, m.path("role").asText(""))) {
                    kept.add(m);
                }
            }
        }
        List<JsonNode> shown = kept.subList(Math.max(0, kept.size() - judge.messageCountback()), kept.size());
        StringBuilder sb = new StringBuilder("REQUEST:\n");
        if (shown.isEmpty()) {
            sb.append("(no messages)\n");
        }
        for (JsonNode m : shown) {
            sb.append(m.path("role").asText("user")).append(": ").append(text(m.get("content"))).append('\n');
        }
        return sb.append("\nRESPONSE:\n").append(response).toString();
    }

    private static boolean ignored(GroupSettings.Judge judge, String role) {
        return switch (role) {
            case "system", "developer" -> judge.ignoreSystemPrompts();
            case "assistant" -> judge.ignoreAssistantPrompts();
            case "tool", "function" -> judge.ignoreToolPrompts();
            default -> false;
        };
    }

    /** A message's text: a string, or the text parts of a list (images and other parts left out). */
    private static String text(JsonNode content) {
        if (content == null || content.isNull()) {
            return "";
        }
        if (content.isTextual()) {
            return content.asText();
        }
        if (content.isArray()) {
            StringBuilder sb = new StringBuilder();
            for (JsonNode part : content) {
                if (part.path("text").isTextual()) {
                    sb.append(part.path("text").asText());
                }
            }
            return sb.toString();
        }
        return content.toString();
    }
}
