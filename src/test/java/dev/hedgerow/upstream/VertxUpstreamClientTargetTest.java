package dev.hedgerow.upstream;

import io.vertx.core.Vertx;
import io.vertx.core.VertxException;
import io.vertx.core.http.RequestOptions;
import org.junit.jupiter.api.Test;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;

/**
 * The upstream client parses each provider URL once and addresses requests exactly as Vert.x's own
 * {@code setAbsoluteURI} would: same host, port (defaults 80/443), TLS flag and path with query.
 */
class VertxUpstreamClientTargetTest {

    static void assertLikeVertx(String url) {
        RequestOptions vertx = new RequestOptions().setAbsoluteURI(url);
        VertxUpstreamClient.Target ours = VertxUpstreamClient.Target.of(url);
        assertEquals(vertx.getHost(), ours.host(), url);
        assertEquals(vertx.getPort(), ours.port(), url);
        assertEquals(vertx.isSsl(), ours.ssl(), url);
        assertEquals(vertx.getURI(), ours.uri(), url);
    }

    @Test
    void addressesEveryKindOfProviderUrlAsVertxDoes() {
        assertLikeVertx("http://127.0.0.1:8081/v1/chat/completions");
        assertLikeVertx("http://localhost/v1/chat/completions");
        assertLikeVertx("https://api.openai.com/v1/chat/completions");
        assertLikeVertx("https://example.openai.azure.com:8443/openai/deployments/gpt/chat/completions"
                + "?api-version=2024-06-01");
        assertLikeVertx("https://example.com");
        assertLikeVertx("http://[::1]:9000/v1/embeddings");
    }

    @Test
    void defaultsPortsByScheme() {
        assertEquals(443, VertxUpstreamClient.Target.of("https://api.example.com/v1").port());
        assertEquals(80, VertxUpstreamClient.Target.of("http://api.example.com/v1").port());
        assertEquals("/?a=b", VertxUpstreamClient.Target.of("http://h?a=b").uri());
    }

    @Test
    void refusesWhatIsNotAnHttpUrl() {
        assertThrows(VertxException.class, () -> VertxUpstreamClient.Target.of("not a url"));
        assertThrows(IllegalArgumentException.class, () -> VertxUpstreamClient.Target.of("ftp://h/x"));
    }

    @Test
    void remembersEachUrlAndStartsOverWhenFull() {
        Vertx vertx = Vertx.vertx();
        try {
            VertxUpstreamClient client = new VertxUpstreamClient(vertx, 4);
            String url = "http://127.0.0.1:1/v1/chat/completions";
            VertxUpstreamClient.Target first = client.target(url);
            assertSame(first, client.target(url));
            for (int i = 0; i < 1024; i++) {
                client.target("http://127.0.0.1:1/v" + i);
            }
            VertxUpstreamClient.Target again = client.target(url);
            assertEquals(first, again);
            assertSame(again, client.target(url));
            client.close();
        } finally {
            vertx.close().toCompletionStage().toCompletableFuture().join();
        }
    }
}
