package dev.hedgerow.function.gateway;

import dev.hedgerow.sim.ModelScript;
import dev.hedgerow.sim.SimConfig;
import dev.hedgerow.state.ForwardingStateStore;
import dev.hedgerow.state.MemoryStateStore;
import dev.hedgerow.state.RouteSnapshot;
import dev.hedgerow.state.StateStore;
import dev.hedgerow.testsupport.GatewayHarness;
import dev.hedgerow.time.Ticker;
import io.smallrye.mutiny.Uni;
import org.junit.jupiter.api.Test;

import java.io.OutputStream;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.Collection;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.atomic.AtomicInteger;

import static dev.hedgerow.testsupport.Eventually.eventually;
import static org.junit.jupiter.api.Assertions.assertEquals;

/**
 * A client that hangs up while its request is planned (the planning's store read on its way) is counted once in
 * hedgerow_requests_total as 499: the edge counted it when the connection closed, and dispatch, finding the
 * connection gone, counted and logged it again (found by review3). Dispatch now counts and logs it alone.
 */
class HangUpWhilePlannedTest {
    static final String YAML = """
            orgs:
              - id: acme
                keys: [{ name: app, key: "k-acme" }]
                providers:
                  - { id: alpha, base_url: "${SIM_ALPHA_URL}" }
                routes:
                  - { alias: chat, provider: alpha, model: m }
            """;

    /** The memory store whose snapshot reads (planning's) wait until the test lets them through. */
    static final class HeldSnapshots extends ForwardingStateStore {
        final CompletableFuture<Void> release = new CompletableFuture<>();
        final AtomicInteger asked = new AtomicInteger();

        HeldSnapshots(StateStore inner) {
            super(inner);
        }

        @Override
        public Uni<Map<String, RouteSnapshot>> snapshot(Collection<String> routeIds, Duration usageWindow) {
            asked.incrementAndGet();
            return Uni.createFrom().completionStage(release).flatMap(v -> inner.snapshot(routeIds, usageWindow));
        }
    }

    @Test
    void aHangUpWhileTheRequestIsPlannedIsCountedOnce() throws Exception {
        HeldSnapshots store = new HeldSnapshots(new MemoryStateStore(Ticker.system()));
        try (GatewayHarness gw = GatewayHarness.start(YAML, Map.of("alpha", SimConfig.of(1).withModel("m",
                ModelScript.defaults().withLength(4))), store)) {
            String body = "{\"model\":\"chat\",\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}]}";
            try (Socket s = new Socket("127.0.0.1", gw.port())) {
                OutputStream out = s.getOutputStream();
                out.write(("POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer k-acme\r\n"
                        + "Content-Type: application/json\r\nContent-Length: " + body.length() + "\r\n\r\n" + body)
                        .getBytes(StandardCharsets.US_ASCII));
                out.flush();
                eventually(() -> store.asked.get() > 0, "the request is being planned");
            } // hang up
            Thread.sleep(300);   // the close reaches the edge's end handler (it counted the 499 there, before)
            store.release.complete(null);
            eventually(() -> gw.metric("hedgerow_requests", "status", "499") >= 1, "the 499 is counted");
            Thread.sleep(500);   // a second count, if any, follows at once
            assertEquals(1.0, gw.metric("hedgerow_requests", "status", "499"));
        }
    }
}
