package dev.hedgerow.upstream;

import java.time.Duration;
import java.util.Map;

/** One HTTP POST to a provider. {@code headers} are sent as given (the API key is among them: never log this). */
public record UpstreamRequest(String url, Map<String, String> headers, byte[] body, Duration connectTimeout) {

    @Override
    public String toString() {
        return "UpstreamRequest[" + url + ", " + body.length + " bytes]";
    }
}
