package dev.hedgerow.dispatch;

import java.util.Map;

/**
 * Where one response goes: implemented by the gateway edge over its HTTP response. The dispatcher calls
 * {@code head} exactly once, then {@code write}* and {@code end} once. Calls never overlap.
 */
public interface ClientSink {
    void head(int status, Map<String, String> headers);

    void write(byte[] bytes);

    void end();
}
