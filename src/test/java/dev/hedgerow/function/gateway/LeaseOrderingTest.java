package dev.hedgerow.function.gateway;

import dev.hedgerow.sim.ModelScript;
import dev.hedgerow.sim.SimConfig;
import dev.hedgerow.state.MemoryStateStore;
import dev.hedgerow.state.StateStore;
import dev.hedgerow.testsupport.GatewayHarness;
import dev.hedgerow.time.Ticker;
import io.smallrye.mutiny.Uni;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

import java.lang.reflect.InvocationTargetException;
import java.lang.reflect.Proxy;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CopyOnWriteArrayList;

import static dev.hedgerow.testsupport.Eventually.eventually;
import static io.restassured.RestAssured.given;
import static org.junit.jupiter.api.Assertions.assertEquals;

/**
 * Lease writes are fire-and-forget, and on Redis they travel over separate pooled connections, so a later write can
 * land before an earlier one. Here the real memory store receives the acquire only when the test completes it by
 * hand, after the whole response has reached the client (as a slow connection would deliver it late): the release,
 * already due by then, must still land after it, or the lease would stay counted until its TTL.
 */
class LeaseOrderingTest {
    static final String YAML = """
            orgs:
              - id: acme
                keys: [{ name: app, key: "k-acme" }]
                providers:
                  - { id: alpha, base_url: "${SIM_ALPHA_URL}" }
                routes:
                  - { alias: chat, provider: alpha, model: alpha-model }
            """;

    /** Completed by the test: until then every acquire is held on its way to the store. */
    final CompletableFuture<Void> acquireDelivered = new CompletableFuture<>();
    /** The lease calls in the order the gateway made them ("sent") and the store applied them ("landed"). */
    final List<String> events = new CopyOnWriteArrayList<>();
    final MemoryStateStore real = new MemoryStateStore(Ticker.system());
    GatewayHarness gw;

    @BeforeEach
    void start() {
        StateStore slowAcquires = (StateStore) Proxy.newProxyInstance(StateStore.class.getClassLoader(),
                new Class<?>[] {StateStore.class}, (proxy, method, args) -> {
                    switch (method.getName()) {
                        case "acquireLease" -> {
                            events.add("acquire sent");
                            return Uni.createFrom().completionStage(acquireDelivered)
                                    .chain(() -> real.acquireLease((String) args[0], (String) args[1],
                                            (Duration) args[2]))
                                    .invoke(() -> events.add("acquire landed"));
                        }
                        case "releaseLease" -> {
                            events.add("release sent");
                            return real.releaseLease((String) args[0], (String) args[1])
                                    .invoke(() -> events.add("release landed"));
                        }
                        default -> {
                            try {
                                return method.invoke(real, args);
                            } catch (InvocationTargetException e) {
                                throw e.getCause();
                            }
                        }
                    }
                });
        gw = GatewayHarness.start(YAML, Map.of("alpha", SimConfig.of(3).withModel("alpha-model",
                ModelScript.defaults().withLength(4))), slowAcquires);
    }

    @AfterEach
    void stop() {
        gw.close();
    }

    @Test
    void aReleaseNeverOvertakesItsAcquire() {
        given().baseUri(gw.baseUrl()).auth().oauth2("k-acme").contentType("application/json")
                .body("{\"model\":\"chat\",\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}]}")
                .post("/v1/chat/completions").then().statusCode(200);
        // the attempt ended (and asked for its release) before the response was written, so the release is due now
        // while its acquire is still held: it must wait for it
        assertEquals(List.of("acquire sent"), events);

        acquireDelivered.complete(null);
        eventually(() -> events.contains("release landed"), "the release lands");
        assertEquals(List.of("acquire sent", "acquire landed", "release sent", "release landed"), events);
        String key = "acme/chat-alpha";
        assertEquals(0, real.snapshot(List.of(key), Duration.ofMinutes(1)).await().atMost(Duration.ofSeconds(5))
                .get(key).inflight());
    }
}
