package dev.hedgerow.api;

import java.nio.charset.StandardCharsets;

/** Server-sent-event framing toward the client. Every stream Hedgerow writes ends with {@link #DONE}. */
public final class Sse {
    public static final byte[] DONE = "data: [DONE]\n\n".getBytes(StandardCharsets.US_ASCII);
    public static final byte[] KEEP_ALIVE = ": keep-alive\n\n".getBytes(StandardCharsets.US_ASCII);

    private Sse() {
    }

    private static final byte[] DATA = "data: ".getBytes(StandardCharsets.US_ASCII);

    /** One {@code data:} event; JSON from Jackson never holds a raw newline, so one line suffices. */
    public static byte[] data(byte[] json) {
        return data(json, 0);
    }

    public static byte[] data(Object node) {
        return data(Json.bytes(node));
    }

    /** A stream's last event followed by {@link #DONE}, in one array (so it can go out in one write). */
    public static byte[] dataThenDone(Object node) {
        byte[] json = Json.bytes(node);
        byte[] out = data(json, DONE.length);
        System.arraycopy(DONE, 0, out, json.length + 8, DONE.length);
        return out;
    }

    private static byte[] data(byte[] json, int room) {
        byte[] out = new byte[json.length + 8 + room];
        System.arraycopy(DATA, 0, out, 0, DATA.length);
        System.arraycopy(json, 0, out, DATA.length, json.length);
        out[json.length + 6] = '\n';
        out[json.length + 7] = '\n';
        return out;
    }
}
