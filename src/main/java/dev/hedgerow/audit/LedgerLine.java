package dev.hedgerow.audit;

/**
 * One line of an org's usage ledger: the alias a request was billed under and the name of the client key that sent
 * it. The state store keeps a ledger per day and <em>alias string</em> and knows nothing of keys, so a line travels
 * through it as one string, {@code <alias>|<key name>} ({@link #encode()}), and is split again when read
 * ({@link #decode}) at its first {@code |}: an alias holds none (the catalog refuses it), while a key name may hold
 * anything, {@code |} included. A line written before the ledger had keys is a bare alias and reads back with the key
 * {@link #NO_KEY}, which the catalog refuses as a client key's name.
 * Immutable.
 */
public record LedgerLine(String alias, String key) {
    /** Between alias and key name in the stored string. */
    public static final char SEPARATOR = '|';
    /** The key of usage billed before the ledger recorded keys (or without a key to name). */
    public static final String NO_KEY = "-";
    /**
     * The key of the gateway's own judge calls ({@code tokens_count_strategy: llm_accuracy}), billed under the judge
     * route's alias; the catalog refuses it as a client key's name.
     */
    public static final String JUDGE = "@judge";

    public LedgerLine {
        key = key == null ? NO_KEY : key;
    }

    /** The string the store keeps this line under; a line without a key is its bare alias, as before keys. */
    public String encode() {
        return NO_KEY.equals(key) ? alias : alias + SEPARATOR + key;
    }

    /** The line a stored string names: a bare alias (written before keys were billed) has the key {@link #NO_KEY}. */
    public static LedgerLine decode(String stored) {
        int at = stored.indexOf(SEPARATOR);
        return at < 0 ? new LedgerLine(stored, NO_KEY)
                : new LedgerLine(stored.substring(0, at), stored.substring(at + 1));
    }
}
