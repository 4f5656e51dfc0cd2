package dev.hedgerow.state;

import dev.hedgerow.time.FakeTicker;
import io.smallrye.mutiny.Uni;
import org.junit.jupiter.api.Test;

import java.io.IOException;
import java.time.Duration;
import java.time.LocalDate;
import java.util.List;
import java.util.Map;
import java.util.SortedMap;

import static org.junit.jupiter.api.Assertions.assertEquals;

/**
 * Billed usage across an outage of the shared store: a ledger write the store did not confirm (refused, or timed
 * out whether or not it landed) reaches it exactly once when it answers again, before anything billed after it.
 */
class ResilientLedgerTest {
    static final LocalDate DAY = LocalDate.of(2026, 12, 1);
    static final ResilientStateStore.Settings SETTINGS =
            new ResilientStateStore.Settings(Duration.ofMillis(50), 100, 1.0, Duration.ofMillis(10), 1);

    enum Mode { UP, REFUSING, HANGING, LANDING_THEN_HANGING }

    /**
     * The shared store, whose ledger writes can be refused (a connection error), left hanging (a timeout), or
     * applied with the answer lost (a timeout after the write landed).
     */
    static final class Shared extends ForwardingStateStore {
        volatile Mode mode = Mode.UP;

        Shared(StateStore inner) {
            super(inner);
        }

        @Override
        public Uni<Boolean> addLedgerOnce(String orgId, LocalDate day, String alias, LedgerEntry entry,
                                          String writer, long seq) {
            return switch (mode) {
                case UP -> super.addLedgerOnce(orgId, day, alias, entry, writer, seq);
                case REFUSING -> Uni.createFrom().failure(new IOException("connection refused"));
                case HANGING -> Uni.createFrom().nothing();
                case LANDING_THEN_HANGING -> super.addLedgerOnce(orgId, day, alias, entry, writer, seq)
                        .chain(added -> Uni.createFrom().nothing());
            };
        }

        @Override
        public Uni<SortedMap<LocalDate, Map<String, LedgerEntry>>> ledger(String orgId, LocalDate from, LocalDate to) {
            return mode == Mode.REFUSING ? Uni.createFrom().failure(new IOException("connection refused"))
                    : super.ledger(orgId, from, to);
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

    static LedgerEntry billed(long requests, long prompt) {
        return new LedgerEntry(requests, new UsageSample(prompt, requests, 0));
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
        assertEquals(1, store.pendingLedger(), "one line per org, day and alias");
        assertEquals(List.of("acme " + DAY + " chat: 2 request(s), 110 prompt and 2 completion tokens"),
                store.pendingLedgerLines(), "what a shutdown now would lose, named");
        assertEquals(billed(1, 1), sharedLedger().get("chat"));
        assertEquals(billed(3, 111), store.ledger("acme", DAY, DAY).await().atMost(Duration.ofSeconds(5))
                .get(DAY).get("chat"), "read during the outage: what this instance billed");
        shared.mode = Mode.UP;
        add(1000);
        assertEquals(0, store.pendingLedger());
        assertEquals(billed(4, 1111), sharedLedger().get("chat"), "each request billed once");
        add(10000);
        assertEquals(billed(5, 11111), sharedLedger().get("chat"));
    }

    @Test
    void usageWhoseWriteTimedOutBeforeLandingIsAddedWhenTheStoreAnswers() {
        shared.mode = Mode.HANGING;
        add(10);
        assertEquals(1, store.pendingLedger(), "held: the store did not confirm it");
        shared.mode = Mode.UP;
        add(1);
        assertEquals(0, store.pendingLedger());
        assertEquals(billed(2, 11), sharedLedger().get("chat"));
    }

    @Test
    void usageWhoseWriteTimedOutAfterLandingIsNotAddedTwice() {
        shared.mode = Mode.LANDING_THEN_HANGING;
        add(10);
        assertEquals(billed(1, 10), sharedLedger().get("chat"), "it landed");
        assertEquals(1, store.pendingLedger(), "but the instance never heard so");
        add(100);   // sent again as it was, skipped by the store; then the usage queued behind it
        shared.mode = Mode.UP;
        add(1000);
        assertEquals(0, store.pendingLedger());
        assertEquals(billed(3, 1110), sharedLedger().get("chat"), "each request billed once");
    }

    @Test
    void theCatalogPollAddsPendingUsageWithoutWaitingForTraffic() {
        shared.mode = Mode.REFUSING;
        add(10);
        shared.mode = Mode.UP;
        store.catalogVersions().await().atMost(Duration.ofSeconds(5));
        assertEquals(0, store.pendingLedger());
        assertEquals(billed(1, 10), sharedLedger().get("chat"));
    }
}
