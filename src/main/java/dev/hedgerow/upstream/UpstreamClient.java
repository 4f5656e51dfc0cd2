package dev.hedgerow.upstream;

/** Sends requests to providers. Implementations pool connections and never block the caller. Thread-safe. */
public interface UpstreamClient {

    /** Starts one exchange; events go to {@code handler}. */
    Exchange send(UpstreamRequest request, UpstreamHandler handler);

    /** A running exchange. */
    interface Exchange {
        /** Closes the upstream request at once (the provider sees its connection reset); no more events follow. */
        void cancel();

        /** Whether this exchange calls {@link UpstreamHandler#onSent()} (so a write timeout can be told apart). */
        default boolean reportsSent() {
            return false;
        }
    }
}
