package dev.hedgerow.function.gateway;

import dev.hedgerow.sim.ModelScript;
import dev.hedgerow.sim.SimConfig;
import dev.hedgerow.function.ShutdownGate;
import dev.hedgerow.state.MemoryStateStore;
import dev.hedgerow.testsupport.GatewayHarness;
import dev.hedgerow.time.Ticker;
import org.junit.jupiter.api.Test;

import java.io.InputStream;
import java.io.OutputStream;
import java.net.InetSocketAddress;
import java.net.Socket;
import java.net.SocketException;
import java.nio.charset.StandardCharsets;
import java.util.Map;

import static dev.hedgerow.testsupport.Eventually.eventually;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * A client that stops reading its stream: the gateway reads the provider as it writes, so it buffered the whole answer
 * for such a client, hundreds of MB (found by review3). Once the client has left 8 MiB unread it is taken for gone:
 * its connection is reset and the request ends as a hang-up, logged 499 (its upstream call hung up on, when it is
 * still running), instead of running to the end of the answer.
 */
class SlowReaderTest {
    static final String YAML = """
            orgs:
              - id: acme
                keys: [{ name: app, key: "k-acme" }]
                providers:
                  - { id: alpha, base_url: "${SIM_ALPHA_URL}" }
                routes:
                  - { alias: chat, provider: alpha, model: m, context_window: 1000000 }
            """;

    /**
     * ... and its connection is closed at once, with what was queued for it: the response's own reset closed it only
     * once the queue was sent, which a client that reads nothing never takes, and Vert.x never ran the request's end
     * handlers, so the shutdown gate counted it in flight for good (readiness over-counted, and every later shutdown
     * waited out its whole grace period; found by hunt11).
     */
    @Test
    void aClientThatStopsReadingIsTakenForGoneOnceItLeftTheLimitUnread() throws Exception {
        ShutdownGate gate = new ShutdownGate();
        // 400,000 tokens written as fast as the gateway reads them: about 60 MB of stream
        try (GatewayHarness gw = GatewayHarness.start(YAML, Map.of("alpha", SimConfig.of(1).withModel("m",
                ModelScript.defaults().withLength(400_000).withLatency(ModelScript.Latency.of(1, 0)))),
                new MemoryStateStore(Ticker.system()), (router, core) -> gate.mount(router))) {
            String body = "{\"model\":\"chat\",\"stream\":true,\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}]}";
            try (Socket s = new Socket()) {
                s.setReceiveBufferSize(4096);
                s.connect(new InetSocketAddress("127.0.0.1", gw.port()));
                OutputStream out = s.getOutputStream();
                out.write(("POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer k-acme\r\n"
                        + "Content-Type: application/json\r\nContent-Length: " + body.length() + "\r\n\r\n" + body)
                        .getBytes(StandardCharsets.US_ASCII));
                out.flush();
                InputStream in = s.getInputStream();
                in.read(new byte[512]); // the head; then nothing is read while the answer streams
                eventually(() -> gw.metric("hedgerow_requests", "status", "499") == 1.0,
                        "the client that stopped reading is taken for gone");
                eventually(() -> gate.inFlight() == 0, "the request ends at the shutdown gate too");
                long read = 0;
                try {
                    for (int n = in.read(new byte[65536]); n >= 0; n = in.read(new byte[65536])) {
                        read += n;
                    }
                } catch (SocketException reset) {
                    // the connection was reset: what was queued for the client is dropped
                }
                assertTrue(read < 8 * 1024 * 1024, // the limit, which a graceful close would have sent first
                        "read " + read + " bytes before the connection ended");
            }
            assertEquals(0.0, gw.metric("hedgerow_requests", "status", "200"));
        }
    }
}
