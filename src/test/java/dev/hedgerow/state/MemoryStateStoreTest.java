package dev.hedgerow.state;



/** The contract on the embedded store, with time moved by a fake ticker (no sleeping). */
class MemoryStateStoreTest extends FakeTimeStoreContract {

    @Override
    protected StateStore build() {
        return new MemoryStateStore(ticker, TUNING);
    }
}
