package dev.hedgerow.hardening;

import com.fasterxml.jackson.databind.JsonNode;
import dev.hedgerow.testsupport.AppTestResource;
import dev.hedgerow.testsupport.LogCapture;
import io.quarkus.test.common.QuarkusTestResource;
import io.quarkus.test.junit.QuarkusTest;
import io.restassured.RestAssured;
import org.junit.jupiter.api.Test;

import java.nio.charset.StandardCharsets;

import static io.restassured.RestAssured.given;
import static org.hamcrest.Matchers.equalTo;
import static org.hamcrest.Matchers.hasItem;
import static org.hamcrest.Matchers.not;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Hostile input against the real application (every function, Quarkus' own HTTP layer included), over a raw socket:
 * what the Quarkus server itself would answer before any Hedgerow route runs must still be an envelope.
 */
@QuarkusTest
@QuarkusTestResource(value = AppTestResource.class, restrictToAnnotatedClass = false)
class AppHostileInputTest {
    /** A body over the server's own limit (quarkus.http.limits.max-body-size, 10 MiB by default). */
    static final byte[] HUGE_BODY = " ".repeat(11 * 1024 * 1024).getBytes(StandardCharsets.US_ASCII);

    /** Sends the whole oversized body before reading the answer, as most SDKs do: it must not be a reset. */
    static RawHttp.Response declaring(String method, String path, String auth) {
        String headers = (auth == null ? "" : "Authorization: Bearer " + auth + "\r\n")
                + "Content-Type: application/json\r\n";
        return RawHttp.send(RestAssured.port, RawHttp.request(method, path, headers.getBytes(StandardCharsets.US_ASCII),
                HUGE_BODY));
    }

    static JsonNode tooLarge(RawHttp.Response r, String what, long limit) {
        assertEquals(413, r.status(), what + ": " + r.body());
        JsonNode err = Envelope.assert4xx(r.status(), r.body(), what);
        assertEquals("request_too_large", err.path("code").asText(), what);
        assertTrue(err.path("message").asText().contains(Long.toString(limit)), what + ": " + r.body());
        assertEquals("close", r.headers().get("connection"), what);
        return err;
    }

    @Test
    void aBodyDeclaredOverTheServersLimitIs413InTheEnvelopeOnEveryPath() {
        // the gateway and /v1/capacity name their own limits, everything else the server's
        tooLarge(declaring("POST", "/v1/chat/completions", "k-acme"), "chat", 8L * 1024 * 1024);
        tooLarge(declaring("POST", "/models/kimi3/v1/chat/completions", "k-acme"), "path alias",
                8L * 1024 * 1024);
        tooLarge(declaring("POST", "/v1/capacity", "cap-alpha"), "capacity", 16 * 1024);
        tooLarge(declaring("POST", "/prober/run", AppTestResource.PROBER_TOKEN), "prober", 10L * 1024 * 1024);
        tooLarge(declaring("POST", "/v1/embeddings", "k-acme"), "embeddings", 8L * 1024 * 1024);
        tooLarge(declaring("POST", "/models/vectors/v1/embeddings", "k-acme"), "embeddings path alias",
                8L * 1024 * 1024);
        tooLarge(declaring("POST", "/v1/audio/speech", "k-acme"), "unknown path", 10L * 1024 * 1024);
        tooLarge(declaring("POST", "/admin/explain", "a-acme"), "explain", 10L * 1024 * 1024);
        tooLarge(declaring("PUT", "/admin/groups/duo", "a-acme"), "group edit", 10L * 1024 * 1024);
    }

    /**
     * A client that writes the whole body before it reads (Apache HttpClient here, most SDKs) gets the 413, not a
     * reset: the refused body is read and dropped before the connection closes.
     */
    @Test
    void aClientThatSendsTheWholeOversizedBodyFirstStillGetsThe413() {
        byte[] overGateway = java.util.Arrays.copyOf(HUGE_BODY, 9 * 1024 * 1024);
        for (Object[] c : new Object[][]{{"/v1/chat/completions", "k-acme", overGateway},
                {"/v1/embeddings", "k-acme", HUGE_BODY}, {"/admin/explain", "a-acme", HUGE_BODY}}) {
            io.restassured.response.Response r = given().auth().oauth2((String) c[1]).contentType("application/json")
                    .body((byte[]) c[2]).post((String) c[0]);
            assertEquals(413, r.statusCode(), c[0] + ": " + r.asString());
            assertEquals("request_too_large", r.jsonPath().getString("error.code"), (String) c[0]);
        }
    }

    @Test
    void theAdminApiJudgesTheKeyBeforeADeclaredOversizedBody() {
        RawHttp.Response none = declaring("POST", "/admin/members/pin", null);
        assertEquals(401, none.status(), none.body());
        assertEquals("invalid_api_key", Envelope.assert4xx(none.status(), none.body(), "no key").path("code")
                .asText());
        RawHttp.Response client = declaring("POST", "/admin/members/pin", "k-acme");
        assertEquals(403, client.status(), client.body());
        Envelope.assert4xx(client.status(), client.body(), "client key");
    }

    static io.restassured.response.Response adminSends(String method, String path, byte[] body) {
        return given().auth().oauth2("a-acme").contentType("application/json").body(body).request(method, path);
    }

    static void refused(io.restassured.response.Response r, String code, String what) {
        assertEquals(400, r.statusCode(), what + ": " + r.asString());
        assertEquals(code, Envelope.assert4xx(r.statusCode(), r.asString(), what).path("code").asText(), what);
    }

    /**
     * The admin API reads its bodies as strictly as the gateway: the framework's lenient mapper took the first JSON
     * document of {@code {"strategy":"weighted"} xx} and saved it.
     */
    @Test
    void anAdminEditThatIsNotOneWellFormedJsonDocumentIs400AndChangesNothing() {
        byte[] overlong = {'{', '"', 'r', 'o', 'u', 't', 'e', '"', ':', '"', 'd', 'u', 'o', '-', 'a', 'l', 'p', 'h', 'a',
                '"', ',', '"', 'x', '"', ':', '"', (byte) 0xC0, (byte) 0xAF, '"', '}'};
        try {
            refused(adminSends("PUT", "/admin/groups/duo", utf8("{\"strategy\":\"weighted\"} xx")), "invalid_json",
                    "data after the document");
            refused(adminSends("POST", "/admin/members/pin", utf8("{\"route\":\"duo-alpha\"}{\"route\":\"x\"}")),
                    "invalid_json", "two documents");
            refused(adminSends("POST", "/admin/members/drain", overlong), "invalid_utf8", "overlong UTF-8");
            refused(adminSends("PUT", "/admin/routes/standing",
                    utf8("{\"route\":\"duo-alpha\",\"standing\":\"suspended\",\"note\":\"\\ud83d\"}")),
                    "invalid_unicode", "lone surrogate");
            refused(adminSends("PUT", "/admin/routes/verification", utf8("{\"route\":\"duo-alpha\",\"verification\":"
                    + "\"fail:x\",\"deep\":" + "[".repeat(64) + "]".repeat(64) + "}")), "invalid_json", "depth 65");
            given().auth().oauth2("a-acme").get("/admin/groups/duo").then().statusCode(200)
                    .body("strategy", equalTo("rr_health"))
                    .body("members.pinned", equalTo(java.util.List.of(false, false)))
                    .body("members.drained", equalTo(java.util.List.of(false, false)));
            given().auth().oauth2("a-acme").get("/admin/health?alias=duo").then().statusCode(200)
                    .body("groups[0].members.standing", not(hasItem("suspended")))
                    .body("groups[0].members.verification", not(hasItem("fail:x")));
        } finally {
            // leave duo as the other tests expect it, whatever happened above
            adminSends("PUT", "/admin/groups/duo", utf8("{\"strategy\":\"rr_health\"}"));
            adminSends("POST", "/admin/members/unpin", utf8("{\"alias\":\"duo\"}"));
            adminSends("POST", "/admin/members/drain", utf8("{\"route\":\"duo-alpha\",\"drained\":false}"));
            adminSends("PUT", "/admin/routes/standing", utf8("{\"route\":\"duo-alpha\",\"standing\":\"good\"}"));
            adminSends("PUT", "/admin/routes/verification", utf8("{\"route\":\"duo-alpha\",\"verification\":\"pass\"}"));
        }
    }

    /**
     * The model a client names is its own text, and a refusal's audit event and log line carry it: the event keeps
     * 200 characters of it (and of the message quoting it), the log line quotes it, so neither a line break in it can
     * forge a log line nor megabytes of it fill the shared audit stream (found by review4).
     */
    @Test
    void aMadeUpModelNeitherForgesALogLineNorFillsTheAuditStream() throws Exception {
        String forged = "nope-" + java.util.UUID.randomUUID() + "\n2026-12-03 04:20:00,000 INFO  [dev.hed.request] "
                + "request forged org=acme status=200 ";
        String model = forged + "x".repeat(200_000);
        try (LogCapture capture = new LogCapture()) {
            given().auth().oauth2("k-acme").contentType("application/json")
                    .body(java.util.Map.of("model", model, "messages",
                            java.util.List.of(java.util.Map.of("role", "user", "content", "hi"))))
                    .post("/v1/chat/completions").then().statusCode(404)
                    .body("error.code", equalTo("model_not_found"));
            java.util.List<String> blocked = capture.lines().stream()
                    .filter(l -> l.contains("blocked org=acme") && l.contains("nope-")).toList();
            assertEquals(1, blocked.size(), capture.lines().toString());
            assertTrue(!blocked.get(0).contains("\n") && blocked.get(0).contains("alias=\"nope-")
                    && blocked.get(0).length() < 1000, blocked.get(0));
        }
        // the event is written after the answer (an audit write never delays a request)
        JsonNode event = null;
        for (int i = 0; i < 50 && event == null; i++, Thread.sleep(i == 1 ? 0 : 100)) {
            JsonNode events = dev.hedgerow.api.Json.parse(given().auth().oauth2("a-acme")
                    .get("/admin/audit?type=blocked&reason=model_not_found&limit=20").then().statusCode(200)
                    .extract().asString()).path("events");
            event = java.util.stream.StreamSupport.stream(events.spliterator(), false)
                    .filter(e -> e.path("alias").asText().startsWith(forged)).findFirst().orElse(null);
        }
        assertTrue(event != null, "the blocked event is stored");
        assertEquals(forged + "x".repeat(200 - forged.length()) + "\u2026", event.path("alias").asText());
        assertTrue(event.path("message").asText().length() <= 2001, event.path("message").asText().length() + " chars");
    }

    static byte[] utf8(String s) {
        return s.getBytes(StandardCharsets.UTF_8);
    }

    /** JAX-RS took the first of a repeated parameter: {@code ?alias=kimi3&alias=duo} answered for kimi3 alone. */
    @Test
    void anAdminQueryParameterGivenTwiceIs400NamingIt() {
        for (String[] c : new String[][]{{"/admin/usage?alias=kimi3&alias=duo", "alias"},
                {"/admin/usage?from=2026-01-01&to=2026-01-31&from=2026-02-01", "from"},
                {"/admin/audit?limit=1&limit=2", "limit"}, {"/admin/audit?type=blocked&type=request", "type"},
                {"/admin/health?alias=duo&alias=kimi3", "alias"}}) {
            io.restassured.response.Response r = given().auth().oauth2("a-acme").get(c[0]);
            refused(r, "invalid_request", c[0]);
            assertEquals(c[1], r.jsonPath().getString("error.param"), c[0]);
        }
        given().auth().oauth2("a-acme").get("/admin/usage?alias=kimi3").then().statusCode(200);
        given().auth().oauth2("a-acme").get("/admin/audit?limit=1&type=blocked").then().statusCode(200);
        given().auth().oauth2("a-acme").get("/admin/health?alias=duo").then().statusCode(200);
    }

    /** SmallRye served its read-only documents to any method, 200 to a DELETE. */
    @Test
    void theFrameworksReadOnlyDocumentsRefuseOtherMethodsWith405() {
        for (String path : new String[]{"/q/health", "/q/health/ready", "/q/metrics", "/admin/openapi", "/console/",
                "/console/console.js"}) {
            for (String method : new String[]{"POST", "PUT", "DELETE", "PATCH"}) {
                io.restassured.response.Response r = given().contentType("application/json").body("{}")
                        .request(method, path);
                assertEquals(405, r.statusCode(), method + " " + path + ": " + r.asString());
                assertEquals("method_not_allowed", Envelope.assertShape(r.asString(), method + " " + path)
                        .path("code").asText());
                assertEquals("GET, HEAD, OPTIONS", r.header("allow"), method + " " + path);
            }
            // /q/metrics is read with its token (MetricsAccessTest)
            given().auth().oauth2(AppTestResource.METRICS_TOKEN).get(path).then().statusCode(200);
        }
    }

    /**
     * The gateway's and prober's paths answered another method with a 405 that named neither the method they take
     * nor, in {@code Allow}, anything at all ("Method GET is not allowed here.").
     */
    @Test
    void theGatewayAndProberPathsSayWhichMethodTheyAnswer() {
        for (String[] c : new String[][]{{"GET", "/v1/chat/completions", "POST"},
                {"PUT", "/models/kimi3/v1/chat/completions", "POST"}, {"POST", "/v1/models", "GET"},
                {"DELETE", "/v1/capacity", "POST"}, {"GET", "/prober/run", "POST"}}) {
            io.restassured.response.Response r = given().auth().oauth2("k-acme").request(c[0], c[1]);
            assertEquals(405, r.statusCode(), c[0] + " " + c[1] + ": " + r.asString());
            JsonNode error = Envelope.assertShape(r.asString(), c[0] + " " + c[1]);
            assertEquals("method_not_allowed", error.path("code").asText());
            assertEquals(c[2] + (c[2].equals("GET") ? ", HEAD" : "") + ", OPTIONS", r.header("allow"),
                    c[0] + " " + c[1]);
            assertTrue(error.path("message").asText().endsWith(c[1] + " answers " + c[2] + "."), r.asString());
        }
    }

    /**
     * The admin API answered another method with a 405 without {@code Allow}, and a message that named no method
     * ("This method is not allowed on this admin path"). Each method the header names is one the path answers (not
     * a 405; a PUT or POST without a body is refused for its body instead). Edits use groups other tests do not
     * rely on ({@code panel}).
     */
    @Test
    void theAdminApiPathsSayWhichMethodsTheyAnswer() {
        for (String[] c : new String[][]{{"DELETE", "/admin/groups", "GET, HEAD"},
                {"POST", "/admin/whoami", "GET, HEAD"}, {"DELETE", "/admin/groups/panel", "GET, HEAD, PUT"},
                {"GET", "/admin/members/pin", "POST"}, {"PATCH", "/admin/routes/standing", "PUT"},
                {"PUT", "/admin/explain", "POST"}, {"POST", "/admin/usage", "GET, HEAD"}}) {
            io.restassured.response.Response r = given().auth().oauth2("a-acme").request(c[0], c[1]);
            assertEquals(405, r.statusCode(), c[0] + " " + c[1] + ": " + r.asString());
            JsonNode error = Envelope.assertShape(r.asString(), c[0] + " " + c[1]);
            assertEquals("method_not_allowed", error.path("code").asText());
            assertEquals(c[2] + (c[2].equals("GET") ? ", HEAD" : "") + ", OPTIONS", r.header("allow"),
                    c[0] + " " + c[1]);
            assertEquals("Method " + c[0] + " is not allowed here; " + c[1] + " answers " + c[2]
                    + "; see /admin/openapi.", error.path("message").asText());
            for (String allowed : c[2].split(", ")) {
                var req = given().auth().oauth2("a-acme");
                if (allowed.equals("PUT") || allowed.equals("POST")) {
                    req = req.contentType("application/json").body("{");
                }
                int status = req.request(allowed, c[1]).statusCode();
                assertTrue(status != 405 && status != 404, allowed + " " + c[1] + ": " + status);
            }
        }
    }

    /**
     * OPTIONS asks which methods a path answers (RFC 9110). The gateway's and prober's paths and the framework's
     * documents refused it with a 405, while the admin API answered Quarkus REST's 200 naming every method of its
     * resource on every path ({@code HEAD, POST, GET, OPTIONS, PUT} on /admin/whoami). Every path answers 204 with its
     * own {@code Allow} now, the admin API after the admin key, as anything else there.
     */
    @Test
    void optionsAnswers204WithThePathsOwnMethods() {
        String readOnly = "GET, HEAD, OPTIONS";
        for (String[] c : new String[][]{{"/v1/chat/completions", null, "POST, OPTIONS"},
                {"/models/kimi3/v1/chat/completions", "k-acme", "POST, OPTIONS"}, {"/v1/models", null, "GET, HEAD, OPTIONS"},
                {"/v1/capacity", null, "POST, OPTIONS"}, {"/prober/run", null, "POST, OPTIONS"},
                {"/q/health", null, readOnly}, {"/q/health/ready", null, readOnly}, {"/q/metrics", null, readOnly},
                {"/admin/openapi", null, readOnly}, {"/console/", null, readOnly},
                {"/admin/whoami", "a-acme", readOnly}, {"/admin/groups/duo", "a-acme", "GET, HEAD, PUT, OPTIONS"},
                {"/admin/members/pin", "a-acme", "POST, OPTIONS"}, {"/admin/routes/standing", "a-acme", "PUT, OPTIONS"}}) {
            io.restassured.response.Response r = (c[1] == null ? given() : given().auth().oauth2(c[1])).options(c[0]);
            assertEquals(204, r.statusCode(), c[0] + ": " + r.asString());
            assertEquals(c[2], r.header("allow"), c[0]);
            assertEquals("", r.asString(), c[0]);
        }
        given().options("/admin/whoami").then().statusCode(401).body("error.code", equalTo("invalid_api_key"));
        given().auth().oauth2("k-acme").options("/admin/whoami").then().statusCode(403)
                .body("error.code", equalTo("admin_key_required"));
        given().auth().oauth2("a-acme").options("/admin/nope").then().statusCode(404)
                .body("error.code", equalTo("not_found"));
        given().options("/v1/audio/speech").then().statusCode(404).body("error.code", equalTo("not_found"));
    }

    /** Explain answered 200 with a plan for requests the gateway refuses at its door. */
    @Test
    void explainRefusesWhatTheGatewayRefusesAtItsDoor() {
        String prompt = "a ".repeat(9 * 512 * 1024);
        byte[] big = utf8("{\"model\":\"kimi3\",\"messages\":[{\"role\":\"user\",\"content\":\"" + prompt + "\"}]}");
        for (String path : new String[]{"/admin/explain", "/v1/chat/completions"}) {
            io.restassured.response.Response r = given().auth().oauth2(path.startsWith("/admin") ? "a-acme" : "k-acme")
                    .contentType("application/json").body(big).post(path);
            assertEquals(413, r.statusCode(), path + ": " + r.asString().substring(0, Math.min(300, r.asString().length())));
            assertEquals("request_too_large", r.jsonPath().getString("error.code"), path);
            io.restassured.response.Response form = given().auth().oauth2(path.startsWith("/admin") ? "a-acme" : "k-acme")
                    .multiPart("model", "kimi3").post(path);
            assertEquals(415, form.statusCode(), path + ": " + form.asString());
            assertEquals("unsupported_media_type", form.jsonPath().getString("error.code"), path);
        }
    }

    /**
     * Vert.x refuses an HTTP/1.1 request without a valid Host header before any route runs; outside the gateway's
     * routes Quarkus' error page answered it ({"details":"Error id …"}) and logged an ERROR for each.
     */
    @Test
    void aRequestWithoutAValidHostHeaderIs400InTheEnvelopeOnEveryPath() {
        for (String path : new String[]{"/admin/groups", "/admin/nope", "/q/health", "/console/", "/admin/openapi",
                "/v1/embeddings", "/v1/models"}) {
            for (String host : new String[]{null, "a b", "x:99999"}) {
                String req = "GET " + path + " HTTP/1.1\r\nConnection: close\r\n"
                        + (host == null ? "" : "Host: " + host + "\r\n") + "Authorization: Bearer a-acme\r\n\r\n";
                RawHttp.Response r = RawHttp.send(RestAssured.port, req.getBytes(StandardCharsets.US_ASCII));
                String what = path + " with Host " + host;
                assertEquals(400, r.status(), what + ": " + r.body());
                JsonNode err = Envelope.assert4xx(r.status(), r.body(), what);
                assertTrue(err.path("message").asText().contains("Host"), what + ": " + r.body());
            }
        }
    }

    /**
     * {@code OPTIONS *} asks about the server, not a path: it answered 404 with "The request could not be read.", a
     * status and a message that disagreed (found by hunt13).
     */
    @Test
    void optionsOfTheWholeServerIsAnsweredInTheEnvelopeWithWordsThatFitItsStatus() {
        RawHttp.Response r = RawHttp.send(RestAssured.port, ("OPTIONS * HTTP/1.1\r\nHost: 127.0.0.1\r\n"
                + "Connection: close\r\n\r\n").getBytes(StandardCharsets.US_ASCII));
        JsonNode err = Envelope.assert4xx(r.status(), r.body(), "OPTIONS *");
        assertEquals(404, r.status(), r.body());
        assertEquals("not_found", err.path("code").asText(), r.body());
        assertTrue(err.path("message").asText().contains("OPTIONS *"), r.body());
    }

    static RawHttp.Response rawGet(String target, String auth) {
        String req = "GET " + target + " HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n"
                + (auth == null ? "" : "Authorization: Bearer " + auth + "\r\n") + "\r\n";
        return RawHttp.send(RestAssured.port, req.getBytes(StandardCharsets.US_ASCII));
    }

    /**
     * A request line over Quarkus' 4096 bytes got Vert.x's empty 414 before any route ran. The server now reads
     * lines up to 64 KiB, and Hedgerow refuses a URI over 8 KiB itself, in the envelope (after the admin key on
     * /admin); a URI between the two limits of old is served.
     */
    @Test
    void aRequestUriOverItsLimitIs414InTheEnvelope() {
        String query = "?q=" + "a".repeat(9000);
        for (String path : new String[]{"/v1/models", "/v1/chat/completions", "/q/health", "/console/", "/nope"}) {
            RawHttp.Response r = rawGet(path + query, "k-acme");
            assertEquals(414, r.status(), path + ": " + r.body());
            JsonNode err = Envelope.assert4xx(r.status(), r.body(), path);
            assertEquals("uri_too_long", err.path("code").asText(), path);
            assertTrue(err.path("message").asText().contains("8192"), path + ": " + r.body());
        }
        assertEquals(401, rawGet("/admin/groups" + query, null).status());
        assertEquals(403, rawGet("/admin/groups" + query, "k-acme").status());
        RawHttp.Response admin = rawGet("/admin/groups" + query, "a-acme");
        assertEquals("uri_too_long", Envelope.assert4xx(admin.status(), admin.body(), "admin").path("code").asText());
        RawHttp.Response served = rawGet("/v1/models?q=" + "a".repeat(6000), "k-acme");
        assertEquals(200, served.status(), served.body());
    }

    /** An unknown field was ignored by pin, unpin, drain, standing and verification: a typo changed state. */
    @Test
    void aMisspeltFieldOfAnAdminActionIs400AndChangesNothing() {
        try {
            for (String[] c : new String[][]{{"POST", "/admin/members/drain", "{\"route\":\"duo-alpha\",\"drianed\":false}",
                    "drianed"}, {"POST", "/admin/members/pin", "{\"route\":\"duo-alpha\",\"alias\":\"duo\"}", "alias"},
                    {"POST", "/admin/members/unpin", "{\"alias\":\"duo\",\"route\":\"duo-alpha\"}", "route"},
                    {"PUT", "/admin/routes/standing", "{\"route\":\"duo-alpha\",\"standing\":\"suspended\",\"x\":1}", "x"},
                    {"PUT", "/admin/routes/verification", "{\"route\":\"duo-alpha\",\"verification\":\"fail:x\","
                            + "\"reason\":\"y\"}", "reason"}}) {
                io.restassured.response.Response r = adminSends(c[0], c[1], utf8(c[2]));
                refused(r, "unknown_field", c[1]);
                assertEquals(c[3], r.jsonPath().getString("error.param"), c[1]);
            }
            given().auth().oauth2("a-acme").get("/admin/groups/duo").then().statusCode(200)
                    .body("members.drained", equalTo(java.util.List.of(false, false)))
                    .body("members.pinned", equalTo(java.util.List.of(false, false)));
            given().auth().oauth2("a-acme").get("/admin/health?alias=duo").then().statusCode(200)
                    .body("groups[0].members.standing", not(hasItem("suspended")))
                    .body("groups[0].members.verification", not(hasItem("fail:x")));
        } finally {
            adminSends("POST", "/admin/members/unpin", utf8("{\"alias\":\"duo\"}"));
            adminSends("POST", "/admin/members/drain", utf8("{\"route\":\"duo-alpha\",\"drained\":false}"));
            adminSends("PUT", "/admin/routes/standing", utf8("{\"route\":\"duo-alpha\",\"standing\":\"good\"}"));
            adminSends("PUT", "/admin/routes/verification", utf8("{\"route\":\"duo-alpha\",\"verification\":\"pass\"}"));
        }
    }
}
