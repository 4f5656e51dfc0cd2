package dev.hedgerow.upstream;

import java.util.Map;

/**
 * Receives one exchange's events in order: {@code onSent} at most once (when the client can tell), {@code onHead}
 * once, then {@code onData}* and exactly one of {@code onEnd} or {@code onError} (nothing at all after a cancel).
 * Calls for one exchange never overlap.
 */
public interface UpstreamHandler {
    /** The whole request body was written to the connection (clients that report it say so in the exchange). */
    default void onSent() {
    }

    /** Status and headers (names lower-cased). */
    void onHead(int status, Map<String, String> headers);

    void onData(byte[] bytes);

    void onEnd();

    void onError(TransportFailure failure);
}
