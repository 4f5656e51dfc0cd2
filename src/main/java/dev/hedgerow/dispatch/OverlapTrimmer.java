package dev.hedgerow.dispatch;

/**
 * Removes text a resumed route re-emits: holds the first {@code window} characters of the new text, then drops
 * the longest prefix of it that the delivered text already ends with (at least {@code minOverlap} characters, so
 * a coincidental short match is kept, unless it is the whole delivered text: a model that starts over from the
 * beginning of a short delivery, a first token of one to three characters, repeats it, not coincides with it; found
 * by hunt18). Strings here are whole code points (JSON-decoded), so a cut never splits a
 * character. Not thread-safe.
 */
final class OverlapTrimmer {
    private final String delivered;
    private final int window;
    private final int minOverlap;
    /** The request's stop sequences: a provider stopped on one may have cut its re-emission before the seam. */
    private final java.util.List<String> stops;
    /** {@link #delivered} is all the text delivered, not its end. */
    private final boolean whole;
    private final StringBuilder held = new StringBuilder();
    /** Where each piece fed while deciding ends in {@link #held}: a piece is one delta, one token of the stream. */
    private int[] pieceEnds = new int[16];
    private int pieces;
    private int releasedPieces;
    private boolean decided;
    /** Once decided: the length of the overlap dropped from the start of {@link #held}. */
    private int cut;
    /** Once decided: where the text released ends in {@link #held} (its pieces past {@link #maxReleased} are not). */
    private int releasedEnd;
    private int maxReleased = Integer.MAX_VALUE;

    OverlapTrimmer(CharSequence delivered, int window, int minOverlap) {
        this(delivered, window, minOverlap, java.util.List.of());
    }

    OverlapTrimmer(CharSequence delivered, int window, int minOverlap, java.util.List<String> stops) {
        this.stops = stops;
        int keep = Math.min(delivered.length(), window * 2);
        this.delivered = delivered.subSequence(delivered.length() - keep, delivered.length()).toString();
        this.whole = keep == delivered.length();
        this.window = window;
        this.minOverlap = minOverlap;
    }

    /** Feeds new text; returns what may be released now ("" while still deciding). */
    String feed(String text) {
        if (decided) {
            return text;
        }
        if (!text.isEmpty()) {
            held.append(text);
            if (pieces == pieceEnds.length) {
                pieceEnds = java.util.Arrays.copyOf(pieceEnds, pieces * 2);
            }
            pieceEnds[pieces++] = held.length();
        }
        if (held.length() < window) {
            return "";
        }
        return decide();
    }

    /** The stream ended or moved past text: release whatever is held, trimmed. */
    String flush() {
        return flush(false);
    }

    /**
     * As {@link #flush()}; {@code atStop}: the provider finished with {@code stop}. It may then have re-emitted the
     * overlap only up to a stop sequence the delivered text began at its end (delivered "... dog EN", stop "END": the
     * provider matched "EN" + "D" in what it generated, held " EN" back as its stop buffer and sent "... dog "), so what
     * it sent is all overlap, though the delivered text does not end with it (found by hunt19).
     */
    String flush(boolean atStop) {
        if (decided) {
            return "";
        }
        if (atStop && overlapCutByStop()) {
            decided = true;
            cut = held.length();
            releasedEnd = cut;
            return "";
        }
        return decide();
    }

    /** Whether all the held text is overlap that ends where a stop sequence begun at the delivered end starts. */
    private boolean overlapCutByStop() {
        String h = held.toString();
        if (h.isEmpty()) {
            return false;
        }
        for (String stop : stops) {
            for (int j = 1; j < stop.length() && j <= delivered.length(); j++) {
                String before = delivered.substring(0, delivered.length() - j);
                if (stop.startsWith(delivered.substring(delivered.length() - j))
                        && (h.length() >= minOverlap || whole && h.length() == before.length())
                        && before.endsWith(h)) {
                    return true;
                }
            }
        }
        return false;
    }

    boolean decided() {
        return decided;
    }

    /**
     * Once decided: how many of the pieces fed while deciding reached the client (had text past the dropped overlap).
     * The tokens a resumed stream delivered are counted by them, as the held text goes out in one piece.
     */
    int releasedPieces() {
        return releasedPieces;
    }

    /**
     * Releases at most {@code n} pieces at the decision (the answer's tokens left under {@code max_tokens}): the rest
     * of what it holds then is dropped, as the answer ends there.
     */
    void capReleased(int n) {
        maxReleased = Math.max(0, n);
    }

    /**
     * Once decided: whether {@link #capReleased} kept back text past the overlap, so the answer reached its
     * {@code max_tokens} with more to come: it ends with {@code length}, whatever finish its provider gave later.
     */
    boolean capped() {
        return decided && releasedEnd < held.length();
    }

    /** Once decided: whether piece {@code i} (0-based, in the order fed) reached the client, past the dropped overlap. */
    boolean released(int i) {
        return decided && i < pieces && pieceEnds[i] > cut && pieceEnds[i] <= releasedEnd;
    }

    /**
     * Once decided: how many characters at the start of piece {@code i} were dropped with the overlap (0 for a piece
     * wholly past the cut): a piece the cut falls inside reaches the client without them.
     */
    int cutInto(int i) {
        int start = i == 0 ? 0 : pieceEnds[i - 1];
        return decided && i < pieces ? Math.max(0, Math.min(cut, pieceEnds[i]) - start) : 0;
    }

    /** The length of piece {@code i} (0-based, in the order fed). */
    int pieceLength(int i) {
        return i < pieces ? pieceEnds[i] - (i == 0 ? 0 : pieceEnds[i - 1]) : 0;
    }

    private String decide() {
        decided = true;
        String h = held.toString();
        int best = 0;
        int max = Math.min(h.length(), delivered.length());
        for (int k = max; k >= 1; k--) {
            if ((k >= minOverlap || whole && k == delivered.length()) && delivered.endsWith(h.substring(0, k))) {
                best = k;
                break;
            }
        }
        cut = best;
        releasedEnd = best;
        for (int i = 0; i < pieces && releasedPieces < maxReleased; i++) {
            if (pieceEnds[i] > best) {
                releasedPieces++;
                releasedEnd = pieceEnds[i];
            }
        }
        // delivered ends with a whole code point, so a match never ends between the halves of a surrogate pair
        return h.substring(best, releasedEnd);
    }
}
