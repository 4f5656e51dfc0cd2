package dev.hedgerow.routing;

import org.junit.jupiter.api.Test;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;

class RecentByStringTest {

    @Test
    void answersOnlyForTheExactStringItRemembers() {
        RecentByString<Integer> recent = new RecentByString<>(4);
        assertNull(recent.get("Aa"));
        recent.put("Aa", 1);
        assertEquals(1, recent.get("Aa"));
        assertEquals("Aa".hashCode(), "BB".hashCode());
        assertNull(recent.get("BB"), "same hash, same slot, another string");
        recent.put("BB", 2);
        assertEquals(2, recent.get("BB"));
        assertNull(recent.get("Aa"), "replaced by the string that shares its slot");
    }

    @Test
    void sizeIsAPowerOfTwo() {
        assertThrows(IllegalArgumentException.class, () -> new RecentByString<>(0));
        assertThrows(IllegalArgumentException.class, () -> new RecentByString<>(48));
    }
}
