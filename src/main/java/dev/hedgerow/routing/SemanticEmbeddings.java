package dev.hedgerow.routing;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.JsonNodeFactory;
import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.hedgerow.api.Json;
import dev.hedgerow.catalog.GroupSettings;
import dev.hedgerow.catalog.Keys;
import dev.hedgerow.catalog.Org;
import dev.hedgerow.catalog.Provider;
import dev.hedgerow.catalog.Route;
import dev.hedgerow.catalog.Strategy;
import dev.hedgerow.state.BreakerState;
import dev.hedgerow.state.RouteSnapshot;
import dev.hedgerow.state.StateStore;
import dev.hedgerow.upstream.TransportFailure;
import dev.hedgerow.upstream.UpstreamClient;
import dev.hedgerow.upstream.UpstreamHandler;
import dev.hedgerow.upstream.UpstreamRequest;
import io.smallrye.mutiny.Uni;

import java.io.ByteArrayOutputStream;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.UUID;
import java.util.function.Function;
import java.util.function.Supplier;

/**
 * Fetches the semantic strategy's embeddings through the group's embeddings route (an OpenAI {@code /embeddings}
 * endpoint of the catalog): the prompt's on every request, each member description's once (cached in the state
 * store, keyed by model and description hash). A failure yields no embeddings, and the semantic balancer falls
 * back to rotation: embeddings never fail a request. Each call's outcome counts for the embeddings route's breaker
 * as a live attempt's does (a transport failure, timeout or route fault against it, a success for it; a refusal of
 * the text itself, a 400, counts nothing, as a live 400 passed through does); a route out of traffic (cooling
 * down, held, its half-open probe in flight) is not called, and a half-open one is called only under its probe slot,
 * as its probe. A prompt with no user text is not embedded, and one longer than the embeddings route's
 * {@code context_window} is embedded by its head within it. Thread-safe.
 */
public final class SemanticEmbeddings implements Function<Router.ExtrasQuery, Uni<Map<String, float[]>>> {
    private static final Duration TIMEOUT = Duration.ofSeconds(5);
    private static final Duration CACHE_TTL = Duration.ofDays(30);
    /** A half-open probe slot outlives the call it lets through (its timeout) by a margin, as a live probe's does. */
    private static final Duration PROBE_TTL = TIMEOUT.plusSeconds(5);

    private final UpstreamClient upstream;
    private final StateStore store;

    public SemanticEmbeddings(UpstreamClient upstream, StateStore store) {
        this.upstream = upstream;
        this.store = store;
    }

    @Override
    public Uni<Map<String, float[]>> apply(Router.ExtrasQuery q) {
        // with one candidate left (the request's needs or preferences narrowed the group) there is nothing to choose:
        // the embeddings call would only add its latency and its cost
        if (q.settings().strategy() != Strategy.SEMANTIC || q.settings().balancer().embeddingsRoute() == null
                || q.routes().size() < 2) {
            return Uni.createFrom().item(Map.of());
        }
        Optional<Route> er = q.org().route(q.settings().balancer().embeddingsRoute());
        String prompt = q.facts().lastUserText();
        if (er.isEmpty() || prompt == null || prompt.isBlank()) {
            // nothing to match: an empty input is refused by OpenAI's endpoint (found by hunt27)
            return Uni.createFrom().item(Map.of());
        }
        Route embedRoute = er.get();
        String embedKey = Router.key(q.org(), embedRoute);
        GroupSettings embedGroup = q.org().group(embedRoute.alias());
        GroupSettings.Breaker breaker = embedGroup.breaker();
        // a route its breaker, a provider's hold or the fleet's half-open probe keeps from traffic is not called: a
        // hung embeddings model added its full timeout to every request of the group (found by hunt20); read over
        // its own group's usage window, as its router reads it (a cached read is kept for one window)
        return store.snapshot(List.of(embedKey), embedGroup.balancer().usageWindow()).flatMap(s -> {
            RouteSnapshot health = s.getOrDefault(embedKey, RouteSnapshot.empty(embedKey));
            if (health.heldOut() || health.probeTaken()) {
                return Uni.createFrom().item(Map.<String, float[]>of());
            }
            if (health.fails() < breaker.threshold()) {
                return embeddings(q, embedRoute, judged(q.org(), embedRoute, embedKey, embedGroup,
                        health.fails() > 0 ? SuccessWrite.SENT : SuccessWrite.NONE));
            }
            // half-open: this call is the route's probe, under the fleet's one probe slot as a live request's is, and
            // its verdict closes or re-opens the breaker (it was called beside another probe and its success never
            // recorded, so the route stayed half-open: a session 38 leftover). The verdict frees the slot; the
            // release under its owner's token after it covers an end with none
            String owner = "semantic/" + UUID.randomUUID();
            return store.tryAcquireProbe(embedKey, breaker.threshold(), PROBE_TTL, owner).flatMap(acquired -> acquired
                    ? embeddings(q, embedRoute, judged(q.org(), embedRoute, embedKey, embedGroup, SuccessWrite.AWAITED))
                            .onTermination().call(() -> store.releaseProbe(embedKey, owner)
                                    .onFailure().recoverWithNull())
                    : Uni.createFrom().item(Map.<String, float[]>of()));
        }).ifNoItem().after(TIMEOUT.plusSeconds(1)).recoverWithItem(Map.of())
                .onFailure().recoverWithItem(Map.of());
    }

