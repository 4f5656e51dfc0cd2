package dev.hedgerow.api;

import java.nio.charset.StandardCharsets;

/** Server-sent-event framing toward the client. Every stream Hedgerow writes ends with {@link #DONE}. */
public final class Sse {
    public static final byte[] DONE = "data: [DONE]\n\n".getBytes(StandardCharsets.US_ASCII);
    public static final byte[] KEEP_ALIVE = ": keep-alive\n\n".getBytes(StandardCharsets.US_ASCII);

    private Sse() {
    }

    /** One {@code data:} event; JSON from Jackson never holds a raw newline, so one line suffices. */
    public static byte[] data(byte[] json) {
        byte[] out = new byte[json.length + 8];
        System.arraycopy("data: ".getBytes(StandardCharsets.US_ASCII), 0, out, 0, 6);
        System.arraycopy(json, 0, out, 6, json.length);
        out[out.length - 2] = '\n';
        out[out.length - 1] = '\n';
        return out;
    }

    public static byte[] data(Object node) {
        return data(Json.bytes(node));
    }
}
