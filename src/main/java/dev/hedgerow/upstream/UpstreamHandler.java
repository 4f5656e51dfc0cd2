package dev.hedgerow.upstream;

import java.util.Map;

/**
 * Receives one exchange's events in order: {@code onConnected} and {@code onSent} at most once each (when the client
 * can tell), {@code onHead} once, then {@code onData}* and exactly one of {@code onEnd} or {@code onError} (nothing
 * at all after a cancel). Calls for one exchange never overlap.
 */
public interface UpstreamHandler {
    /**
     * A connection was made (or taken from the pool) for the request, which is now being written: before
     * {@code onSent}, by clients that report sending (they say so in the exchange).
     */
    default void onConnected() {
    }

    /** The whole request body was written to the connection (clients that report it say so in the exchange). */
    default void onSent() {
    }

    /** Status and headers (names lower-cased). */
    void onHead(int status, Map<String, String> headers);

    void onData(byte[] bytes);

    void onEnd();

    void onError(TransportFailure failure);
}
