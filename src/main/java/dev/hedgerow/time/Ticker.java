package dev.hedgerow.time;

/** A monotonic nanosecond source, for measuring intervals (never for comparing instants across machines). */
public interface Ticker {
    long nanos();

    default long millis() {
        return nanos() / 1_000_000L;
    }

    static Ticker system() {
        return System::nanoTime;
    }
}
