package dev.hedgerow.prober;

import org.junit.jupiter.api.Test;

import java.time.Duration;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * The verification period's bounds: a passing verdict lives twice the period, and the state schema gives no route blob
 * more than 7 days, so a period over 3 days is refused (at startup: the function's settings go through this record).
 */
class ProberConfigTest {
    @Test
    void aVerificationPeriodOverThreeDaysIsRefused() {
        ProberConfig d = ProberConfig.defaults();
        assertEquals(Duration.ofDays(6), d.withVerifyEvery(Duration.ofDays(3)).verdictTtl());
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
                () -> d.withVerifyEvery(Duration.ofDays(3).plusSeconds(1)));
        assertTrue(e.getMessage().contains("at most 3 days"), e.getMessage());
        assertThrows(IllegalArgumentException.class, () -> d.withVerifyEvery(Duration.ofSeconds(-1)));
    }

    @Test
    void aShortPeriodKeepsTheVerdictsOwnLifetime() {
        assertEquals(Duration.ofMinutes(30), ProberConfig.defaults().verdictTtl(), "10 min: a verdict lives 30 min");
        assertEquals(Duration.ofMinutes(30), ProberConfig.defaults().withVerifyEvery(Duration.ZERO).verdictTtl());
        assertEquals(Duration.ofHours(2), ProberConfig.defaults().withVerifyEvery(Duration.ofHours(1)).verdictTtl());
    }
}
