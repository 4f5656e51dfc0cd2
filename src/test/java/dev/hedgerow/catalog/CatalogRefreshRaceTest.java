package dev.hedgerow.catalog;

import dev.hedgerow.state.MemoryStateStore;
import dev.hedgerow.state.StateStore;
import dev.hedgerow.state.VersionedDoc;
import dev.hedgerow.time.FakeScheduler;
import dev.hedgerow.time.FakeTicker;
import io.smallrye.mutiny.Uni;
import org.junit.jupiter.api.Test;

import java.lang.reflect.InvocationTargetException;
import java.lang.reflect.Proxy;
import java.util.Optional;
import java.util.concurrent.CompletableFuture;

import static org.junit.jupiter.api.Assertions.assertEquals;

/**
 * Two refreshes of the catalog overlap (the poll, and the one an admin edit runs before it answers): the slower one
 * read an older version of an org, and set the catalog after the faster one had set the newer, so the instance
 * served (and showed its admin) the org as it was before the edit just confirmed, until the next poll (found by
 * review4). Each org's change now applies only while the catalog still holds the version its refresh started from.
 */
class CatalogRefreshRaceTest {
    static final String YAML = """
            orgs:
              - id: acme
                keys: [{ name: app, key: "k" }]
                providers:
                  - { id: a, base_url: "http://a.invalid/v1" }
                routes:
                  - { alias: chat, provider: a, model: MODEL }
            """;

    final FakeTicker ticker = new FakeTicker();
    final MemoryStateStore memory = new MemoryStateStore(ticker);
    /** While set, a read of an org's catalog is made at once but answered only when the test completes this. */
    CompletableFuture<Void> holdReads;

    final StateStore store = (StateStore) Proxy.newProxyInstance(StateStore.class.getClassLoader(),
            new Class<?>[] {StateStore.class}, (p, method, args) -> {
                Object result;
                try {
                    result = method.invoke(memory, args);
                } catch (InvocationTargetException e) {
                    throw e.getCause();
                }
                if (method.getName().equals("orgCatalog") && holdReads != null) {
                    // what the store held when asked, delivered late
                    Optional<?> read = ((Uni<Optional<?>>) result).await().indefinitely();
                    CompletableFuture<Void> gate = holdReads;
                    return Uni.createFrom().completionStage(gate.thenApply(v -> read));
                }
                return result;
            });

    void store(String model, long version) {
        Org org = new CatalogLoader(k -> null).parse(YAML.replace("MODEL", model)).orgs().get(0);
        memory.putOrgCatalog("acme", new VersionedDoc(CatalogCodec.toJson(org), null, 0, 0), version - 1)
                .await().indefinitely();
    }

    static String model(CatalogService c) {
        return c.current().org("acme").orElseThrow().routes().get(0).model();
    }

    @Test
    void aSlowRefreshNeverPutsBackAnOlderVersionThanAFasterOneSet() {
        CatalogService catalog = new CatalogService(store, new FakeScheduler(ticker), CatalogCodec::toJson,
                CatalogCodec::fromJson);
        store("m1", 1);
        catalog.refresh().await().indefinitely();
        assertEquals("m1", model(catalog));

        store("m2", 2);
        holdReads = new CompletableFuture<>();
        CompletableFuture<Void> slow = catalog.refresh().subscribeAsCompletionStage();   // reads m2, answered late
        CompletableFuture<Void> gate = holdReads;
        holdReads = null;
        store("m3", 3);
        catalog.refresh().await().indefinitely();                                          // reads m3 at once
        assertEquals("m3", model(catalog));

        gate.complete(null);
        slow.join();
        assertEquals("m3", model(catalog), "the slower refresh put back version 2");
        assertEquals(3L, catalog.current().versions().get("acme"));
    }
}
