package dev.hedgerow.function.gateway;

import dev.hedgerow.sim.SimServer;
import dev.hedgerow.state.StateKeys;
import dev.hedgerow.testsupport.GatewayHarness;
import dev.hedgerow.testsupport.RedisServer;
import dev.hedgerow.testsupport.RedisStores;
import dev.hedgerow.testsupport.Resp;
import dev.hedgerow.testsupport.TcpLink;
import io.restassured.response.Response;
import io.vertx.core.Vertx;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

import java.io.IOException;
import java.util.Map;

import static dev.hedgerow.function.gateway.GroupKit.PROVIDERS;
import static dev.hedgerow.function.gateway.GroupKit.chat;
import static dev.hedgerow.function.gateway.GroupKit.received;
import static dev.hedgerow.testsupport.Eventually.eventually;
import static org.junit.jupiter.api.Assertions.assertEquals;

/**
 * A request whose routes cannot be planned because the state store failed the planning read: 503
 * {@code routing_unavailable}, and, as every refusal (Trifrost: each rejection is one blocked row), exactly one
 * blocked audit event with that reason. The gateway runs on a real Redis through a plain {@code RedisStateStore}
 * (no local fallback, so the store's error reaches the router), and the error is one Redis really returns: a route's
 * key holding the wrong type fails the snapshot script (WRONGTYPE) while the audit stream still takes writes. With
 * the link to Redis cut, the store the audit writes to is down too: the refusal is still answered at once (no hang,
 * no 500), and its event is lost.
 */
class RoutingUnavailableTest {
    static final String YAML = GroupKit.yaml("""
                  - { alias: kimi3, provider: openrouter, model: kimi-k2 }
                  - { alias: kimi3, provider: fireworks, model: kimi-k2 }
            """, """
                  kimi3: { strategy: rr_health, hedging: false }
            """);
    /** A key of the openrouter route's state that the snapshot script reads as a sorted set (its leases). */
    static final String LEASES = StateKeys.leases("acme/kimi3-openrouter");

    static RedisServer redis;
    static Vertx vertx;
    static TcpLink link;
    static Map<String, SimServer> sims;
    static RedisStores.Opened store;
    static GatewayHarness gw;

    @BeforeAll
    static void start() {
        redis = RedisServer.start();
        vertx = Vertx.vertx();
        link = TcpLink.to(vertx, redis.port());
        sims = GatewayHarness.startSims(vertx, GroupKit.sims(GroupKit.quick(4), "kimi-k2"));
        store = RedisStores.open(vertx, link.redisUrl());
        gw = GatewayHarness.start(vertx, YAML, sims, store.store());
    }

    @AfterAll
    static void stop() {
        gw.close();
        store.close();
        sims.values().forEach(SimServer::close);
        link.close();
        vertx.close().toCompletionStage().toCompletableFuture().join();
        redis.close();
    }

    @AfterEach
    void repair() throws IOException {
        link.restore();
        Resp.command(redis.port(), "DEL", LEASES);
    }

    static long upstream() {
        return PROVIDERS.stream().mapToLong(p -> received(gw, p, "kimi-k2")).sum();
    }

    @Test
    void aPlanningReadTheStoreFailsIs503RoutingUnavailableWithOneBlockedEvent() throws IOException {
        assertEquals(200, chat(gw, "kimi3", "before").statusCode());
        long sent = upstream();
        long before = GroupKit.blocked(store.store(), "routing_unavailable");
        Resp.command(redis.port(), "SET", LEASES, "not a sorted set");

        Response r = chat(gw, "kimi3", "unplannable");
        assertEquals(503, r.statusCode(), r.asString());
        assertEquals("routing_unavailable", r.jsonPath().getString("error.code"));
        assertEquals("1", r.header("Retry-After"));
        assertEquals("1000", r.header("retry-after-ms"));
        String id = r.header("x-hedgerow-request-id");
        eventually(() -> GroupKit.blocked(store.store(), "routing_unavailable") == before + 1,
                "one blocked event for the refusal");
        Map<String, String> e = GroupKit.audit(store.store(), "blocked").stream()
                .filter(x -> id.equals(x.get("request_id"))).findFirst().orElseThrow();
        assertEquals("routing_unavailable", e.get("reason"));
        assertEquals("kimi3", e.get("alias"));
        assertEquals(r.jsonPath().getString("error.message"), e.get("message"));
        assertEquals(1, GroupKit.audit(store.store(), "blocked").stream()
                .filter(x -> id.equals(x.get("request_id"))).count(), "exactly one");
        assertEquals(sent, upstream(), "nothing went upstream");

        // the store answers again: so does the gateway
        Resp.command(redis.port(), "DEL", LEASES);
        assertEquals(200, chat(gw, "kimi3", "after").statusCode());
    }

    @Test
    void withTheAuditStoreDownTooTheRefusalIsStillAnswered() {
        assertEquals(200, chat(gw, "kimi3", "before the outage").statusCode());
        long sent = upstream();
        link.cut();
        for (int i = 0; i < 3; i++) {
            Response r = chat(gw, "kimi3", "store unreachable " + i);
            assertEquals(503, r.statusCode(), r.asString());
            assertEquals("routing_unavailable", r.jsonPath().getString("error.code"));
        }
        assertEquals(sent, upstream(), "nothing went upstream");
        link.restore();
        eventually(() -> chat(gw, "kimi3", "store back").statusCode() == 200, "serving again once Redis is back");
    }
}
