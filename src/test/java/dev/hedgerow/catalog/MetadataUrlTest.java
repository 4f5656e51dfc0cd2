package dev.hedgerow.catalog;

import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;
import org.junit.jupiter.api.Test;

import java.util.List;
import java.util.Map;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** Provider URLs that point at a cloud metadata service are refused unless HEDGEROW_ALLOW_METADATA_URLS=true. */
class MetadataUrlTest {
    static String catalog(String baseUrl, String metricsUrl) {
        return """
                orgs:
                  - id: acme
                    keys: [{ name: app, key: k1 }]
                    providers:
                      - { id: p, base_url: "%s"%s }
                    routes:
                      - { alias: a, provider: p, model: m }
                """.formatted(baseUrl, metricsUrl == null ? "" : ", metrics_url: \"" + metricsUrl + "\"");
    }

    static List<CatalogError> errors(String yaml) {
        return assertThrows(CatalogException.class, () -> new CatalogLoader(k -> null).parse(yaml)).errors();
    }

    @ParameterizedTest
    @ValueSource(strings = {"http://169.254.169.254/latest", "http://169.254.170.2/v2", "http://metadata.google.internal/v1",
            "http://METADATA.google.internal./v1", "http://metadata/computeMetadata", "http://100.100.100.200/v1",
            "http://192.0.0.192/v1", "http://[fd00:ec2::254]/latest", "http://[fe80::1]/v1",
            "http://[::ffff:169.254.169.254]/v1", "http://[::ffff:a9fe:a9fe]/v1", "http://[64:ff9b::a9fe:a9fe]/v1",
            "https://169.254.169.254:443/v1", "http://instance-data/latest"})
    void aMetadataBaseUrlIsRefusedAtItsPath(String url) {
        List<CatalogError> errs = errors(catalog(url, null));
        assertEquals(1, errs.size(), errs.toString());
        assertEquals("orgs[0].providers[0].base_url", errs.get(0).path());
        assertTrue(errs.get(0).message().contains("HEDGEROW_ALLOW_METADATA_URLS"), errs.get(0).message());
    }

    @Test
    void aMetadataMetricsUrlIsRefusedToo() {
        List<CatalogError> errs = errors(catalog("https://api.example.com/v1", "http://169.254.169.254/metrics"));
        assertEquals("orgs[0].providers[0].metrics_url", errs.get(0).path());
    }

    @ParameterizedTest
    @ValueSource(strings = {"http://2852039166/v1", "http://0xA9FEA9FE/v1", "http://0251.0376.0251.0376/v1",
            "http://169.254.43518/v1"})
    void otherSpellingsOfTheAddressNeverLoad(String url) {
        // java.net.URI finds no host in these; the loader refuses them either way
        assertEquals(1, errors(catalog(url, null)).size());
    }

    @Test
    void theEnvironmentFlagLetsAMetadataUrlThrough() {
        LoadedCatalog c = new CatalogLoader(Map.of(ProviderUrls.ALLOW_ENV, "true")::get)
                .parse(catalog("http://169.254.169.254/v1", null));
        assertEquals("http://169.254.169.254/v1", c.orgs().get(0).providers().get(0).baseUrl());
    }

    @ParameterizedTest
    @ValueSource(strings = {"http://127.0.0.1:8000/v1", "http://10.0.0.5/v1", "https://api.openai.com/v1",
            "http://[::1]:9000/v1", "http://169.253.169.254/v1", "http://my-metadata-proxy.example.com/v1"})
    void ordinaryAndPrivateUrlsLoad(String url) {
        assertEquals(1, new CatalogLoader(k -> null).parse(catalog(url, null)).orgs().size());
    }

    @Test
    void inetAtonFormsAreRecognized() {
        assertEquals("a link-local address (169.254.0.0/16, where cloud metadata services answer)",
                ProviderUrls.metadataReason("0xa9.0376.43518"));
        assertTrue(ProviderUrls.metadataReason("2852039166") != null);
        assertNull(ProviderUrls.metadataReason("api.example.com"));
        assertNull(ProviderUrls.metadataReason("1.2.3.4.5"));
    }
}
