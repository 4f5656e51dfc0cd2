package dev.hedgerow.function;

import dev.hedgerow.catalog.Keys;

import java.util.Optional;

/**
 * A bearer token an edge of Hedgerow's own asks for ({@code /q/metrics}, {@code /prober/run}), kept only as its hash.
 * A blank setting is no token. Immutable.
 *
 * @param hash the SHA-256 of the configured token, or null when none is set
 */
public record BearerToken(String hash) {
    public static BearerToken of(Optional<String> configured) {
        return new BearerToken(configured.filter(t -> !t.isBlank()).map(Keys::sha256Hex).orElse(null));
    }

    public boolean set() {
        return hash != null;
    }

    /**
     * Whether an {@code Authorization} header presents this token: hashed, then compared in constant time
     * ({@link Keys#matches}), so neither its length nor a prefix leaks through timing. False when none is set.
     */
    public boolean presentedBy(String authorization) {
        return hash != null && Keys.matches(Keys.bearer(authorization).orElse(null), hash);
    }
}
