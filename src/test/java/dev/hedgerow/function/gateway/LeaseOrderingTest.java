package dev.hedgerow.function.gateway;

import dev.hedgerow.sim.ModelScript;
import dev.hedgerow.sim.SimConfig;
import dev.hedgerow.state.MemoryStateStore;
import dev.hedgerow.state.StateStore;
import dev.hedgerow.testsupport.GatewayHarness;
import dev.hedgerow.time.Ticker;
import io.smallrye.mutiny.Uni;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

import java.lang.reflect.InvocationTargetException;
import java.lang.reflect.Proxy;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.concurrent.atomic.AtomicInteger;

import static dev.hedgerow.testsupport.Eventually.eventually;
import static io.restassured.RestAssured.given;
import static org.junit.jupiter.api.Assertions.assertEquals;

/**
 * Lease writes are fire-and-forget, and on Redis they travel over separate pooled connections, so a later write can
 * land before an earlier one. Here the real memory store receives every acquire 200 ms late (as a slow connection
 * would deliver it): the release must still land after it, or the lease would stay counted until its TTL.
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

    static GatewayHarness gw;
    static final AtomicInteger acquiresLanded = new AtomicInteger();
    static final AtomicInteger releasesLanded = new AtomicInteger();
    static final MemoryStateStore real = new MemoryStateStore(Ticker.system());

    @BeforeAll
    static void start() {
        StateStore slowAcquires = (StateStore) Proxy.newProxyInstance(StateStore.class.getClassLoader(),
                new Class<?>[] {StateStore.class}, (proxy, method, args) -> {
                    switch (method.getName()) {
                        case "acquireLease" -> {
                            return Uni.createFrom().voidItem().onItem().delayIt().by(Duration.ofMillis(200))
                                    .chain(() -> real.acquireLease((String) args[0], (String) args[1],
                                            (Duration) args[2]))
                                    .invoke(acquiresLanded::incrementAndGet);
                        }
                        case "releaseLease" -> {
                            return real.releaseLease((String) args[0], (String) args[1])
                                    .invoke(releasesLanded::incrementAndGet);
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

    @AfterAll
    static void stop() {
        gw.close();
    }

    @Test
    void aReleaseNeverOvertakesItsAcquire() {
        given().baseUri(gw.baseUrl()).auth().oauth2("k-acme").contentType("application/json")
                .body("{\"model\":\"chat\",\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}]}")
                .post("/v1/chat/completions").then().statusCode(200);
        eventually(() -> acquiresLanded.get() >= 1 && releasesLanded.get() >= 1, "the acquire and the release land");
        assertEquals(1, acquiresLanded.get());
        assertEquals(1, releasesLanded.get());
        String key = "acme/chat-alpha";
        assertEquals(0, real.snapshot(List.of(key), Duration.ofMinutes(1)).await().atMost(Duration.ofSeconds(5))
                .get(key).inflight());
    }
}
