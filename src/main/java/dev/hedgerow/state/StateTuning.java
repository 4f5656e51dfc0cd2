package dev.hedgerow.state;

import java.time.Duration;
import java.util.Objects;

/**
 * Store-wide constants that are not part of any call: the width of a usage bucket and how long a key with no natural
 * lifetime (the failure counter, a rotation cursor) survives without being touched. Both stores take the same
 * tuning; tests shrink the bucket to milliseconds so window behaviour is observable in a real Redis. Immutable.
 *
 * @param usageBucket width of one usage bucket (one minute in production)
 * @param idleExpiry  extra life of keys that would otherwise never expire; losing them only costs a little history
 */
public record StateTuning(Duration usageBucket, Duration idleExpiry) {

    /** One-minute usage buckets; idle keys live one hour past their last touch. */
    public static final StateTuning DEFAULTS = new StateTuning(Duration.ofMinutes(1), Duration.ofHours(1));

    /** Hedge windows are summed over this many buckets (a sliding window with 10% granularity). */
    public static final int HEDGE_BUCKETS = 10;

    public StateTuning {
        Objects.requireNonNull(usageBucket, "usageBucket");
        Objects.requireNonNull(idleExpiry, "idleExpiry");
        if (usageBucket.toMillis() < 1 || idleExpiry.toMillis() < 1) {
            throw new IllegalArgumentException("usageBucket and idleExpiry must be at least 1 ms");
        }
    }

    long usageBucketMillis() {
        return usageBucket.toMillis();
    }

    /** Number of usage buckets summed for a window (at least one: the current bucket). */
    long usageBuckets(Duration window) {
        long ms = Math.max(1, window.toMillis());
        return Math.max(1, (ms + usageBucketMillis() - 1) / usageBucketMillis());
    }

    /** Width of one hedge bucket for a window. */
    static long hedgeBucketMillis(long windowMillis) {
        return Math.max(1, windowMillis / HEDGE_BUCKETS);
    }
}
