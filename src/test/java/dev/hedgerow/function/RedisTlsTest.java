package dev.hedgerow.function;

import dev.hedgerow.state.ResilientStateStore;
import dev.hedgerow.state.StateKeys;
import dev.hedgerow.testsupport.Resp;
import dev.hedgerow.testsupport.TlsRedis;
import io.vertx.core.Vertx;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

import java.time.Duration;
import java.util.Optional;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * The app's Redis store ({@link HedgerowApp#redisStore}, as shipped) on a Redis that takes TLS, as a managed one does
 * (ElastiCache Serverless takes nothing else): {@code rediss://} never connected, since Vert.x 4.5 refuses a TLS
 * connection whose client did not say which hostname check it wants, and the instance served on local state for
 * good, its readiness saying only "degraded" (found by hunt15). The whole application on a TLS Redis, over HTTP, is
 * {@code RedisTlsAppTest}.
 */
class RedisTlsTest {
    static final Duration WAIT = Duration.ofSeconds(10);

    static TlsRedis redis;
    static Vertx vertx;

    @BeforeAll
    static void start() {
        redis = TlsRedis.start();
        vertx = Vertx.vertx();
    }

    @AfterAll
    static void stop() {
        vertx.close().toCompletionStage().toCompletableFuture().join();
        redis.close();
    }

    static ResilientStateStore store(String url, Optional<String> ca, boolean verifyHost) {
        return HedgerowApp.redisStore(vertx, url, false, new HedgerowApp.RedisTls(ca, verifyHost));
    }

    @Test
    void stateIsSharedOverTls() throws Exception {
        ResilientStateStore store = store(redis.url(), Optional.of(redis.caFile()), true);
        assertTrue(store.ping().await().atMost(WAIT), store.lastFailure());
        store.putRouteBlob("acme/one", "capacity", "over tls", null).await().atMost(WAIT);
        assertFalse(store.degraded(), store.lastFailure());
        assertEquals("over tls", Resp.command(redis.server().port(), "GET",
                StateKeys.routeBlob("acme/one", "capacity")));
    }

    /** The certificate must name the host connected to, unless the operator turns the check off. */
    @Test
    void aCertificateThatDoesNotNameTheHostIsRefusedUnlessTheCheckIsOff() {
        ResilientStateStore checked = store(redis.urlByAddress(), Optional.of(redis.caFile()), true);
        assertFalse(checked.ping().await().atMost(WAIT), "127.0.0.1 is not in a certificate for localhost");
        // readiness says why (a first ping on a cold JVM may outlast the store's 1 s guard instead: a few are given)
        for (int i = 0; i < 3 && !checked.lastFailure().contains("No subject alternative"); i++) {
            assertFalse(checked.ping().await().atMost(WAIT));
        }
        assertTrue(checked.lastFailure().contains("No subject alternative names matching IP address 127.0.0.1"),
                checked.lastFailure());
        ResilientStateStore unchecked = store(redis.urlByAddress(), Optional.of(redis.caFile()), false);
        assertTrue(unchecked.ping().await().atMost(WAIT), unchecked.lastFailure());
    }

    /** A server certificate no trusted authority issued is refused (the JVM's authorities are the default). */
    @Test
    void anAuthorityNotTrustedIsRefused() {
        ResilientStateStore untrusted = store(redis.url(), Optional.empty(), true);
        assertFalse(untrusted.ping().await().atMost(WAIT));
    }
}
