package dev.hedgerow.upstream;

import dev.hedgerow.sim.ModelScript;
import dev.hedgerow.sim.SimConfig;
import dev.hedgerow.sim.SimServer;
import dev.hedgerow.testsupport.IgnoringHandler;
import io.vertx.core.Vertx;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicReference;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * The upstream client checks each connection's resolved peer address before sending, over real HTTP to the
 * simulator: addressed by the name {@code localhost}, the request resolves to 127.0.0.1, which a blocking rule
 * refuses as a connect failure with nothing sent; with no rule it is served. (The gateway's rule is
 * {@code ProviderUrls.metadataReason}; no test host resolves a name to a metadata address, so loopback stands in.)
 */
class VertxUpstreamClientPeerTest {
    static Vertx vertx;
    static SimServer sim;

    @BeforeAll
    static void start() {
        vertx = Vertx.vertx();
        sim = SimServer.startBlocking(vertx, SimConfig.of(1).withModel("m", ModelScript.defaults().withLength(4)
                .withLatency(ModelScript.Latency.of(1, 0))));
    }

    @AfterAll
    static void stop() {
        sim.close();
        vertx.close().toCompletionStage().toCompletableFuture().join();
    }

    record Outcome(int status, TransportFailure failure) {
    }

    static Outcome send(VertxUpstreamClient client) throws Exception {
        CompletableFuture<Outcome> out = new CompletableFuture<>();
        byte[] body = "{\"model\":\"m\",\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}]}"
                .getBytes(StandardCharsets.UTF_8);
        client.send(UpstreamRequest.post("http://localhost:" + sim.port() + "/v1", "/chat/completions", null, false,
                body, Duration.ofSeconds(5)), new UpstreamHandler() {
                    int status;

                    @Override
                    public void onHead(int s, Map<String, String> headers) {
                        status = s;
                    }

                    @Override
                    public void onData(byte[] bytes) {
                    }

                    @Override
                    public void onEnd() {
                        out.complete(new Outcome(status, null));
                    }

                    @Override
                    public void onError(TransportFailure failure) {
                        out.complete(new Outcome(0, failure));
                    }
                });
        return out.get(10, TimeUnit.SECONDS);
    }

    @Test
    void aNameResolvingToABlockedAddressFailsAsAConnectErrorWithNothingSent() throws Exception {
        VertxUpstreamClient client = new VertxUpstreamClient(vertx, 4,
                ip -> ip.equals("127.0.0.1") ? "a test's blocked address" : null);
        try {
            long before = sim.stats("m").received();
            Outcome o = send(client);
            assertEquals(TransportFailure.Kind.CONNECT, o.failure().kind());
            assertTrue(o.failure().detail().contains("localhost (127.0.0.1): a test's blocked address"),
                    o.failure().detail());
            assertEquals(before, sim.stats("m").received(), "nothing reached the upstream");
        } finally {
            client.close();
        }
    }

    /**
     * A cancel that lands after the request's connection came but before the request is held for {@code cancel} to
     * reset (the peer check runs in that window: its rule cancels here, standing for another thread's cancel) still
     * keeps the request from being sent. A second request on the one-connection pool is served after it: the first,
     * had it been sent, would have reached the simulator before it.
     */
    @Test
    void aCancelRacingTheConnectionsArrivalSendsNothing() throws Exception {
        AtomicReference<UpstreamClient.Exchange> first = new AtomicReference<>();
        AtomicBoolean checked = new AtomicBoolean();
        VertxUpstreamClient client = new VertxUpstreamClient(vertx, 1, ip -> {
            if (checked.compareAndSet(false, true)) {
                while (first.get() == null) {
                    Thread.onSpinWait();   // send() is returning on the test thread
                }
                first.get().cancel();
            }
            return null;
        });
        try {
            long before = sim.stats("m").received();
            byte[] body = "{\"model\":\"m\",\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}]}"
                    .getBytes(StandardCharsets.UTF_8);
            first.set(client.send(UpstreamRequest.post("http://localhost:" + sim.port() + "/v1", "/chat/completions",
                    null, false, body, Duration.ofSeconds(5)), new IgnoringHandler()));
            assertEquals(new Outcome(200, null), send(client));
            assertEquals(before + 1, sim.stats("m").received(), "only the second request reached the upstream");
        } finally {
            client.close();
        }
    }

    @Test
    void anAllowedAddressIsServed() throws Exception {
        VertxUpstreamClient client = new VertxUpstreamClient(vertx, 4, ip -> null);
        try {
            assertEquals(new Outcome(200, null), send(client));
        } finally {
            client.close();
        }
    }
}
