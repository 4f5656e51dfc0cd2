package dev.hedgerow.prober;

import java.util.List;

/**
 * What one probe round did. {@code ran} is false, with {@code note} saying why, when another instance held the round
 * lock (rounds never overlap across the fleet) or the last round anywhere started less than the minimum interval ago
 * ({@link ProberConfig#minInterval()}). Immutable.
 */
public record RoundReport(boolean ran, String note, List<RouteResult> routes, List<ScrapeResult> scrapes) {

    public static RoundReport skipped(String why) {
        return new RoundReport(false, why, List.of(), List.of());
    }

    /**
     * One route's probe.
     *
     * @param action       {@code probe}, {@code half_open_probe}, or {@code skipped}
     * @param outcome      {@code ok}, {@code slow: <how>} (still serving when the probe's time ran out: no breaker
     *                     verdict), {@code failed: <why>}, or why it was skipped
     * @param verification the verdict written ({@code pass} / {@code fail:<why>}), or null when not judged
     */
    public record RouteResult(String org, String route, String action, String outcome, Long ttftMs,
                              Double tokensPerSecond, String verification) {
    }

    /** One provider's metrics scrape: the routes it fed, or why it failed. */
    public record ScrapeResult(String org, String provider, List<String> routes, String outcome) {
    }
}
