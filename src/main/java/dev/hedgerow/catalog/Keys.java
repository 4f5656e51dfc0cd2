package dev.hedgerow.catalog;

import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.util.HexFormat;
import java.util.Optional;

/**
 * Hashing and comparison of secrets (client keys, admin keys, capacity keys). Secrets are kept only as the
 * lowercase SHA-256 hex of their UTF-8 bytes. Stateless and thread-safe.
 */
public final class Keys {
    /**
     * A SHA-256 digest to clone: {@code MessageDigest.getInstance} looks the algorithm up among the security
     * providers on every call (it showed in the request path's CPU profile, one hash per authenticated request);
     * a clone copies the fresh state only.
     */
    private static final MessageDigest SHA256 = newSha256();

    private Keys() {
    }

    /**
     * The secret of an {@code Authorization: Bearer <secret>} header (scheme case-insensitive, secret trimmed);
     * empty when the header is missing, not a bearer, or names no secret. Every HTTP entry point reads keys so.
     */
    public static Optional<String> bearer(String authorizationHeader) {
        if (authorizationHeader == null || !authorizationHeader.regionMatches(true, 0, "Bearer ", 0, 7)) {
            return Optional.empty();
        }
        String secret = authorizationHeader.substring(7).trim();
        return secret.isEmpty() ? Optional.empty() : Optional.of(secret);
    }

    /** Lowercase hex SHA-256 of the UTF-8 bytes of {@code text}. */
    public static String sha256Hex(String text) {
        return HexFormat.of().formatHex(sha256(text.getBytes(StandardCharsets.UTF_8)));
    }

    /**
     * True when {@code presentedSecret} hashes to {@code expectedSha256Hex}. Compares in time independent of where
     * the digests differ, so response timing reveals nothing about a stored hash.
     */
    public static boolean matches(String presentedSecret, String expectedSha256Hex) {
        if (presentedSecret == null || expectedSha256Hex == null) {
            return false;
        }
        return constantTimeEquals(sha256Hex(presentedSecret), expectedSha256Hex);
    }

    /** Equality of two strings in time that depends only on their lengths. */
    public static boolean constantTimeEquals(String a, String b) {
        if (a == null || b == null) {
            return false;
        }
        return MessageDigest.isEqual(a.getBytes(StandardCharsets.UTF_8), b.getBytes(StandardCharsets.UTF_8));
    }

    static byte[] sha256(byte[] bytes) {
        MessageDigest digest;
        try {
            digest = (MessageDigest) SHA256.clone();
        } catch (CloneNotSupportedException e) {
            digest = newSha256();
        }
        return digest.digest(bytes);
    }

    private static MessageDigest newSha256() {
        try {
            return MessageDigest.getInstance("SHA-256");
        } catch (NoSuchAlgorithmException e) {
            throw new IllegalStateException("every Java platform provides SHA-256", e);
        }
    }
}
