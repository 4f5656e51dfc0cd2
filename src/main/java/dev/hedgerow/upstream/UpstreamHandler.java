package dev.hedgerow.upstream;

import java.util.Map;

/**
 * Receives one exchange's events in order: {@code onHead} once, then {@code onData}* and exactly one of
 * {@code onEnd} or {@code onError} (nothing at all after a cancel). Calls for one exchange never overlap.
 */
public interface UpstreamHandler {
    /** Status and headers (names lower-cased). */
    void onHead(int status, Map<String, String> headers);

    void onData(byte[] bytes);

    void onEnd();

    void onError(TransportFailure failure);
}
