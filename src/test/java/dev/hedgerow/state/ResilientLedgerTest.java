package dev.hedgerow.state;

import dev.hedgerow.time.FakeTicker;
import io.smallrye.mutiny.Uni;
import org.junit.jupiter.api.Test;

import java.io.IOException;
import java.time.Duration;
import java.time.LocalDate;
import java.util.Map;

import static org.junit.jupiter.api.Assertions.assertEquals;

/**
 * Billed usage across an outage of the shared store: a ledger write the store refused is added there once it answers
 * (once, however often the write is tried), and one that timed out, which may have landed, is not added again.
 */
class ResilientLedgerTest {
    static final LocalDate DAY = LocalDate.of(2026, 12, 1);
    static final ResilientStateStore.Settings SETTINGS =
            new ResilientStateStore.Settings(Duration.ofMillis(50), 100, 1.0, Duration.ofMillis(10), 1);

    enum Mode { UP, REFUSING, HANGING }

    /** The shared store, whose ledger writes can be refused (a connection error) or left hanging (a timeout). */
    static final class Shared extends ForwardingStateStore {
        volatile Mode mode = Mode.UP;

        Shared(StateStore inner) {
            super(inner);
        }

        @Override
        public Uni<Void> addLedger(String orgId, LocalDate day, String alias, LedgerEntry entry) {
            return switch (mode) {
                case UP -> super.addLedger(orgId, day, alias, entry);
                case REFUSING -> Uni.createFrom().failure(new IOException("connection refused"));
                case HANGING -> Uni.createFrom().nothing();
            };
        }
    }

    final FakeTicker ticker = new FakeTicker();
    final MemoryStateStore sharedMemory = new MemoryStateStore(ticker, FakeTimeStoreContract.TUNING);
    final Shared shared = new Shared(sharedMemory);
    final ResilientStateStore store =
            new ResilientStateStore(shared, new MemoryStateStore(ticker, FakeTimeStoreContract.TUNING), SETTINGS);

    static LedgerEntry bill(long prompt) {
        return LedgerEntry.of(new UsageSample(prompt, 1, 0));
    }

    Map<String, LedgerEntry> sharedLedger() {
        return sharedMemory.ledger("acme", DAY, DAY).await().atMost(Duration.ofSeconds(5)).getOrDefault(DAY, Map.of());
    }

    void add(long prompt) {
        store.addLedger("acme", DAY, "chat", bill(prompt)).await().atMost(Duration.ofSeconds(5));
    }

    @Test
    void usageTheSharedStoreRefusedIsAddedThereOnceItAnswers() {
        add(1);
        shared.mode = Mode.REFUSING;
        add(10);
        add(100);
        assertEquals(1, store.pendingLedger(), "one total per org, day and alias");
        assertEquals(new LedgerEntry(1, new UsageSample(1, 1, 0)), sharedLedger().get("chat"));
        shared.mode = Mode.UP;
        add(1000);
        assertEquals(0, store.pendingLedger());
        assertEquals(new LedgerEntry(4, new UsageSample(1111, 4, 0)), sharedLedger().get("chat"),
                "each request billed once");
        add(10000);
        assertEquals(new LedgerEntry(5, new UsageSample(11111, 5, 0)), sharedLedger().get("chat"));
    }

    @Test
    void usageWhoseWriteTimedOutIsNotAddedAgain() {
        shared.mode = Mode.HANGING;
        add(10);
        assertEquals(0, store.pendingLedger(), "a timed-out write may have landed: not queued");
        assertEquals(1, store.unconfirmedLedgerRequests());
        shared.mode = Mode.UP;
        add(1);
        assertEquals(new LedgerEntry(1, new UsageSample(1, 1, 0)), sharedLedger().get("chat"));
    }

    @Test
    void theCatalogPollAddsPendingUsageWithoutWaitingForTraffic() {
        shared.mode = Mode.REFUSING;
        add(10);
        shared.mode = Mode.UP;
        store.catalogVersions().await().atMost(Duration.ofSeconds(5));
        assertEquals(0, store.pendingLedger());
        assertEquals(new LedgerEntry(1, new UsageSample(10, 1, 0)), sharedLedger().get("chat"));
    }
}
