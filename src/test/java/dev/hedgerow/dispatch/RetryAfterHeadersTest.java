package dev.hedgerow.dispatch;

import org.junit.jupiter.api.Test;

import java.time.Duration;
import java.time.Instant;

import static org.junit.jupiter.api.Assertions.assertEquals;

/**
 * How a provider's retry headers read as a wait ({@link UpstreamReplies#retryAfterMillis}), one rule per test; the
 * gateway tests (FailoverTest, RetryAdviceTest, KongRetryTest) show the same rules end to end.
 */
class RetryAfterHeadersTest {
    static final Instant NOW = Instant.parse("1999-12-31T23:59:00Z");
    static final long DAY = Duration.ofDays(1).toMillis();

    static long wait(String ms, String retryAfter) {
        return UpstreamReplies.retryAfterMillis(ms, retryAfter, NOW);
    }

    @Test
    void retryAfterIsDelaySecondsOrAnHttpDate() {
        assertEquals(20_000, wait(null, "20"));
        assertEquals(20_000, wait(null, " 20 "));
        assertEquals(59_000, wait(null, "Fri, 31 Dec 1999 23:59:59 GMT"));
        assertEquals(0, wait(null, "Fri, 31 Dec 1999 23:58:59 GMT"), "a date passed holds nothing");
        assertEquals(0, wait(null, null));
    }

    @Test
    void retryAfterMsIsPreferredWhenItIsANonNegativeNumber() {
        assertEquals(1500, wait("1500", "20"));
        assertEquals(0, wait("0", "20"), "a valid 0 says no wait, as the SDKs read it");
        assertEquals(1501, wait("1500.2", null), "a fraction of a ms counts as a whole one");
        assertEquals(20_000, wait("-5", "20"));
        assertEquals(20_000, wait("soon", "20"));
        assertEquals(20_000, wait("1e3", "20"), "no exponent");
        assertEquals(20_000, wait("", "20"));
    }

    @Test
    void aWaitOverADayCountsAsADay() {
        assertEquals(DAY, wait(Long.toString(2 * DAY), null));
        assertEquals(DAY, wait("9".repeat(400), null));
        assertEquals(DAY, wait(null, "9999999999999"));
        assertEquals(DAY, wait(null, "Fri, 31 Dec 9999 23:59:59 GMT"));
    }

    @Test
    void obsoleteDateFormsAndMalformedValuesHoldNothing() {
        assertEquals(0, wait(null, "Friday, 31-Dec-99 23:59:59 GMT"), "RFC 850");
        assertEquals(0, wait(null, "Fri Dec 31 23:59:59 1999"), "asctime");
        assertEquals(0, wait(null, "Thu, 31 Dec 1999 23:59:59 GMT"), "the wrong day of the week");
        assertEquals(0, wait(null, "-3"));
        assertEquals(0, wait(null, "later"));
    }
}
