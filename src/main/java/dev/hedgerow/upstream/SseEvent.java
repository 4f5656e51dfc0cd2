package dev.hedgerow.upstream;

/** One server-sent event: its {@code event} type (null = "message"), joined {@code data}, and {@code id}. */
public record SseEvent(String event, String data, String id) {
    public boolean isDone() {
        return "[DONE]".equals(data.trim());
    }
}
