package dev.hedgerow.catalog;

import dev.hedgerow.state.MemoryStateStore;
import dev.hedgerow.state.VersionedDoc;
import dev.hedgerow.time.FakeScheduler;
import dev.hedgerow.time.FakeTicker;
import io.vertx.core.Context;
import io.vertx.core.Vertx;
import org.junit.jupiter.api.Test;

import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;

/**
 * An org's edit (an admin group edit is judged by the file loader's YAML parse, which takes seconds for a body of a
 * megabyte) runs on a worker thread, never on the event loop the store answered on: that loop serves the gateway's
 * requests too, and a large admin edit held them for as long as the parse took.
 */
class CatalogUpdateThreadTest {
    static final String YAML = """
            orgs:
              - id: acme
                keys: [{ name: app, key: "k" }]
                providers:
                  - { id: a, base_url: "http://a.invalid/v1" }
                routes:
                  - { alias: chat, provider: a, model: m }
            """;

    @Test
    void anEditIsAppliedOffTheEventLoop() throws Exception {
        FakeTicker ticker = new FakeTicker();
        MemoryStateStore store = new MemoryStateStore(ticker);
        CatalogService catalog = new CatalogService(store, new FakeScheduler(ticker), CatalogCodec::toJson,
                CatalogCodec::fromJson);
        Org org = new CatalogLoader(k -> null).parse(YAML).orgs().get(0);
        store.putOrgCatalog("acme", new VersionedDoc(CatalogCodec.toJson(org), null, 0, 1), 0).await().indefinitely();
        Vertx vertx = Vertx.vertx();
        try {
            CompletableFuture<Boolean> editedOnLoop = new CompletableFuture<>();
            CompletableFuture<Org> saved = new CompletableFuture<>();
            vertx.runOnContext(v -> catalog.update("acme", o -> {
                editedOnLoop.complete(Context.isOnEventLoopThread());
                return o;
            }).subscribe().with(saved::complete, saved::completeExceptionally));
            assertFalse(editedOnLoop.get(10, TimeUnit.SECONDS), "the edit ran on the event loop");
            assertEquals("acme", saved.get(10, TimeUnit.SECONDS).id());
        } finally {
            vertx.close().toCompletionStage().toCompletableFuture().get(10, TimeUnit.SECONDS);
        }
    }
}
