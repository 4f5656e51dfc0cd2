package dev.hedgerow.state;

/**
 * One write of a route's named blob not yet confirmed by the store it was meant for.
 * Compared by identity, so that a write confirmed late removes its own entry and never a newer one of the same name.
 */
final class BlobWrite {
    /** The value written. */
    final String value;

    BlobWrite(String value) {
        this.value = value;
    }
}
