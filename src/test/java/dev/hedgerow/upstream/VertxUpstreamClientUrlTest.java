package dev.hedgerow.upstream;

import io.vertx.core.Vertx;
import io.vertx.core.VertxException;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

import java.net.URL;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotSame;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;

/**
 * The upstream client parses each provider URL once and remembers it (bounded); sending through it is what every
 * gateway test over the simulator does.
 */
class VertxUpstreamClientUrlTest {
    final Vertx vertx = Vertx.vertx();
    final VertxUpstreamClient client = new VertxUpstreamClient(vertx, 4);

    @AfterEach
    void close() {
        client.close();
        vertx.close().toCompletionStage().toCompletableFuture().join();
    }

    @Test
    void remembersEachUrlAndStartsOverWhenFull() throws Exception {
        String url = "https://example.openai.azure.com:8443/openai/deployments/gpt/chat/completions?api-version=1";
        URL first = client.url(url);
        assertEquals(new URL(url), first);
        assertSame(first, client.url(url), "parsed once");
        for (int i = 0; i < 1024; i++) {
            client.url("http://127.0.0.1:1/v" + i);
        }
        URL again = client.url(url);
        assertNotSame(first, again, "the memory started over");
        assertEquals(first, again);
    }

    @Test
    void refusesAMalformedUrlAsVertxDoes() {
        assertThrows(VertxException.class, () -> client.url("not a url"));
    }
}
