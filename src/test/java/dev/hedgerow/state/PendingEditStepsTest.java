package dev.hedgerow.state;

import dev.hedgerow.time.FakeTicker;
import io.smallrye.mutiny.Uni;
import org.junit.jupiter.api.Test;

import java.io.IOException;
import java.time.Duration;
import java.util.Map;
import java.util.Optional;
import java.util.function.Supplier;

import static dev.hedgerow.testsupport.Eventually.eventually;
import static org.junit.jupiter.api.Assertions.assertEquals;

/**
 * An org edited many times while the shared store does not answer is one pending edit, which keeps the documents it
 * made on the way so that one of them found in the store (a write that timed out here and landed after all) is known
 * for its own and written over. It keeps the last {@code MAX_OWN} (16) of them, so a long outage's edits cannot grow
 * it without bound: a step older than those is taken for another instance's edit, and the pending edit is dropped and
 * counted lost, as the class comment says. The end-to-end case of a landed write, over Redis behind a relay, is
 * PartitionedEditTest's; this one pins the bound.
 */
class PendingEditStepsTest {
    /** Short breaker delay so the store is tried again quickly once up; one success closes the breaker. */
    static final ResilientStateStore.Settings SETTINGS =
            new ResilientStateStore.Settings(Duration.ofMillis(500), 4, 0.5, Duration.ofMillis(100), 1);
    static final Duration WAIT = Duration.ofSeconds(10);

    /** The shared store, refusing every catalog call while {@link #up} is false, as an unreachable Redis does. */
    static final class Shared extends ForwardingStateStore {
        volatile boolean up = true;

        Shared(StateStore inner) {
            super(inner);
        }

        private <T> Uni<T> or(Supplier<Uni<T>> call) {
            return up ? call.get() : Uni.createFrom().failure(new IOException("connection refused"));
        }

        @Override
        public Uni<Map<String, Long>> catalogVersions() {
            return or(super::catalogVersions);
        }

        @Override
        public Uni<Optional<VersionedDoc>> orgCatalog(String orgId) {
            return or(() -> super.orgCatalog(orgId));
        }

        @Override
        public Uni<Optional<Long>> putOrgCatalog(String orgId, VersionedDoc doc, long expectedVersion) {
            return or(() -> super.putOrgCatalog(orgId, doc, expectedVersion));
        }
    }

    static VersionedDoc doc(int step) {
        return new VersionedDoc("{\"step\":" + step + "}", "file", 1, 0);
    }

    /**
     * Twenty edits during an outage, then the store found holding step {@code landed} (its write landed late): what
     * the store holds once the instance is back, and how many edits it counted lost.
     */
    static String afterOutage(int landed, long[] lost) {
        MemoryStateStore redis = new MemoryStateStore(new FakeTicker());
        Shared shared = new Shared(redis);
        ResilientStateStore store = new ResilientStateStore(shared, new MemoryStateStore(new FakeTicker()), SETTINGS);
        long version = store.putOrgCatalog("acme", doc(0), 0).await().atMost(WAIT).orElseThrow();
        shared.up = false;
        for (int step = 1; step <= 20; step++) {
            version = store.putOrgCatalog("acme", doc(step), version).await().atMost(WAIT).orElseThrow();
        }
        assertEquals(1, store.pendingEdits());
        redis.putOrgCatalog("acme", doc(landed), 1).await().atMost(WAIT).orElseThrow();
        shared.up = true;
        eventually(() -> {
            store.catalogVersions().await().atMost(WAIT);
            return store.pendingEdits() == 0 && !store.degraded();
        }, "the pending edit is settled once the store answers");
        lost[0] = store.lostEdits();
        return redis.orgCatalog("acme").await().atMost(WAIT).orElseThrow().json();
    }

    @Test
    void aLandedStepAmongTheLastSixteenIsKnownAsTheInstancesOwnAndWrittenOver() {
        for (int landed : new int[]{19, 10, 4}) {
            long[] lost = {0};
            assertEquals(doc(20).json(), afterOutage(landed, lost), "step " + landed + " landed");
            assertEquals(0, lost[0], "step " + landed + " landed");
        }
    }

    @Test
    void aLandedStepOlderThanTheLastSixteenIsTakenForAnotherEditAndTheOutagesEditIsCountedLost() {
        long[] lost = {0};
        assertEquals(doc(3).json(), afterOutage(3, lost));
        assertEquals(1, lost[0]);
    }
}
