package dev.hedgerow.function;

import org.junit.jupiter.api.Test;

import java.io.IOException;
import java.net.ConnectException;
import java.net.InetSocketAddress;
import java.net.Socket;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * The demo's simulators: real HTTP servers on loopback, one per provider of the demo catalog, and gone (their ports
 * closed) once {@link DemoFleet#close()} returns, as the application's shutdown expects.
 */
class DemoFleetTest {

    @Test
    void servesEveryDemoProviderOnLoopbackAndStopsListeningWhenClosed() throws Exception {
        List<URI> roots = new ArrayList<>();
        try (DemoFleet fleet = DemoFleet.start()) {
            Map<String, String> env = fleet.environment();
            assertEquals(List.of("SIM_OPENROUTER_URL", "SIM_DIGITALOCEAN_URL", "SIM_FIREWORKS_URL",
                    "SIM_TOGETHER_URL"), List.copyOf(env.keySet()));
            HttpClient http = HttpClient.newHttpClient();
            for (String base : env.values()) {
                URI uri = URI.create(base + "/models");
                assertEquals("127.0.0.1", uri.getHost(), base);
                HttpResponse<String> r = http.send(HttpRequest.newBuilder(uri).build(),
                        HttpResponse.BodyHandlers.ofString());
                assertEquals(200, r.statusCode(), base + ": " + r.body());
                assertTrue(r.body().contains("\"owned_by\":\"hedgerow-sim\""), r.body());
                roots.add(uri);
            }
        }
        for (URI uri : roots) {
            assertThrows(ConnectException.class, () -> connect(uri), uri + " still accepts connections");
        }
    }

    private static void connect(URI uri) throws IOException {
        try (Socket s = new Socket()) {
            s.connect(new InetSocketAddress(uri.getHost(), uri.getPort()), 2000);
        }
    }
}
