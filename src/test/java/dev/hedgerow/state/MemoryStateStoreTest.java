package dev.hedgerow.state;

import dev.hedgerow.time.FakeTicker;
import org.junit.jupiter.api.BeforeEach;

import java.time.Duration;

/** The contract on the embedded store, with time moved by a fake ticker (no sleeping). */
class MemoryStateStoreTest extends StateStoreContract {

    private FakeTicker ticker;
    private MemoryStateStore store;

    @BeforeEach
    void fresh() {
        ticker = new FakeTicker();
        store = new MemoryStateStore(ticker, TUNING);
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
