package dev.hedgerow.catalog;

/** A named key, held only as the SHA-256 hex of its secret. */
public record ApiKey(String name, String sha256) {
}
