package dev.hedgerow.catalog;

/**
 * An upstream serving endpoint (an OpenAI-compatible base URL). {@code apiKey} is the secret sent upstream;
 * it is never returned by any API or logged. {@code capacityKeyHash} authenticates the operator's capacity reports.
 */
public record Provider(String id, String baseUrl, String apiKey, Dialect dialect, String metricsUrl,
                       String capacityKeyHash) {

    @Override
    public String toString() {
        return "Provider[" + id + " " + baseUrl + " " + dialect + "]";
    }
}
