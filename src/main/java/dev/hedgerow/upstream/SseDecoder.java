package dev.hedgerow.upstream;

import java.io.ByteArrayOutputStream;
import java.nio.charset.StandardCharsets;

/**
 * Incremental server-sent-events decoder (WHATWG event-stream parsing): bytes in, events out. Handles frames split
 * across reads, multi-line {@code data:}, CRLF / LF / CR line ends, comments (reported as keep-alives),
 * {@code event:} and {@code id:} lines, a leading byte order mark, and UTF-8 characters split across reads (lines are
 * decoded only once complete; a LF byte never occurs inside a multi-byte UTF-8 sequence). One instance per stream; not
 * thread-safe.
 */
public final class SseDecoder {

    /** Receives decoded events. */
    public interface Listener {
        void onEvent(SseEvent event);

        /** A comment line ({@code : keep-alive}): the stream is alive. */
        default void onComment(String comment) {
        }
    }

    /** Thrown when one line or event exceeds the size guard (a hostile or broken upstream). */
    public static final class OversizeException extends RuntimeException {
        public OversizeException(String message) {
            super(message, null, false, false);
        }
    }

    private final Listener listener;
    private final int maxEventBytes;
    private final ByteArrayOutputStream line = new ByteArrayOutputStream(256);
    private final StringBuilder data = new StringBuilder();
    private boolean hasData;
    private String eventType;
    private String lastId;
    private boolean skipLf;
    private int eventBytes;
    /** The stream's first line is still to come: a byte order mark at its start is skipped, once per stream. */
    private boolean firstLine = true;

    public SseDecoder(Listener listener, int maxEventBytes) {
        this.listener = listener;
        this.maxEventBytes = maxEventBytes;
    }

    public SseDecoder(Listener listener) {
        this(listener, 4 * 1024 * 1024);
    }

    public void feed(byte[] bytes) {
        feed(bytes, 0, bytes.length);
    }

    public void feed(byte[] bytes, int off, int len) {
        int end = off + len;
        int start = off;
        for (int i = off; i < end; i++) {
            byte b = bytes[i];
            if (b == '\n' || b == '\r') {
                if (b == '\n' && skipLf) {
                    skipLf = false;
                    start = i + 1;
                    continue;
                }
                appendLine(bytes, start, i - start);
                skipLf = b == '\r';
                processLine();
                start = i + 1;
            } else {
                skipLf = false;
            }
        }
        if (start < end) {
            appendLine(bytes, start, end - start);
        }
    }

    private void appendLine(byte[] bytes, int off, int len) {
        if (len <= 0) {
            return;
        }
        eventBytes += len;
        if (eventBytes > maxEventBytes) {
            throw new OversizeException("SSE event larger than " + maxEventBytes + " bytes");
        }
        line.write(bytes, off, len);
    }

    private void processLine() {
        String l = line.toString(StandardCharsets.UTF_8);
        line.reset();
        if (firstLine) {
            firstLine = false;
            if (l.startsWith("\uFEFF")) {
                l = l.substring(1);
            }
        }
        if (l.isEmpty()) {
            dispatch();
            return;
        }
        if (l.charAt(0) == ':') {
            listener.onComment(l.substring(1).trim());
            return;
        }
        int colon = l.indexOf(':');
        String field = colon < 0 ? l : l.substring(0, colon);
        String value = colon < 0 ? "" : l.substring(colon + 1);
        if (value.startsWith(" ")) {
            value = value.substring(1);
        }
        switch (field) {
            case "data" -> {
                if (hasData) {
                    data.append('\n');
                }
                data.append(value);
                hasData = true;
            }
            case "event" -> eventType = value;
            case "id" -> lastId = value;
            default -> {
                // "retry" and unknown fields are ignored, as the spec says
            }
        }
    }

    private void dispatch() {
        eventBytes = 0;
        if (!hasData) {
            eventType = null;
            return;
        }
        SseEvent e = new SseEvent(eventType, data.toString(), lastId);
        data.setLength(0);
        hasData = false;
        eventType = null;
        listener.onEvent(e);
    }

    /**
     * The stream ended. An event not terminated by a blank line is dropped (per spec), since its last bytes may be
     * a cut-off frame. Returns true when such a partial event or line was pending.
     */
    public boolean finish() {
        boolean partial = line.size() > 0 || hasData;
        line.reset();
        data.setLength(0);
        hasData = false;
        return partial;
    }
}
