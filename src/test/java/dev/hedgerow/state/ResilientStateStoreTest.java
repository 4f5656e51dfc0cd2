package dev.hedgerow.state;



/**
 * The contract on the outage wrapper while its shared store is up: every operation must reach the shared store with
 * its arguments intact (a forwarding slip would break the contract here, not only in an outage). The shared and the
 * local store are embedded ones on one fake ticker; outages themselves are RedisOutageTest's.
 */
class ResilientStateStoreTest extends FakeTimeStoreContract {

    @Override
    protected StateStore build() {
        return new ResilientStateStore(new MemoryStateStore(ticker, TUNING), new MemoryStateStore(ticker, TUNING),
                ResilientStateStore.Settings.DEFAULTS);
    }

    @Override
    protected boolean stampsFlagsWrittenAsBlobs() {
        return true;
    }
}
