package dev.hedgerow.testsupport;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.time.Duration;
import java.util.Iterator;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.ScheduledFuture;
import java.util.concurrent.TimeUnit;
import java.util.function.Predicate;
import java.util.stream.Stream;

/**
 * A gateway stream read event by event as it arrives (java.net.http, line by line), for tests that act while the
 * stream is still open: wait for some event, look at the upstream, let it go on, read the rest. Everything read is
 * kept as text for {@link Sse}. A guard closes the stream after {@code deadline} so a bug cannot hang the test (it
 * then fails on the closed stream, or on what it missed); it is no timing assertion. Not thread-safe.
 */
public final class SseReader implements AutoCloseable {
    private static final ObjectMapper M = new ObjectMapper();
    private static final ScheduledExecutorService GUARD = Executors.newSingleThreadScheduledExecutor(r -> {
        Thread t = new Thread(r, "sse-reader-guard");
        t.setDaemon(true);
        return t;
    });

    private final int status;
    private final Stream<String> lines;
    private final Iterator<String> it;
    private final ScheduledFuture<?> guard;
    private final StringBuilder text = new StringBuilder();
    private final StringBuilder data = new StringBuilder();

    private SseReader(HttpResponse<Stream<String>> resp, Duration deadline) {
        this.status = resp.statusCode();
        this.lines = resp.body();
        this.it = lines.iterator();
        this.guard = GUARD.schedule(lines::close, deadline.toMillis(), TimeUnit.MILLISECONDS);
    }

    /** POSTs {@code body} to {@code url} with the bearer {@code key} and opens its answer for reading. */
    public static SseReader post(String url, String key, String body, Duration deadline) {
        HttpClient client = HttpClient.newBuilder().version(HttpClient.Version.HTTP_1_1)
                .connectTimeout(Duration.ofSeconds(5)).build();
        HttpRequest req = HttpRequest.newBuilder(URI.create(url)).header("authorization", "Bearer " + key)
                .header("content-type", "application/json").POST(HttpRequest.BodyPublishers.ofString(body)).build();
        try {
            return new SseReader(client.send(req, HttpResponse.BodyHandlers.ofLines()), deadline);
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IllegalStateException(e);
        }
    }

    public int status() {
        return status;
    }

    /**
     * Reads on to the next {@code data:} event (not {@code [DONE]}) that {@code wanted} accepts and returns it, or
     * null when the stream ends first.
     */
    public JsonNode until(Predicate<JsonNode> wanted) {
        while (it.hasNext()) {
            String line = it.next();
            text.append(line).append('\n');
            if (line.startsWith("data:")) {
                data.append(line.substring(5).trim());
            } else if (line.isEmpty() && data.length() > 0) {
                String payload = data.toString();
                data.setLength(0);
                if (payload.equals("[DONE]")) {
                    continue;
                }
                JsonNode event;
                try {
                    event = M.readTree(payload);
                } catch (IOException e) {
                    throw new AssertionError("not JSON: " + payload, e);
                }
                if (wanted.test(event)) {
                    return event;
                }
            }
        }
        return null;
    }

    /** Reads to the end of the stream and returns everything read, from the first byte. */
    public String rest() {
        until(e -> false);
        return text();
    }

    /** Everything read so far, as the SSE text it came as. */
    public String text() {
        return text.toString();
    }

    @Override
    public void close() {
        guard.cancel(false);
        lines.close();
    }
}
