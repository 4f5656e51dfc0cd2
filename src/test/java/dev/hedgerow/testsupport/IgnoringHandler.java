package dev.hedgerow.testsupport;

import dev.hedgerow.upstream.TransportFailure;
import dev.hedgerow.upstream.UpstreamHandler;

import java.util.Map;

/** An upstream handler that reads nothing: for exchanges a test only sends, cancels or leaves hanging. */
public final class IgnoringHandler implements UpstreamHandler {
    @Override
    public void onHead(int status, Map<String, String> headers) {
    }

    @Override
    public void onData(byte[] bytes) {
    }

    @Override
    public void onEnd() {
    }

    @Override
    public void onError(TransportFailure failure) {
    }
}
