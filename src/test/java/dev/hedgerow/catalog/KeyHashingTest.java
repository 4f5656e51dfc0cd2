package dev.hedgerow.catalog;

import dev.hedgerow.testsupport.AtOnce;
import org.junit.jupiter.api.Test;

import java.lang.reflect.RecordComponent;
import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.util.ArrayList;
import java.util.Collection;
import java.util.HexFormat;
import java.util.List;
import java.util.Map;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

class KeyHashingTest {
    private static final Map<String, String> ENV = Map.of(
            "ACME_KEY", "acme-client-secret",
            "ACME_ADMIN_KEY", "acme-admin-secret",
            "FIREWORKS_API_KEY", "fw-upstream-secret");
    private static final List<String> SECRETS = List.of("acme-client-secret", "acme-batch-default",
            "acme-admin-secret", "capacity-secret", "globex-client-secret");

    /** Every string reachable from the value through record components, collections and maps. */
    private static List<String> strings(Object value) {
        List<String> out = new ArrayList<>();
        collect(value, out);
        return out;
    }

    private static void collect(Object v, List<String> out) {
        if (v instanceof String s) {
            out.add(s);
        } else if (v instanceof Collection<?> c) {
            c.forEach(e -> collect(e, out));
        } else if (v instanceof Map<?, ?> m) {
            m.forEach((k, e) -> {
                collect(k, out);
                collect(e, out);
            });
        } else if (v != null && v.getClass().isRecord()) {
            for (RecordComponent rc : v.getClass().getRecordComponents()) {
                try {
                    collect(rc.getAccessor().invoke(v), out);
                } catch (ReflectiveOperationException e) {
                    throw new IllegalStateException(e);
                }
            }
        }
    }

    @Test
    void loadedObjectGraphHoldsNoPlainKey() {
        LoadedCatalog c = new CatalogLoader(ENV::get).parse(CatalogLoaderTest.resource("catalog/valid-full.yaml"));

        List<String> all = strings(c);
        assertTrue(all.size() > 50, "the walk reached the graph");
        for (String secret : SECRETS) {
            assertFalse(all.stream().anyMatch(s -> s.contains(secret)), secret);
        }
        assertTrue(all.contains("fw-upstream-secret"), "an upstream api_key is kept: it is sent to the provider");
    }

    @Test
    void aBearerHeaderYieldsItsTrimmedSecretAndNothingElseDoes() {
        assertEquals(java.util.Optional.of("k-1"), Keys.bearer("Bearer k-1"));
        assertEquals(java.util.Optional.of("k-1"), Keys.bearer("bearer   k-1  "));
        for (String h : new String[]{null, "", "Bearer", "Bearer    ", "Basic azox", "Bearerk-1"}) {
            assertEquals(java.util.Optional.empty(), Keys.bearer(h), String.valueOf(h));
        }
    }

    @Test
    void keysAreStoredAsSha256Hex() {
        Org acme = new CatalogLoader(ENV::get).parse(CatalogLoaderTest.resource("catalog/valid-full.yaml"))
                .orgs().get(0);

        assertEquals(new ApiKey("app", Keys.sha256Hex("acme-client-secret")), acme.keys().get(0));
        assertTrue(acme.keys().get(0).sha256().matches("[0-9a-f]{64}"));
    }

    @Test
    void storedJsonHoldsNoPlainKey() {
        LoadedCatalog c = new CatalogLoader(ENV::get).parse(CatalogLoaderTest.resource("catalog/valid-full.yaml"));

        for (Org org : c.orgs()) {
            String json = CatalogCodec.toJson(org);
            SECRETS.forEach(s -> assertFalse(json.contains(s), s));
        }
    }

    @Test
    void catalogFindsOrgByHashOfPresentedKey() {
        Catalog catalog = new CatalogLoader(ENV::get)
                .parse(CatalogLoaderTest.resource("catalog/valid-full.yaml")).toCatalog();

        assertEquals("globex", catalog.orgForKeyHash(Keys.sha256Hex("globex-client-secret")).orElseThrow().id());
        assertEquals("acme", catalog.orgForAdminKeyHash(Keys.sha256Hex("acme-admin-secret")).orElseThrow().id());
        assertTrue(catalog.orgForKeyHash(Keys.sha256Hex("acme-admin-secret")).isEmpty());
    }

    @Test
    void sha256HexMatchesKnownVector() {
        assertEquals("ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad", Keys.sha256Hex("abc"));
    }

    @Test
    void hashesFromManyThreadsAtOnceEachMatchAFreshDigest() throws Exception {
        int bad = AtOnce.failures(4, 2_000, i -> {
            String text = "key-" + i + "-".repeat(i % 97);
            return Keys.sha256Hex(text).equals(freshSha256Hex(text));
        });

        assertEquals(0, bad);
        assertEquals("ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad", Keys.sha256Hex("abc"));
    }

    private static String freshSha256Hex(String text) {
        try {
            return HexFormat.of().formatHex(MessageDigest.getInstance("SHA-256")
                    .digest(text.getBytes(StandardCharsets.UTF_8)));
        } catch (NoSuchAlgorithmException e) {
            throw new IllegalStateException(e);
        }
    }

    @Test
    void matchesComparesPresentedSecretWithStoredHash() {
        String stored = Keys.sha256Hex("s3cret");

        assertTrue(Keys.matches("s3cret", stored));
        assertFalse(Keys.matches("s3cret ", stored));
        assertFalse(Keys.matches(null, stored));
    }
}
