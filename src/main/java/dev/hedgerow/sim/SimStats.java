package dev.hedgerow.sim;

import java.util.List;

/**
 * A snapshot of what one simulated model has seen, for tests to assert what a gateway sent upstream and how it
 * ended each exchange. Immutable.
 *
 * @param received   requests that named this model (including rejected ones)
 * @param completed  exchanges the simulator ended itself (any status, including clean early EOFs)
 * @param cancelled  exchanges the caller closed before the simulator ended them (client hang-up)
 * @param dropped    exchanges the simulator broke on purpose (connection reset)
 * @param rejected   requests answered 4xx before generation (auth, capability, prefill refusal)
 * @param faulted    requests that drew a fault (queued or rolled)
 * @param running    exchanges generating now
 * @param waiting    exchanges queued behind {@link SimConfig#maxRunning()}
 * @param speed      measured time to first token and decode speed
 * @param recent     the last requests received, oldest first
 */
public record SimStats(long received, long completed, long cancelled, long dropped, long rejected, long faulted,
                       int running, int waiting, Speed speed, List<RecordedRequest> recent) {

    /** In flight: running plus waiting. */
    public int inFlight() {
        return running + waiting;
    }

    /** One request as it arrived: its raw JSON body and {@code Authorization} header (null when absent). */
    public record RecordedRequest(String path, String body, String authorization) {
    }

    /**
     * Exponentially weighted moving averages (α = 0.2) over completed streams; 0 until the first one.
     *
     * @param ttftMs          time from the request to the first content or reasoning delta
     * @param tokensPerSecond decode speed between the first and last content deltas
     */
    public record Speed(double ttftMs, double tokensPerSecond) {
    }
}