    /** How an embeddings call's success is written for its route's breaker. */
    private enum SuccessWrite {
        /** Not at all: the route has no failure to reset (as a live attempt's success writes nothing then). */
        NONE,
        /** Sent on: it resets the route's failures. */
        SENT,
        /** Waited for: the call is the route's half-open probe, whose slot's release must not overtake its verdict. */
        AWAITED
    }

    /** An answer of the embeddings endpoint other than a 200. */
    private static final class Refused extends IllegalStateException {
        final int status;

        Refused(int status) {
            super("embeddings answered " + status);
            this.status = status;
        }
    }

    /**
     * The embeddings call with its outcome counted for the route's breaker: a failure against it (waited for) when it
     * is the route's fault (a transport failure, a timeout, a reply that is not embeddings, a status
     * {@link GroupSettings.Retry#routeFault} names), a success as {@code success} says.
     */
    private Function<List<String>, Uni<List<float[]>>> judged(Org org, Route embedRoute, String embedKey,
                                                              GroupSettings embedGroup, SuccessWrite success) {
        Provider provider = org.provider(embedRoute.provider()).orElseThrow();
        GroupSettings.Breaker breaker = embedGroup.breaker();
        return texts -> {
            Uni<List<float[]>> call = embed(provider, embedRoute.model(), texts).ifNoItem().after(TIMEOUT).fail()
                    .onFailure(t -> !(t instanceof Refused r) || embedGroup.retry().routeFault(r.status))
                    .call(t -> store.recordFailure(embedKey, breaker.threshold(), breaker.failTimeout())
                            .onFailure().recoverWithNull());
            Supplier<Uni<BreakerState>> write = () -> store.recordSuccess(embedKey, breaker.threshold(),
                    breaker.failTimeout());
            return switch (success) {
                case NONE -> call;
                case SENT -> call.invoke(v -> write.get().subscribe().with(x -> { }, e -> { }));
                case AWAITED -> call.call(v -> write.get().onFailure().recoverWithNull());
            };
        };
    }

