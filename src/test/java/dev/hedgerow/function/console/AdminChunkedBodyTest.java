package dev.hedgerow.function.console;

import com.fasterxml.jackson.databind.JsonNode;
import dev.hedgerow.api.Json;
import dev.hedgerow.function.ShutdownGate;
import dev.hedgerow.testsupport.AppTestResource;
import io.quarkus.test.common.QuarkusTestResource;
import io.quarkus.test.common.http.TestHTTPResource;
import io.quarkus.test.junit.QuarkusTest;
import jakarta.inject.Inject;
import org.junit.jupiter.api.Test;

import java.io.ByteArrayInputStream;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.util.Arrays;

import static dev.hedgerow.testsupport.Eventually.eventually;
import static org.junit.jupiter.api.Assertions.assertEquals;

/**
 * An admin request whose body comes without a length (chunked, as a streaming client sends it). Over the server's
 * 10 MiB limit it got Quarkus REST's empty 413, and the shutdown gate never saw it end: each such request stayed
 * counted in flight, so every later stop of the instance waited its whole grace period. It now gets the 413 in the
 * envelope and ends like any other; a chunked body under the limit is served as before.
 */
@QuarkusTest
@QuarkusTestResource(value = AppTestResource.class, restrictToAnnotatedClass = false)
class AdminChunkedBodyTest {
    @Inject
    ShutdownGate gate;

    @TestHTTPResource("/admin/members/drain")
    URI drain;

    final HttpClient http = HttpClient.newBuilder().version(HttpClient.Version.HTTP_1_1).build();

    HttpResponse<String> chunked(byte[] body) throws Exception {
        // an InputStream publisher has no known length: the client sends it chunked
        return http.send(HttpRequest.newBuilder(drain).header("Authorization", "Bearer a-acme")
                .header("Content-Type", "application/json")
                .POST(HttpRequest.BodyPublishers.ofInputStream(() -> new ByteArrayInputStream(body))).build(),
                HttpResponse.BodyHandlers.ofString());
    }

    @Test
    void aChunkedBodyOverTheLimitGetsTheEnvelopeAndEnds() throws Exception {
        byte[] big = new byte[11 * 1024 * 1024];
        Arrays.fill(big, (byte) ' ');
        int inFlight = gate.inFlight();
        HttpResponse<String> r = chunked(big);
        assertEquals(413, r.statusCode(), r.body());
        JsonNode err = Json.MAPPER.readTree(r.body()).path("error");
        assertEquals("request_too_large", err.path("code").asText(), r.body());
        eventually(() -> gate.inFlight() <= inFlight, "the refused request is no longer in flight");
    }

    @Test
    void aChunkedBodyUnderTheLimitIsServed() throws Exception {
        HttpResponse<String> r = chunked("{\"route\":\"no-such-route\"}".getBytes(StandardCharsets.UTF_8));
        assertEquals(404, r.statusCode(), r.body());
        assertEquals("not_found", Json.MAPPER.readTree(r.body()).path("error").path("code").asText(), r.body());
    }
}
