package dev.hedgerow.state;

import org.junit.jupiter.api.Test;

import java.time.LocalDate;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;

/** Key layout: prefix, hash tags around the entity, and escaping that keeps the tag intact. */
class StateKeysTest {

    @Test
    void routeKeysShareTheRouteHashTag() {
        assertEquals("hr:{r:openai-4o}:cool", StateKeys.cool("openai-4o"));
        assertEquals("hr:{r:openai-4o}:fails", StateKeys.fails("openai-4o"));
        assertEquals("hr:{r:openai-4o}:lastfail", StateKeys.lastFail("openai-4o"));
        assertEquals("hr:{r:openai-4o}:probe", StateKeys.probe("openai-4o"));
        assertEquals("hr:{r:openai-4o}:ra", StateKeys.retryAfter("openai-4o"));
        assertEquals("hr:{r:openai-4o}:leases", StateKeys.leases("openai-4o"));
        assertEquals("hr:{r:openai-4o}:usage:29000000", StateKeys.usageBucket("openai-4o", 29_000_000));
        assertEquals("hr:{r:openai-4o}:blob:ttft", StateKeys.routeBlob("openai-4o", "ttft"));
    }

    @Test
    void groupOrgAndLockKeysCarryTheirOwnTags() {
        assertEquals("hr:{g:acme/kimi3}:cursor", StateKeys.cursor("acme", "kimi3"));
        assertEquals("hr:{o:acme}:catalog", StateKeys.catalog("acme"));
        assertEquals("hr:{o:acme}:catalog:version", StateKeys.catalogVersion("acme"));
        assertEquals("hr:{o:acme}:audit", StateKeys.audit("acme"));
        assertEquals("hr:{o:acme}:ledger:2026-12-01", StateKeys.ledger("acme", LocalDate.of(2026, 12, 1)));
        assertEquals("hr:{o:acme}:affinity:ab12", StateKeys.affinity("acme", "ab12"));
        assertEquals("hr:{o:acme}:hedge:10000:7", StateKeys.hedgeBucket("acme", 10_000, 7));
        assertEquals("hr:{o:acme}:blob:emb", StateKeys.orgBlob("acme", "emb"));
        assertEquals("hr:{lock:prober}", StateKeys.lock("prober"));
        assertEquals("hr:orgs", StateKeys.ORGS);
    }

    @Test
    void bracesAndSpacesInIdsAreEscapedSoTheHashTagStaysWhole() {
        assertEquals("hr:{r:a%7bb%7d c}:cool".replace(" ", "%20"), StateKeys.cool("a{b} c"));
        assertEquals("hr:{r:100%25}:cool", StateKeys.cool("100%"));
        assertThrows(IllegalArgumentException.class, () -> StateKeys.cool(""));
    }

    @Test
    void controlAndWhitespaceCharactersAreEscapedInsideAndOutsideAscii() {
        assertEquals("a%09b%0ac%7fd", StateKeys.escape("a\tb\nc\u007fd"));
        assertEquals("x%85y%u2003z", StateKeys.escape("x\u0085y\u2003z"), "NEL (a control) and an em space");
        String plain = "Route-1_a.b/c:d@e+f=g~h\u00e9\u4e2d";
        assertSame(plain, StateKeys.escape(plain), "everything else is kept as given, and not copied");
    }
}