    /**
     * The prompt's and the descriptions' embeddings, those of the descriptions not cached asked of {@code embed}
     * (with the prompt's, first); fails when it does.
     */
    private Uni<Map<String, float[]>> embeddings(Router.ExtrasQuery q, Route embedRoute,
                                                 Function<List<String>, Uni<List<float[]>>> embed) {
        Map<String, String> cacheKeys = new LinkedHashMap<>();
        for (Route r : q.routes()) {
            if (r.description() != null && !r.description().isBlank()) {
                cacheKeys.put(r.id(), "emb:" + Keys.sha256Hex(embedRoute.model() + "\n" + r.description()));
            }
        }
        List<Uni<Optional<String>>> reads = new ArrayList<>();
        cacheKeys.values().forEach(k -> reads.add(store.getOrgBlob(q.org().id(), k)));
        Uni<List<Optional<String>>> cached = reads.isEmpty() ? Uni.createFrom().item(List.of())
                : Uni.join().all(reads).andFailFast();
        return cached.flatMap(hits -> {
            Map<String, float[]> out = new HashMap<>();
            List<String> missingIds = new ArrayList<>();
            List<String> texts = new ArrayList<>();
            texts.add(TokenCounter.shared().head(q.facts().lastUserText(), embedRoute.contextWindow()));
            int i = 0;
            for (Map.Entry<String, String> e : cacheKeys.entrySet()) {
                Optional<String> hit = hits.get(i++);
                float[] v = hit.map(SemanticEmbeddings::decode).orElse(null);
                if (v != null) {
                    out.put(e.getKey(), v);
                } else {
                    missingIds.add(e.getKey());
                    texts.add(q.org().route(e.getKey()).orElseThrow().description());
                }
            }
            return embed.apply(texts).map(vectors -> {
                out.put("", vectors.get(0));
                for (int j = 0; j < missingIds.size(); j++) {
                    float[] v = vectors.get(j + 1);
                    out.put(missingIds.get(j), v);
                    store.putOrgBlob(q.org().id(), cacheKeys.get(missingIds.get(j)), encode(v), CACHE_TTL)
                            .subscribe().with(x -> { }, t -> { });
                }
                return out;
            });
        });
    }

    private Uni<List<float[]>> embed(Provider provider, String model, List<String> texts) {
        ObjectNode body = JsonNodeFactory.instance.objectNode();
        body.put("model", model);
        ArrayNode input = body.putArray("input");
        texts.forEach(input::add);
        UpstreamRequest req = UpstreamRequest.post(provider.baseUrl(), "/embeddings", provider.apiKey(), false,
                Json.bytes(body), TIMEOUT);
        return Uni.createFrom().<byte[]>emitter(em -> {
            ByteArrayOutputStream buf = new ByteArrayOutputStream();
            int[] status = new int[1];
            UpstreamClient.Exchange ex = upstream.send(req, new UpstreamHandler() {
                @Override
                public void onHead(int s, Map<String, String> h) {
                    status[0] = s;
                }

                @Override
                public void onData(byte[] bytes) {
                    if (buf.size() < 8 * 1024 * 1024) {
                        buf.writeBytes(bytes);
                    }
                }

                @Override
                public void onEnd() {
                    if (status[0] == 200) {
                        em.complete(buf.toByteArray());
                    } else {
                        em.fail(new Refused(status[0]));
                    }
                }

                @Override
                public void onError(TransportFailure failure) {
                    em.fail(new IllegalStateException(failure.detail()));
                }
            });
            em.onTermination(ex::cancel);
        }).map(bytes -> {
            try {
                JsonNode data = Json.parse(bytes).path("data");
                List<float[]> out = new ArrayList<>();
                for (JsonNode d : data) {
                    JsonNode emb = d.path("embedding");
                    float[] v = new float[emb.size()];
                    for (int k = 0; k < v.length; k++) {
                        v[k] = (float) emb.get(k).asDouble();
                    }
                    out.add(v);
                }
                if (out.size() != texts.size()) {
                    throw new IllegalStateException("embeddings returned " + out.size() + " of " + texts.size());
                }
                return out;
            } catch (java.io.IOException e) {
                throw new IllegalStateException(e);
            }
        });
    }

    static String encode(float[] v) {
        StringBuilder sb = new StringBuilder();
        for (int i = 0; i < v.length; i++) {
            if (i > 0) {
                sb.append(',');
            }
            sb.append(v[i]);
        }
        return sb.toString();
    }

    static float[] decode(String s) {
        try {
            String[] parts = s.split(",");
            float[] v = new float[parts.length];
            for (int i = 0; i < v.length; i++) {
                v[i] = Float.parseFloat(parts[i]);
            }
            return v;
        } catch (RuntimeException e) {
            return null;
        }
    }
}
