package dev.hedgerow.catalog;

import javax.crypto.Cipher;
import javax.crypto.spec.GCMParameterSpec;
import javax.crypto.spec.SecretKeySpec;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.security.GeneralSecurityException;
import java.security.SecureRandom;
import java.util.Base64;

/**
 * Encrypts provider API keys at rest: AES-256-GCM with a fresh 96-bit IV per value, written as
 * {@code enc:v1:<base64(iv || ciphertext+tag)>}. The key comes from {@code HEDGEROW_SECRET_KEY} (32 bytes, base64).
 *
 * <p>Policy (see {@link #fromEnvironment}): with the key set, values are sealed. Without it, an in-memory state
 * store gets an ephemeral key (nothing outlives the process, so nothing is lost); a shared Redis store gets
 * {@link #plaintext()}, with a loud warning, because every instance must read what any instance wrote and an
 * ephemeral key would lock the others out: fine for a laptop, never for production. A value that is not sealed
 * (written before encryption, or by a keyless instance) is read as is; a sealed value read without the right key
 * is an error that says so. Thread-safe: immutable; each call builds its own {@link Cipher}.
 */
public final class SecretBox {
    /** The environment variable holding the base64 of a 32-byte key. */
    public static final String KEY_ENV = "HEDGEROW_SECRET_KEY";
    public static final String PREFIX = "enc:v1:";
    private static final int IV_BYTES = 12;
    private static final int TAG_BITS = 128;
    private static final SecureRandom RANDOM = new SecureRandom();
    private static final System.Logger LOG = System.getLogger("dev.hedgerow.catalog");

    private static final class ProcessKey {
        // one per JVM, so several in-process instances over one store read each other's catalogs
        static final SecretBox EPHEMERAL = new SecretBox(randomKey(), "ephemeral");
    }

    private final SecretKeySpec key;
    private final String origin;

    private SecretBox(byte[] key, String origin) {
        this.key = key == null ? null : new SecretKeySpec(key, "AES");
        this.origin = origin;
    }

    /** A box over a base64 32-byte key. @throws IllegalArgumentException naming the problem, never the key */
    public static SecretBox of(String base64Key) {
        byte[] k;
        try {
            k = Base64.getDecoder().decode(base64Key.trim());
        } catch (IllegalArgumentException e) {
            throw new IllegalArgumentException(KEY_ENV + " is not valid base64");
        }
        if (k.length != 32) {
            throw new IllegalArgumentException(KEY_ENV + " must decode to 32 bytes (AES-256), not " + k.length
                    + "; make one with: openssl rand -base64 32");
        }
        return new SecretBox(k, "env");
    }

    /** The process-wide random key (the in-memory store's default). */
    public static SecretBox ephemeral() {
        return ProcessKey.EPHEMERAL;
    }

    /** Stores values as they are: only for a shared dev store without a key. */
    public static SecretBox plaintext() {
        return new SecretBox(null, "plaintext");
    }

    /**
     * The box this process uses, by the policy above.
     *
     * @param configuredKey the value of {@code HEDGEROW_SECRET_KEY}, or null
     * @param sharedStore   true when the state store is shared with other processes (Redis)
     */
    public static SecretBox fromEnvironment(String configuredKey, boolean sharedStore) {
        if (configuredKey != null && !configuredKey.isBlank()) {
            return of(configuredKey);
        }
        if (!sharedStore) {
            LOG.log(System.Logger.Level.WARNING, KEY_ENV + " is not set: provider API keys are encrypted in memory "
                    + "with a key that lives only as long as this process.");
            return ephemeral();
        }
        LOG.log(System.Logger.Level.WARNING, "\n*** " + KEY_ENV + " is not set: provider API keys are stored in "
                + "PLAINTEXT in the shared state store. Acceptable for local development only; in production set "
                + KEY_ENV + " (openssl rand -base64 32) to the same value on every instance. ***");
        return plaintext();
    }

    /** "env", "ephemeral" or "plaintext": where this box's key came from, for health and logs. */
    public String origin() {
        return origin;
    }

    public boolean encrypts() {
        return key != null;
    }

    public static boolean isSealed(String value) {
        return value != null && value.startsWith(PREFIX);
    }

    /** The sealed form of {@code plain} (null stays null; plaintext boxes return it as is). */
    public String seal(String plain) {
        if (plain == null || key == null) {
            return plain;
        }
        try {
            byte[] iv = new byte[IV_BYTES];
            RANDOM.nextBytes(iv);
            Cipher c = Cipher.getInstance("AES/GCM/NoPadding");
            c.init(Cipher.ENCRYPT_MODE, key, new GCMParameterSpec(TAG_BITS, iv));
            byte[] ct = c.doFinal(plain.getBytes(StandardCharsets.UTF_8));
            return PREFIX + Base64.getEncoder().encodeToString(ByteBuffer.allocate(iv.length + ct.length).put(iv)
                    .put(ct).array());
        } catch (GeneralSecurityException e) {
            throw new IllegalStateException("AES-GCM is part of every Java platform", e);
        }
    }

    /**
     * The plain value of a stored one: sealed values are decrypted, others returned as is.
     *
     * @throws IllegalArgumentException when a sealed value cannot be opened with this box's key
     */
    public String open(String stored) {
        if (!isSealed(stored)) {
            return stored;
        }
        if (key == null) {
            throw new IllegalArgumentException("a provider key is encrypted but " + KEY_ENV
                    + " is not set on this instance");
        }
        try {
            byte[] all = Base64.getDecoder().decode(stored.substring(PREFIX.length()));
            if (all.length <= IV_BYTES) {
                throw new IllegalArgumentException("a sealed provider key is truncated");
            }
            Cipher c = Cipher.getInstance("AES/GCM/NoPadding");
            c.init(Cipher.DECRYPT_MODE, key, new GCMParameterSpec(TAG_BITS, all, 0, IV_BYTES));
            return new String(c.doFinal(all, IV_BYTES, all.length - IV_BYTES), StandardCharsets.UTF_8);
        } catch (GeneralSecurityException | IllegalArgumentException e) {
            throw new IllegalArgumentException("a provider key cannot be decrypted: " + KEY_ENV
                    + " differs from the key it was written with (" + e.getClass().getSimpleName() + ")");
        }
    }

    private static byte[] randomKey() {
        byte[] k = new byte[32];
        RANDOM.nextBytes(k);
        return k;
    }

    @Override
    public String toString() {
        return "SecretBox[" + origin + "]";
    }
}
