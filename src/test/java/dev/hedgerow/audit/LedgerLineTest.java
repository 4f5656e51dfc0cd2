package dev.hedgerow.audit;

import org.junit.jupiter.api.Test;

import static org.junit.jupiter.api.Assertions.assertEquals;

/** The ledger line's stored form: alias and key name joined, split back exactly; a bare alias is usage before keys. */
class LedgerLineTest {
    @Test
    void aliasAndKeyNameRoundTripThroughTheStoredString() {
        for (LedgerLine line : new LedgerLine[] {new LedgerLine("kimi3", "app"),
                new LedgerLine("vendor/model:variant@v1+x", "eu-west:batch/ci@2+x"), new LedgerLine("a", "b"),
                new LedgerLine("kimi3", "ops team | 100%"), new LedgerLine("a", "|"), new LedgerLine("a", "|x|"),
                new LedgerLine("a", "é 键 ∑"), new LedgerLine("a", "x:n")}) {
            assertEquals(line, LedgerLine.decode(line.encode()));
        }
        assertEquals("kimi3|app", new LedgerLine("kimi3", "app").encode());
        assertEquals("kimi3|a|b", new LedgerLine("kimi3", "a|b").encode(), "split at the first |: the alias has none");
    }

    @Test
    void aBareAliasWrittenBeforeKeysReadsBackWithNoKey() {
        assertEquals(new LedgerLine("kimi3", LedgerLine.NO_KEY), LedgerLine.decode("kimi3"));
        assertEquals(new LedgerLine("gpt:mini", "-"), LedgerLine.decode("gpt:mini"));
    }

    @Test
    void aLineWithoutAKeyIsStoredAsItsBareAlias() {
        assertEquals("kimi3", new LedgerLine("kimi3", null).encode());
        assertEquals("kimi3", new LedgerLine("kimi3", LedgerLine.NO_KEY).encode());
    }
}
