package dev.hedgerow.sim;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;

/** Test client for the simulator over real HTTP (java.net.http), keeping raw stream bytes and how they ended. */
final class SimHttp {

    static final ObjectMapper JSON = new ObjectMapper();
    private static final java.util.concurrent.ScheduledExecutorService TIMER =
            java.util.concurrent.Executors.newSingleThreadScheduledExecutor(r -> {
                Thread t = new Thread(r, "sim-test-deadline");
                t.setDaemon(true);
                return t;
            });

    private final HttpClient client = HttpClient.newBuilder().version(HttpClient.Version.HTTP_1_1)
            .connectTimeout(Duration.ofSeconds(5)).build();
    private final SimServer sim;

    SimHttp(SimServer sim) {
        this.sim = sim;
    }

    HttpResponse<String> post(String path, String body) {
        return send(HttpRequest.newBuilder(URI.create(sim.rootUrl() + path)).timeout(Duration.ofSeconds(10))
                .header("Content-Type", "application/json").POST(HttpRequest.BodyPublishers.ofString(body)).build());
    }

    HttpResponse<String> put(String path, String body) {
        return send(HttpRequest.newBuilder(URI.create(sim.rootUrl() + path)).timeout(Duration.ofSeconds(10))
                .header("Content-Type", "application/json").PUT(HttpRequest.BodyPublishers.ofString(body)).build());
    }

    HttpResponse<String> get(String path) {
        return send(HttpRequest.newBuilder(URI.create(sim.rootUrl() + path)).timeout(Duration.ofSeconds(10))
                .GET().build());
    }

    HttpResponse<String> delete(String path) {
        return send(HttpRequest.newBuilder(URI.create(sim.rootUrl() + path)).timeout(Duration.ofSeconds(10))
                .DELETE().build());
    }

    HttpResponse<String> send(HttpRequest req) {
        try {
            return client.send(req, HttpResponse.BodyHandlers.ofString());
        } catch (IOException e) {
            throw new java.io.UncheckedIOException(e);
        } catch (InterruptedException e) {
            throw new IllegalStateException(e);
        }
    }

    /** A stream as received: status, raw body bytes, and the error that ended it (null for a clean end). */
    record Raw(int status, java.net.http.HttpHeaders headers, byte[] bytes, IOException error, long firstByteMs,
               long elapsedMs) {
        String text() {
            return new String(bytes, StandardCharsets.UTF_8);
        }

        /** The data payloads of complete SSE frames, in order (comments skipped). */
        List<String> data() {
            List<String> out = new ArrayList<>();
            String t = text();
            int i = 0;
            int end;
            while ((end = t.indexOf("\n\n", i)) >= 0) {
                String frame = t.substring(i, end);
                if (frame.startsWith("data: ")) {
                    out.add(frame.substring(6));
                }
                i = end + 2;
            }
            return out;
        }

        List<JsonNode> chunks() {
            List<JsonNode> out = new ArrayList<>();
            for (String d : data()) {
                if (!d.equals("[DONE]")) {
                    try {
                        out.add(JSON.readTree(d));
                    } catch (IOException e) {
                        throw new AssertionError("not JSON: " + d, e);
                    }
                }
            }
            return out;
        }

        String content() {
            StringBuilder sb = new StringBuilder();
            for (JsonNode c : chunks()) {
                JsonNode d = c.path("choices").path(0).path("delta").path("content");
                if (d.isTextual()) {
                    sb.append(d.asText());
                }
            }
            return sb.toString();
        }

        boolean endsWithDone() {
            return text().endsWith("data: [DONE]\n\n");
        }
    }

    /** Posts a chat request and reads the body byte by byte until EOF, an error, or the timeout. */
    Raw stream(String body, Duration timeout) {
        return raw("/chat/completions", body, timeout);
    }

    /** Posts {@code body} to the path under {@code /v1} and reads the body byte by byte (see {@link #stream}). */
    Raw raw(String path, String body, Duration timeout) {
        long t0 = System.nanoTime();
        HttpRequest req = HttpRequest.newBuilder(URI.create(sim.baseUrl() + path)).timeout(timeout)
                .header("Content-Type", "application/json").POST(HttpRequest.BodyPublishers.ofString(body)).build();
        HttpResponse<InputStream> resp;
        try {
            resp = client.send(req, HttpResponse.BodyHandlers.ofInputStream());
        } catch (IOException e) {
            return new Raw(-1, null, new byte[0], e, -1, (System.nanoTime() - t0) / 1_000_000);
        } catch (InterruptedException e) {
            throw new IllegalStateException(e);
        }
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        long first = -1;
        IOException error = null;
        InputStream body0 = resp.body();
        // The request timeout only covers the head; closing the body after the deadline bounds a stalled stream.
        var deadline = TIMER.schedule(() -> {
            try {
                body0.close();
            } catch (IOException ignored) {
                // closing is best effort
            }
        }, timeout.toMillis() - (System.nanoTime() - t0) / 1_000_000, java.util.concurrent.TimeUnit.MILLISECONDS);
        try (InputStream in = body0) {
            int b;
            while ((b = in.read()) >= 0) {
                if (first < 0) {
                    first = (System.nanoTime() - t0) / 1_000_000;
                }
                out.write(b);
            }
        } catch (IOException e) {
            error = e;
        }
        deadline.cancel(false);
        return new Raw(resp.statusCode(), resp.headers(), out.toByteArray(), error, first,
                (System.nanoTime() - t0) / 1_000_000);
    }

    Raw stream(String body) {
        return stream(body, Duration.ofSeconds(10));
    }

    static String chat(String model, String prompt, boolean stream) {
        return "{\"model\":\"" + model + "\",\"stream\":" + stream + ",\"messages\":[{\"role\":\"user\",\"content\":"
                + JSON.valueToTree(prompt) + "}]}";
    }

    static JsonNode tree(String s) {
        try {
            return JSON.readTree(s);
        } catch (IOException e) {
            throw new AssertionError(e);
        }
    }
}
