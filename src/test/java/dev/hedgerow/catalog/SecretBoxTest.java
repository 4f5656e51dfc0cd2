package dev.hedgerow.catalog;

import org.junit.jupiter.api.Test;

import java.util.Base64;
import java.util.List;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

class SecretBoxTest {
    static final String KEY = Base64.getEncoder().encodeToString(new byte[32]);
    static final String OTHER_KEY = Base64.getEncoder().encodeToString("0123456789abcdef0123456789abcdef".getBytes());

    @Test
    void sealedValuesOpenToThePlainValue() {
        SecretBox box = SecretBox.of(KEY);
        String sealed = box.seal("sk-live-123");
        assertTrue(sealed.startsWith("enc:v1:"), sealed);
        assertFalse(sealed.contains("sk-live-123"));
        assertEquals("sk-live-123", box.open(sealed));
    }

    @Test
    void everySealUsesAFreshIv() {
        SecretBox box = SecretBox.of(KEY);
        assertNotEquals(box.seal("same"), box.seal("same"));
    }

    @Test
    void aDifferentKeyCannotOpenAndTheErrorNamesTheVariableNotTheKey() {
        String sealed = SecretBox.of(KEY).seal("sk-live-123");
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
                () -> SecretBox.of(OTHER_KEY).open(sealed));
        assertTrue(e.getMessage().contains("HEDGEROW_SECRET_KEY"), e.getMessage());
        assertFalse(e.getMessage().contains(OTHER_KEY) || e.getMessage().contains("sk-live"), e.getMessage());
    }

    @Test
    void aTamperedValueIsRefused() {
        String sealed = SecretBox.of(KEY).seal("sk-live-123");
        byte[] raw = Base64.getDecoder().decode(sealed.substring(SecretBox.PREFIX.length()));
        raw[raw.length - 1] ^= 1;
        String tampered = SecretBox.PREFIX + Base64.getEncoder().encodeToString(raw);
        assertThrows(IllegalArgumentException.class, () -> SecretBox.of(KEY).open(tampered));
    }

    @Test
    void aKeyOfTheWrongLengthOrNotBase64IsRefused() {
        assertThrows(IllegalArgumentException.class, () -> SecretBox.of(Base64.getEncoder().encodeToString(new byte[16])));
        assertThrows(IllegalArgumentException.class, () -> SecretBox.of("not base64 !!"));
    }

    @Test
    void unsealedValuesAreReadAsTheyAre() {
        assertEquals("sk-old", SecretBox.of(KEY).open("sk-old"));
        assertNull(SecretBox.of(KEY).seal(null));
    }

    @Test
    void aKeylessInstanceCannotOpenASealedValueAndSaysWhy() {
        String sealed = SecretBox.of(KEY).seal("sk-live-123");
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
                () -> SecretBox.plaintext().open(sealed));
        assertTrue(e.getMessage().contains("not set"), e.getMessage());
    }

    @Test
    void policyWithoutAKeyIsEphemeralInMemoryAndPlaintextOnASharedStore() {
        assertEquals("env", SecretBox.fromEnvironment(KEY, true).origin());
        assertEquals("ephemeral", SecretBox.fromEnvironment(null, false).origin());
        assertTrue(SecretBox.fromEnvironment("  ", false).encrypts());
        assertEquals("plaintext", SecretBox.fromEnvironment(null, true).origin());
        assertFalse(SecretBox.fromEnvironment(null, true).encrypts());
    }

    @Test
    void theStoredCatalogSealsProviderKeysAndReadsThemBack() {
        Org org = new Org("acme", List.of(new ApiKey("app", Keys.sha256Hex("k-client"))), List.of(),
                List.of(new Provider("alpha", "https://a.example/v1", "sk-provider-secret", Dialect.OPENAI, null,
                        null)), List.of(), java.util.Map.of(), RoutingRules.defaults(), HedgeBudget.defaults());
        SecretBox box = SecretBox.of(KEY);
        String json = CatalogCodec.toJson(org, box);
        assertFalse(json.contains("sk-provider-secret"), json);
        assertFalse(json.contains("k-client"), json);
        assertTrue(json.contains("\"api_key\":\"enc:v1:"), json);
        assertEquals(org, CatalogCodec.fromJson(json, box));
        assertThrows(IllegalArgumentException.class, () -> CatalogCodec.fromJson(json));
    }

    @Test
    void anOrgPrintsWithoutItsProviderKey() {
        Provider p = new Provider("alpha", "https://a.example/v1", "sk-provider-secret", Dialect.OPENAI, null, null);
        assertFalse(String.valueOf(p).contains("sk-provider-secret"));
    }
}
