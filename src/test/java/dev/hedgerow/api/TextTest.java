package dev.hedgerow.api;

import org.junit.jupiter.api.Test;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;

class TextTest {
    @Test
    void clipNeverEndsInHalfASurrogatePair() {
        // a provider's error message of 299 characters and an emoji: cut at 300 it ended in an unpaired surrogate
        String message = "x".repeat(299) + "\uD83D\uDE00" + "y";
        assertEquals("x".repeat(299), Text.clip(message, 300));
        assertEquals("x".repeat(299) + "\uD83D\uDE00", Text.clip(message, 301));
        assertEquals("x".repeat(299) + "\u2026", Text.clip(message, 300, "\u2026"));
        assertEquals("short", Text.clip("short", 300, "\u2026"));
        assertNull(Text.clip(null, 3));
    }

    @Test
    void loggedQuotesAnythingButAPlainName() {
        assertEquals("kimi3", Text.logged("kimi3"));
        assertEquals("vendor/model:free", Text.logged("vendor/model:free"));
        assertEquals("\"a\\nb\"", Text.logged("a\nb"));
        assertEquals("\"say \\\"hi\\\"\"", Text.logged("say \"hi\""));
        assertEquals("-", Text.logged(null));
    }
}
