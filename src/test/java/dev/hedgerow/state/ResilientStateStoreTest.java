package dev.hedgerow.state;

import dev.hedgerow.time.FakeTicker;
import org.junit.jupiter.api.BeforeEach;

import java.time.Duration;

/**
 * The contract on the outage wrapper while its shared store is up: every operation must reach the shared store with
 * its arguments intact (a forwarding slip would break the contract here, not only in an outage). The shared and the
 * local store are embedded ones on one fake ticker; outages themselves are RedisOutageTest's.
 */
class ResilientStateStoreTest extends StateStoreContract {

    private FakeTicker ticker;
    private ResilientStateStore store;

    @BeforeEach
    void fresh() {
        ticker = new FakeTicker();
        store = new ResilientStateStore(new MemoryStateStore(ticker, TUNING), new MemoryStateStore(ticker, TUNING),
                ResilientStateStore.Settings.DEFAULTS);
    }

    @Override
    protected StateStore store() {
        return store;
    }

    @Override
    protected void advance(Duration d) {
        ticker.advance(d);
    }
}
