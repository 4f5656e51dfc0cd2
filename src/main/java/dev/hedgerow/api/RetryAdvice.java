package dev.hedgerow.api;

import java.util.LinkedHashMap;
import java.util.Map;

/**
 * What an error answer tells the client about retrying it, in the headers the official OpenAI SDKs read: their rule
 * retries 408, 409, 429 and every 5xx unless {@code x-should-retry} says otherwise, and waits
 * {@code retry-after-ms} (milliseconds), else {@code Retry-After} (seconds), else their own exponential backoff.
 * Immutable.
 */
public sealed interface RetryAdvice {

    /** No advice: the client's own rule for the status applies, and its own backoff. */
    static RetryAdvice clientRule() {
        return ClientRule.INSTANCE;
    }

    /** Retry after {@code millis} (at least 1 ms): the earliest time the gateway knows the request can be served. */
    static After after(long millis) {
        return new After(Math.max(1, millis));
    }

    /** No retry can help soon: only an operator's action brings a route back (drained, pinned out, suspended). */
    static RetryAdvice notSoon() {
        return NotSoon.INSTANCE;
    }

    /** The response headers this advice is sent as (lowercase names; empty for {@link ClientRule}). */
    Map<String, String> headers();

    /** No header: the client decides by the status. */
    record ClientRule() implements RetryAdvice {
        static final ClientRule INSTANCE = new ClientRule();

        @Override
        public Map<String, String> headers() {
            return Map.of();
        }
    }

    /**
     * The longest wait an SDK is left to sleep through by itself. The SDKs disagree past it: the Python SDK ignores a
     * wait of 60 s or more and retries on its own short backoff (into the same refusal), while the Node SDK (6.x)
     * sleeps whatever it is told, an hour's provider hold included, with the caller's request hanging meanwhile.
     */
    long LONGEST_SDK_WAIT_MILLIS = 60_000;

    /**
     * {@code Retry-After} in whole seconds rounded up (a wait of 400 ms says 1, never 0, which would send the client
     * back before the time) and the exact {@code retry-after-ms}, which the SDKs prefer. A wait longer than
     * {@link #LONGEST_SDK_WAIT_MILLIS} also says {@code x-should-retry: false}: the SDKs raise the error at once, with
     * the wait in it for the caller to schedule, instead of one retrying into the same refusal and the other hanging.
     */
    record After(long millis) implements RetryAdvice {
        public After {
            if (millis < 1) {
                throw new IllegalArgumentException("a wait of at least 1 ms: " + millis);
            }
        }

        /** The wait in whole seconds, rounded up. */
        public long seconds() {
            return (millis + 999) / 1000;
        }

        @Override
        public Map<String, String> headers() {
            Map<String, String> h = new LinkedHashMap<>();
            h.put("retry-after", Long.toString(seconds()));
            h.put("retry-after-ms", Long.toString(millis));
            if (millis > LONGEST_SDK_WAIT_MILLIS) {
                h.put("x-should-retry", "false");
            }
            return h;
        }
    }

    /** {@code x-should-retry: false}, overriding the SDKs' rule that would retry a 5xx; no wait is named. */
    record NotSoon() implements RetryAdvice {
        static final NotSoon INSTANCE = new NotSoon();

        @Override
        public Map<String, String> headers() {
            return Map.of("x-should-retry", "false");
        }
    }
}
