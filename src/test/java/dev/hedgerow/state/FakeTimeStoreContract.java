package dev.hedgerow.state;

import dev.hedgerow.time.FakeTicker;

import java.time.Duration;

/**
 * The contract on stores whose expiries run on a {@link FakeTicker}: time moves by hand, nothing sleeps. JUnit makes a
 * test instance per test, so each test gets a fresh ticker and a fresh store.
 */
abstract class FakeTimeStoreContract extends StateStoreContract {
    protected final FakeTicker ticker = new FakeTicker();
    private StateStore store;

    /** The store under test, on {@link #ticker}; called once per test. */
    protected abstract StateStore build();

    @Override
    protected final StateStore store() {
        if (store == null) {
            store = build();
        }
        return store;
    }

    @Override
    protected final void advance(Duration d) {
        ticker.advance(d);
    }
}
