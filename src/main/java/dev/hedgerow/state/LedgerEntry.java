package dev.hedgerow.state;

/**
 * What an org's ledger holds for one alias on one day: how many requests were billed and their usage. A request is
 * billed once however many attempts served it, so {@code requests} counts client requests, not upstream calls.
 */
public record LedgerEntry(long requests, UsageSample usage) {
    public static final LedgerEntry ZERO = new LedgerEntry(0, UsageSample.ZERO);

    /** One billed request. */
    public static LedgerEntry of(UsageSample billed) {
        return new LedgerEntry(1, billed);
    }

    public LedgerEntry plus(LedgerEntry o) {
        return new LedgerEntry(requests + o.requests, usage.plus(o.usage));
    }
}
