package dev.hedgerow.state;

import dev.hedgerow.time.FakeTicker;
import org.junit.jupiter.api.Test;

import java.time.Duration;
import java.util.List;
import java.util.Map;

import static org.junit.jupiter.api.Assertions.assertEquals;

/**
 * An operator's health reset ({@code POST /admin/routes/reset}) through the outage guard clears the route in the
 * shared store and in the instance's local fallback store, whichever answered: a breaker the local store kept from an
 * earlier outage would otherwise be back at the next one, although the operator put the route back into service. A
 * route blob deleted (an operator's verdict cleared) goes from both alike.
 */
class ResilientResetHealthTest {
    final FakeTicker ticker = new FakeTicker();
    final MemoryStateStore shared = new MemoryStateStore(ticker, FakeTimeStoreContract.TUNING);
    final MemoryStateStore local = new MemoryStateStore(ticker, FakeTimeStoreContract.TUNING);
    final ResilientStateStore store = new ResilientStateStore(shared, local, ResilientLedgerTest.SETTINGS);

    @Test
    void aResetWhileTheSharedStoreAnswersClearsTheLocalCopyToo() {
        Duration minute = Duration.ofSeconds(60);
        // the breaker opened in both: the shared store's now, the local one's kept from an earlier outage
        shared.recordFailure("acme/alpha", 1, minute).await().atMost(Duration.ofSeconds(5));
        local.recordFailure("acme/alpha", 1, minute).await().atMost(Duration.ofSeconds(5));

        store.resetHealth("acme/alpha").await().atMost(Duration.ofSeconds(5));

        assertEquals(0L, shared.cooldownRemainingMillis("acme/alpha").await().atMost(Duration.ofSeconds(5)));
        assertEquals(0L, local.cooldownRemainingMillis("acme/alpha").await().atMost(Duration.ofSeconds(5)),
                "the local fallback's breaker is reset too");
    }
}
