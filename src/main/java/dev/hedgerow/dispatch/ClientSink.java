package dev.hedgerow.dispatch;

import java.util.Map;

/**
 * Where one response goes: implemented by the gateway edge over its HTTP response. The dispatcher calls
 * {@code head} exactly once, then {@code write}* and one of the two {@code end}s once. Calls never overlap.
 */
public interface ClientSink {
    void head(int status, Map<String, String> headers);

    void write(byte[] bytes);

    void end();

    /**
     * Writes the last bytes and ends, so the edge can send them in one piece: a whole answer that was never
     * written before goes out with its length in one write rather than as chunks.
     */
    default void end(byte[] last) {
        write(last);
        end();
    }
}
