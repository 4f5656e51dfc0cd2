package dev.hedgerow.catalog;

import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;
import org.junit.jupiter.params.provider.ValueSource;

import java.time.Duration;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;

class DurationParsingTest {

    @ParameterizedTest
    @CsvSource({"500ms, 500", "30s, 30000", "2m, 120000", "1h, 3600000", "1m30s, 90000", "45, 45000",
            "0.25, 250", "1.5s, 1500", "0s, 0"})
    void acceptsUnitsAndPlainSeconds(String text, long millis) {
        assertEquals(Duration.ofMillis(millis), ConfigMap.parseDuration(text));
    }

    @ParameterizedTest
    @ValueSource(strings = {"-1s", "s", "10d", "1.5.2s", "30 seconds", "ms500", "", "1s-"})
    void rejectsAnythingElse(String text) {
        assertNull(ConfigMap.parseDuration(text));
    }

    @ParameterizedTest
    @CsvSource({"60000, 60000", "250, 250", "0, 0", "500ms, 500", "30s, 30000", "1m30s, 90000", "1.5s, 1500"})
    void kongsTimeoutsReadABareNumberAsMilliseconds(String text, long millis) {
        assertEquals(Duration.ofMillis(millis), ConfigMap.parseTimeout(text));
    }

    @ParameterizedTest
    @ValueSource(strings = {"0.5", "1.", "60000.0", "-1", "99999999999999999999", "60000 ms", "10d", ""})
    void kongsTimeoutsRefuseFractionsAndAnythingElse(String text) {
        assertNull(ConfigMap.parseTimeout(text));
    }
}
