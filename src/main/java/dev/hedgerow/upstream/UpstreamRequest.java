package dev.hedgerow.upstream;

import java.time.Duration;
import java.util.LinkedHashMap;
import java.util.Map;

/** One HTTP POST to a provider. {@code headers} are sent as given (the API key is among them: never log this). */
public record UpstreamRequest(String url, Map<String, String> headers, byte[] body, Duration connectTimeout) {

    /**
     * A JSON POST to {@code path} under a provider's base URL (trailing slashes dropped): content type, what it
     * accepts (an event stream or JSON), the provider's bearer key when it has one, then {@code extraHeaders}
     * (name, value, name, value …). The one way every caller (dispatch, prober, embeddings) addresses a provider.
     */
    public static UpstreamRequest post(String baseUrl, String path, String apiKey, boolean stream, byte[] body,
                                       Duration connectTimeout, String... extraHeaders) {
        if (extraHeaders.length % 2 != 0) {
            throw new IllegalArgumentException("extra headers come in name/value pairs");
        }
        Map<String, String> headers = new LinkedHashMap<>();
        headers.put("content-type", "application/json");
        headers.put("accept", stream ? "text/event-stream" : "application/json");
        if (apiKey != null && !apiKey.isEmpty()) {
            headers.put("authorization", "Bearer " + apiKey);
        }
        for (int i = 0; i < extraHeaders.length; i += 2) {
            headers.put(extraHeaders[i], extraHeaders[i + 1]);
        }
        int end = baseUrl.length();
        while (end > 0 && baseUrl.charAt(end - 1) == '/') {
            end--;
        }
        return new UpstreamRequest(baseUrl.substring(0, end) + path, headers, body, connectTimeout);
    }

    @Override
    public String toString() {
        return "UpstreamRequest[" + url + ", " + body.length + " bytes]";
    }
}
